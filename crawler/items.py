"""The item the ``site`` spider yields and the dedup pipelines fill in; what a user's item class cannot hold."""
from __future__ import annotations

from typing import Any

import scrapy

__all__ = ["PageItem", "TRANSIENT", "note", "notes_of"]

#: Field metadata: ``scrapy.Field(**{TRANSIENT: True})`` marks a field that only carries the page to
#: ``DedupPipeline``, which removes it once the page is parsed.
TRANSIENT = "dedup_transient"


class PageItem(scrapy.Item):
    """One fetched HTML page.

    ``url``         the response URL, exactly as fetched (query and ``;params`` kept).
    ``title``       the ``<title>`` text (set by ``DedupPipeline``).
    ``text``        the extracted main text (what dedup compares; set by ``DedupPipeline``).
    ``fetched_at``  when the response was parsed: Unix epoch seconds, a float (UTC by
                    definition; the dedup index stores the same number).
    ``dedup``       the verdict dict set by ``DedupPipeline`` (``Verdict.to_dict()``:
                    status, duplicate_of, rule, scores, thresholds, ...), or
                    ``{"status": "error", ...}`` when checking the page failed.
    ``html``, ``content_type``  transient: the raw body and its Content-Type header, handed
                    from the spider to ``DedupPipeline``, which parses them once, fills in
                    ``title`` and ``text`` and removes both; they are never exported.
    """

    url = scrapy.Field()
    title = scrapy.Field()
    text = scrapy.Field()
    fetched_at = scrapy.Field()
    dedup = scrapy.Field()
    html = scrapy.Field(**{TRANSIENT: True})
    content_type = scrapy.Field(**{TRANSIENT: True})


# -- what an item cannot hold ---------------------------------------------------------------------------
#: the notes of items whose class keeps no attribute of ours (``__slots__``): id -> (item, notes), oldest first;
#: an item dropped between the two pipelines by a user's pipeline leaves its entry, so the oldest go past this
_SLOTTED_LIMIT = 10_000
_slotted: dict[int, tuple[Any, dict[str, Any]]] = {}
_NOTES = "_dedup_notes"


def note(item: Any, name: str, value: Any) -> None:
    """Keep ``value`` as the item's field ``name`` where its class declares no such field (a ``scrapy.Item``
    or a dataclass without ``dedup``, ``title`` or ``text``), for :func:`notes_of`: ``IndexPipeline`` stores
    the verdict, title and text in the search index from them all the same. Exported items carry only their
    own fields."""
    try:
        held = getattr(item, _NOTES, None)
        if held is None:
            held = {}
            object.__setattr__(item, _NOTES, held)
        held[name] = value
        return
    except (AttributeError, TypeError):  # __slots__: kept beside the item
        pass
    entry = _slotted.get(id(item))
    if entry is None or entry[0] is not item:
        entry = _slotted[id(item)] = (item, {})
        while len(_slotted) > _SLOTTED_LIMIT:
            del _slotted[next(iter(_slotted))]
    entry[1][name] = value


def notes_of(item: Any) -> dict[str, Any]:
    """What :func:`note` kept for ``item`` (empty when nothing), forgotten once read."""
    held = getattr(item, _NOTES, None)
    if isinstance(held, dict):
        try:
            object.__delattr__(item, _NOTES)
        except (AttributeError, TypeError):
            pass
        return held
    entry = _slotted.get(id(item))
    if entry is not None and entry[0] is item:
        del _slotted[id(item)]
        return entry[1]
    return {}
