"""The item the ``site`` spider yields and the dedup pipelines fill in."""
from __future__ import annotations

import scrapy

__all__ = ["PageItem", "TRANSIENT"]

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
