"""One path from any source of a page to the :class:`~dedup.page.Page` the decision uses.

A page reaches the filter as one of:

* a fetched response: its body (bytes), ``Content-Type`` and URL (:meth:`Source.from_response`);
* an item of any Scrapy project: raw HTML in a field, or ``title``/``text`` (:meth:`Source.from_item`);
* an indexed document, whose fields are named by the caller (:meth:`Source.from_document`);
* a dropped-log line: title, text and the page's tagged fields (:meth:`Source.from_logged`).

Each becomes a :class:`Source`, a small picklable value (no parsed tree, no Scrapy object), and
:func:`page_from_source` turns any Source into a Page with the same input limits
(``max_page_bytes``, ``max_text_chars`` of :class:`~dedup.deduplicator.DedupConfig`) wherever it
is called. :func:`features_from_source` adds the features, in one call a worker process can run.

HTML is parsed once, by :func:`dedup.page.parse_page`. A page known by its title and text is
completed with the tagged fields it was logged with (:func:`page_fields`), so a restored page
gets the same features as the crawled one.

This module imports neither scrapy nor elasticsearch: sources are read through duck types.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

import xxhash

from .extract import DEFAULT_EXTRACTOR
from .features import Featurizer
from .page import MAX_PAGE_BYTES, MAX_TEXT_CHARS, Page, limit_text, parse_page, text_page
from .workers import this_process

__all__ = ["Source", "page_from_source", "features_from_source", "prepare", "featurizer_for", "make_featurizer",
           "LazyFeaturizer", "page_fields", "field_value", "PAGE_FIELDS", "body_key"]

#: Page fields a dropped-log line keeps beside ``title`` and ``text``: what a Page parsed from HTML has
#: and a title/text page lacks. ``url_tokens`` and ``sentences`` are left out: both are derived again
#: from the URL and the text, as parse_page derives them.
PAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Page)
                    if f.name not in ("url", "title", "text", "sentences", "url_tokens"))


@dataclass(frozen=True)
class Source:
    """What a page is made from: raw ``html`` (with its ``content_type``), else ``title`` and
    ``text`` (with the tagged ``fields`` of :func:`page_fields`, when known). ``origin`` names
    where a title/text page came from (``Page.extraction``: ``item``, ``field``, ``log``)."""

    url: str
    html: bytes | str | None = None
    content_type: str | None = None
    title: str | None = None
    text: str | None = None
    fields: Mapping[str, Any] | None = None
    origin: str = "item"

    @classmethod
    def from_response(cls, response: Any) -> "Source":
        """A fetched response: anything with ``url``, ``body`` and ``headers.get(name)`` (a Scrapy Response)."""
        content_type = response.headers.get("Content-Type")
        if isinstance(content_type, bytes):
            content_type = content_type.decode("latin-1")
        return cls(url=str(response.url), html=response.body, content_type=content_type)

    @classmethod
    def from_item(cls, item: Mapping[str, Any], html_field: str = "html") -> "Source":
        """An item (any mapping, e.g. an ItemAdapter): raw HTML in ``html_field`` (with an optional
        ``content_type`` field), else its ``title`` and ``text``."""
        content_type = item.get("content_type")
        if not (isinstance(content_type, str) and "/" in content_type):  # a field of another meaning
            content_type = None
        # an empty HTML field is kept as it is: page_from_source makes the page of the title or text
        # beside it, or, with nothing else, parses it as the empty page it is (extraction "empty")
        return cls(url=str(item.get("url") or ""), html=item.get(html_field), content_type=content_type,
                   title=item.get("title"), text=item.get("text"))

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], url: str, *, html_field: str | None = None,
                      text_field: str | None = "text", title_field: str | None = "title") -> "Source":
        """An indexed document whose HTML, main-text and title fields are named (dotted paths such as
        ``page.body`` reach into objects); the HTML wins when the document has some."""
        html = field_value(doc, html_field) if html_field else None
        return cls(url=url, html=html or None,
                   title=field_value(doc, title_field) if title_field else None,
                   text=field_value(doc, text_field) if text_field else None, origin="field")

    @classmethod
    def from_logged(cls, item: Mapping[str, Any], page: Mapping[str, Any] | None = None) -> "Source":
        """A dropped-log line's ``item`` (url, title, text) and ``page`` (its tagged fields)."""
        return cls(url=str(item.get("url") or ""), title=item.get("title"), text=item.get("text"),
                   fields=page or None, origin="log")

    @property
    def body_key(self) -> str:
        """A 64-bit hash (16 hex digits) of what the page is made from, before any parsing: its HTML's
        bytes (a str as UTF-8), else its title and text. The same body fetched again has the same key,
        so an unchanged page is known without parsing it (:meth:`dedup.deduplicator.Deduplicator.known`)."""
        return body_key(self.body())

    def body(self) -> bytes:
        """The bytes :attr:`body_key` hashes (a str HTML encoded as UTF-8: ~0.1 ms for 65 KB of non-ASCII
        text, so a caller hashing the HTML again reuses them, as a reindex's source key does)."""
        html = self.html
        if isinstance(html, (str, bytes, bytearray, memoryview)) and (html or not (self.title or self.text)):
            return html.encode("utf-8", "surrogatepass") if isinstance(html, str) else bytes(html)
        # a title/text page (or HTML of a wrong type, which page_from_source refuses)
        return f"{self.title or ''}\0{self.text or ''}".encode("utf-8", "surrogatepass")

    @property
    def has_content(self) -> bool:
        """Whether there is anything to make a page of (HTML, a title or a text)."""
        return bool(self.html or self.title or self.text)


def body_key(body: bytes) -> str:
    """:attr:`Source.body_key` of a source whose :meth:`Source.body` is ``body``."""
    return xxhash.xxh3_64_hexdigest(body)


def page_from_source(source: Source, limits: Any = None) -> Page:
    """The :class:`~dedup.page.Page` of ``source``, cut to the input limits of ``limits`` (any object
    with ``max_page_bytes`` and ``max_text_chars``, e.g. a DedupConfig; None: the defaults, 5 MB and
    200,000 characters). HTML is parsed (:func:`~dedup.page.parse_page`) with the ``extractor`` of
    ``limits`` (the default one when it has none); otherwise the page is made
    of the title, the text and the logged tagged fields. Raises TypeError for HTML that is neither
    bytes nor str."""
    max_bytes = getattr(limits, "max_page_bytes", MAX_PAGE_BYTES)
    max_chars = getattr(limits, "max_text_chars", MAX_TEXT_CHARS)
    extractor = getattr(limits, "extractor", DEFAULT_EXTRACTOR)
    html = source.html
    # HTML, when there is some; an empty HTML field too, when nothing else is there (an empty page)
    if html is not None and (html or not (source.title or source.text)):
        if isinstance(html, (bytearray, memoryview)):
            html = bytes(html)
        if not isinstance(html, (bytes, str)):
            raise TypeError(f"HTML of {source.url} must be bytes or str, got {type(html).__name__}")
        return parse_page(html, source.url, content_type=source.content_type, max_bytes=max_bytes,
                          max_text_chars=max_chars, extractor=extractor)
    page = text_page(source.url, source.title, source.text, source.origin)
    for name, value in (source.fields or {}).items():
        if name in PAGE_FIELDS and value is not None:
            setattr(page, name, _field(name, value))
    return limit_text(page, max_chars)


def _field(name: str, value: Any) -> Any:
    if name == "headings":  # JSON has no tuples
        return [(int(level), str(text)) for level, text in value]
    if name == "truncated":
        return dict(value)
    return value


def page_fields(page: Page) -> dict[str, Any]:
    """The tagged fields of ``page`` that its title and text do not give back (:data:`PAGE_FIELDS`),
    empty ones left out: what a dropped-log line keeps so a restore rebuilds the same page."""
    out = {}
    for name in PAGE_FIELDS:
        value = getattr(page, name)
        if value:
            out[name] = [list(h) for h in value] if name == "headings" else value
    return out


def field_value(doc: Mapping[str, Any], name: str) -> Any:
    """The value at the dotted path ``name`` of ``doc`` (``a.b``: ``doc["a"]["b"]``), or None."""
    value: Any = doc
    for part in name.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# -- features, where a worker process can compute them --------------------------------------------
def make_featurizer(config: Any) -> Featurizer:
    """A new :class:`~dedup.features.Featurizer` with ``config``'s settings (``weights``, ``shingle``,
    ``sketch``): it loads the normaliser's word tables and the reference text (~0.3 s, ~180 MB)."""
    return Featurizer(weights=config.weights, shingle=config.shingle, sketch=config.sketch)


def features_from_source(source: Source, config: Any) -> tuple[Page, Any]:
    """``(page, features)`` of ``source`` with the limits and the featurizer settings (``weights``,
    ``shingle``, ``sketch``) of ``config`` (a DedupConfig): a plain function of picklable values, so a
    process pool can run it and hand both back to the one process that decides
    (:meth:`~dedup.deduplicator.Deduplicator.process` with ``features=``)."""
    page = page_from_source(source, config)
    return page, featurizer_for(config)(page)


def prepare(config: Any) -> None:
    """Load what :func:`features_from_source` needs for ``config`` (a worker's warm-up: the first page
    does not wait for it)."""
    featurizer_for(config)


class LazyFeaturizer:
    """Makes its featurizer (:func:`make_featurizer`) on first use and keeps it: for a process whose
    features are computed elsewhere (worker processes) and that needs its own featurizer only as a
    fallback; a Featurizer holds ~180 MB of word tables."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self._featurizer: Featurizer | None = None

    def __call__(self, page: Page) -> Any:
        if self._featurizer is None:
            self._featurizer = make_featurizer(self.config)
        return self._featurizer(page)


def featurizer_for(config: Any) -> Featurizer:
    """The :class:`~dedup.features.Featurizer` of ``config``'s settings, made once per process: what
    :func:`features_from_source` uses, a module-level function a worker pool runs, which has no object to
    keep it on: the worker process keeps it (:data:`dedup.workers.this_process`). A process with an object
    to keep one on (LazyFeaturizer, a Deduplicator, a restore) keeps it there instead."""
    weights = config.weights
    key = (repr(sorted(weights.items())) if isinstance(weights, Mapping) else weights, config.shingle, config.sketch)
    return this_process.get(("featurizer", key), lambda: make_featurizer(config))
