"""``NAME``: the search index of kept pages in Elasticsearch.

One document per URL (``_id`` = the URL, or ``u:<xxh3-128 of the URL>`` when it is longer
than Elasticsearch's 512-byte id limit): ``url`` keyword, ``title`` and ``text`` as text
analysed with case and accent folding and Porter stemming, ``fetched_at`` double (epoch
seconds), ``dedup`` (the verdict: ``status``, ``duplicate_of``, ``rule``, ``algorithm``,
``reference`` keyword, ``kept`` boolean, ``candidates`` integer; ``scores`` and
``thresholds`` stored, not indexed), and any other field of the document, mapped dynamically.

Writes are buffered and sent with the bulk API every ``bulk_size`` documents and on
:meth:`~ElasticSearch.flush`/:meth:`~ElasticSearch.close`; :attr:`~ElasticSearch.buffered` counts those
waiting, which a killed process loses (the shared crawl frontier, ``crawler.frontier``, releases a
request only once its document is sent).  Per-item failures are not lost in the bulk answer: an
item refused with 429/503 is resent with back-off within the retry budget, any other refusal
raises :class:`BulkIndexError` naming each URL, its HTTP status and reason.

Queries: user text is never Elasticsearch syntax.  Words (``\\w+``) become one ``multi_match``
(``cross_fields``: each word in ``title^4`` or ``text``; where the two fields have different analyzers, as a
reindexed corpus's title and extracted text, all words in one of them), a word with a trailing ``*`` a
(stemmed) prefix clause, all words required; when that finds nothing, any word may match.  ``snippet`` is
the best highlighted fragment of the text with ``[``/``]`` around hits, as the local index gives.  On a
reindexed corpus whose text comes from its HTML field, the main text the reindex extracted
(``dedup.text``) is searched, and an older destination's HTML field through ``html_strip``; either way the
snippet is cut from the page's main text (:func:`text_snippet`), with the words Elasticsearch matched and
the query's words marked.

A destination written by ``dedup reindex`` keeps the source's documents under their own ``_id``
and field names; its mapping's ``_meta.dedup_reindex`` names the URL, text, HTML and title fields.
On such an index, :meth:`~ElasticSearch.get` finds a URL through its URL field, searches cover
its text (or HTML) and title fields, and documents read are given ``url``, ``title`` and ``text``
(extracted from the HTML field when that is where the text is) for the inspection tools.
"""
from __future__ import annotations

import logging
import re
import time
import unicodedata
from typing import Any, Iterator

import xxhash

from ..base import verdict_of
from .connect import RETRY_STATUSES, IndexUnavailable, Retrying, check_index_name, create_index

__all__ = ["ElasticSearch", "BulkIndexError", "SEARCH_MAPPING", "url_id", "pit_pages", "scan", "field_value"]

log = logging.getLogger(__name__)

MAX_TERMS = 32
_WORD = re.compile(r"(\w+)(\*?)")

SEARCH_SETTINGS: dict[str, Any] = {
    "analysis": {"analyzer": {"folded": {"type": "custom", "tokenizer": "standard",
                                         "filter": ["lowercase", "asciifolding", "porter_stem"]}}},
}
DEDUP_MAPPING: dict[str, Any] = {
    "type": "object", "dynamic": False,
    "properties": {
        "status": {"type": "keyword"}, "duplicate_of": {"type": "keyword"}, "rule": {"type": "keyword"},
        "algorithm": {"type": "keyword"}, "reference": {"type": "keyword"}, "kept": {"type": "boolean"},
        "candidates": {"type": "integer"},
        "scores": {"type": "object", "enabled": False}, "thresholds": {"type": "object", "enabled": False},
    },
}
SEARCH_MAPPING: dict[str, Any] = {
    "properties": {
        "url": {"type": "keyword"},
        "title": {"type": "text", "analyzer": "folded"},
        "text": {"type": "text", "analyzer": "folded"},
        "fetched_at": {"type": "double"},
        "dedup": DEDUP_MAPPING,
    },
}


class BulkIndexError(RuntimeError):
    """Some documents of a bulk write were refused; ``failures`` is ``[(url, status, reason)]``."""

    def __init__(self, index: str, failures: list[tuple[str, int, str]],
                 docs: list[dict[str, Any]] | None = None) -> None:
        shown = "; ".join(f"{u} ({s}: {r})" for u, s, r in failures[:5])
        more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
        super().__init__(f"Elasticsearch index {index} refused {len(failures)} document(s): {shown}{more}")
        self.failures = failures
        self.docs = docs or []  # the refused documents, for the caller to keep


def field_value(source: dict[str, Any], name: str | None) -> Any:
    """The value at the dotted path ``name`` of a document, or None."""
    value: Any = source
    for part in (name or "").split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _string(value: Any) -> str | None:
    """A field's value as a string: a string as it is, an array of strings joined by new lines, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return None


def url_id(url: str) -> str:
    """The ``_id`` of the document of ``url``."""
    return url if len(url.encode("utf-8")) <= 512 else "u:" + xxhash.xxh3_128_hexdigest(url.encode("utf-8"))


def pit_pages(es: Retrying, index: str, what: str = "read documents", *, size: int = 1000,
              sort: list[Any] | None = None, search_after: list[Any] | None = None, keep_alive: str = "5m",
              **body: Any) -> Iterator[list[dict[str, Any]]]:
    """Pages of hits of ``index`` in ``sort`` order (by default ``_shard_doc``, the cheapest complete
    order), read through a point in time with ``search_after`` (starting after ``search_after`` when
    given), the point in time closed at the end; ``body``: the rest of the search (``query``,
    ``_source``)."""
    c = es.client
    pit = es.call("open a point in time", c.open_point_in_time, index=index, keep_alive=keep_alive)["id"]
    after = search_after
    try:
        while True:
            request: dict[str, Any] = {"pit": {"id": pit, "keep_alive": keep_alive}, "size": size,
                                       "sort": sort or [{"_shard_doc": "asc"}], "track_total_hits": False, **body}
            if after is not None:
                request["search_after"] = after
            got = es.call(what, c.search, **request)
            pit = got.get("pit_id", pit)
            hits = got["hits"]["hits"]
            if hits:
                yield hits
            if len(hits) < size:
                return
            after = hits[-1]["sort"]
    finally:
        try:
            c.close_point_in_time(id=pit)
        except Exception:  # the point in time expires by itself; never mask the real error
            log.debug("could not close point in time on %s", index, exc_info=True)


def scan(es: Retrying, index: str, *, query: dict[str, Any] | None = None, sort: list[Any] | None = None,
         size: int = 500, search_after: list[Any] | None = None, keep_alive: str = "5m",
         source: Any = True) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    """``(hit, sort values)`` of every document of ``index`` in ``sort`` order (:func:`pit_pages`)."""
    for hits in pit_pages(es, index, size=size, sort=sort, search_after=search_after, keep_alive=keep_alive,
                          query=query or {"match_all": {}}, source=source):
        for hit in hits:
            yield hit, hit["sort"]


def _fold(word: str) -> str:
    """A word as the search analyzers compare it: case and accents folded."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)).casefold()


def text_snippet(text: str, words: set[str], prefixes: set[str], chars: int = 120,
                 highlight: tuple[str, str] = ("[", "]")) -> str:
    """About ``chars`` characters of ``text`` around the densest run of its words in ``words`` (or
    starting with one of ``prefixes``; both compared folded), those words marked with ``highlight``
    and ``…`` where the text is cut; the text's start when no word is in it."""
    words = {_fold(w) for w in words}
    prefixes = {_fold(p) for p in prefixes if p}
    tokens = [m.span() for m in re.finditer(r"\w+", text)]
    hits = [i for i, (s, e) in enumerate(tokens)
            if _fold(text[s:e]) in words or any(_fold(text[s:e]).startswith(p) for p in prefixes)]
    lead = chars // 4
    if hits:  # the window holding the most distinct matched words, then the most matches, earliest first
        def score(i: int) -> tuple[int, int]:
            lo, hi = tokens[i][0] - lead, tokens[i][0] - lead + chars
            inside = [j for j in hits if tokens[j][0] >= lo and tokens[j][1] <= hi]
            return len({_fold(text[slice(*tokens[j])]) for j in inside}), len(inside)

        first = max(hits, key=lambda i: (score(i), -i))
        start = max(0, tokens[first][0] - lead)
    else:
        start = 0
    end = min(len(text), start + chars)
    if start > 0:  # whole words only
        start = next((s for s, _ in tokens if s >= start), start)
    if end < len(text):
        end = max((e for _, e in tokens if e <= end), default=end)
    pre, post = highlight
    out, at = [], start
    for i in hits:
        s, e = tokens[i]
        if s >= start and e <= end:
            out += [text[at:s], pre, text[s:e], post]
            at = e
    out.append(text[at:end])
    body = " ".join("".join(out).split())
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")


class ElasticSearch:
    """A :class:`~index.base.SearchIndex` in the Elasticsearch index ``name`` (module docstring)."""

    def __init__(self, es: Retrying, name: str, *, bulk_size: int = 100, create: bool = True,
                 shards: int = 1, replicas: int | None = None, readonly: bool = False,
                 snippet_chars: int = 120, highlight: tuple[str, str] = ("[", "]")) -> None:
        self.es = es
        self.name = check_index_name(name)
        if bulk_size < 1:
            raise ValueError(f"bulk_size must be >= 1 (got {bulk_size})")
        self.bulk_size = bulk_size
        self.snippet_chars = snippet_chars
        self.highlight = highlight
        self.readonly = readonly
        self._buffer: dict[str, dict[str, Any]] = {}
        c = es.client
        exists = es.call("check the index", c.indices.exists, index=self.name)
        if not exists and readonly:
            raise FileNotFoundError(f"no Elasticsearch index {self.name} at {es.url}")
        if not exists and create:
            create_index(es, self.name, SEARCH_MAPPING, shards=shards, replicas=replicas, settings=SEARCH_SETTINGS)
        self.fields = self._reindex_fields() if exists else None

    def _reindex_fields(self) -> dict[str, str | None] | None:
        """The field names a reindex destination keeps its URL, text, HTML and title in, or None."""
        got = self.es.call("read the mapping", self.es.client.indices.get_mapping, index=self.name)
        marker = (next(iter(got.values()))["mappings"].get("_meta") or {}).get("dedup_reindex")
        if not isinstance(marker, dict):
            return None
        fields = {k: marker.get(f"{k}_field") for k in ("url", "text", "html", "title")}
        fields["url_key"] = marker.get("url_key") or fields["url"]
        # the main text the reindex extracted from the HTML (a destination of an older version has none)
        fields["extracted"] = marker.get("extracted_text_field")
        return fields

    def _view(self, source: dict[str, Any]) -> dict[str, Any]:
        """A reindexed document with ``url``, ``title`` and ``text`` as the tools read them: strings, whatever
        the source held (an array of strings is read as its strings joined by new lines, as Elasticsearch
        indexes them; a number, an object or an HTML that is no string as nothing: the reindex kept such a
        document with status ``error``, and every tool must still read the others)."""
        if not self.fields:
            return source
        f = self.fields
        doc = dict(source)
        doc.setdefault("url", field_value(source, f["url"]))
        if f["title"]:
            doc.setdefault("title", _string(field_value(source, f["title"])))
        if "text" not in doc or f["text"] != "text":
            text = _string(field_value(source, f["text"])) if f["text"] else None
            if text is None and f.get("extracted"):
                text = _string(field_value(source, f["extracted"]))
            html = _string(field_value(source, f["html"])) if f["html"] else None
            if text is None and html:
                from dedup.page import parse_page

                page = parse_page(html, str(doc.get("url") or ""))
                text = page.text
                doc.setdefault("title", page.title)
            doc["text"] = text or ""
        return doc

    def _find_id(self, url: str) -> tuple[str, dict[str, Any]] | None:
        """``(_id, _source)`` of the reindexed document whose URL field holds ``url``."""
        got = self.es.call("find a document", self.es.client.search, index=self.name, size=1,
                           query={"term": {self.fields["url_key"]: url}})
        hits = got["hits"]["hits"]
        return (hits[0]["_id"], hits[0]["_source"]) if hits else None

    # -- writes -----------------------------------------------------------------------------------
    def add(self, doc: dict[str, Any], *, doc_id: str | None = None) -> None:
        """Buffer ``doc`` (replacing any with the same url, or with ``doc_id`` when given); sent at
        ``bulk_size`` docs or :meth:`flush`."""
        # a reindexed document put back under its _id needs no url field (its source may have had none)
        dedup = verdict_of(doc if doc_id is None else {**doc, "url": doc.get("url") or doc_id})
        extracted = (self.fields or {}).get("extracted")
        if extracted and field_value(doc, extracted) is None:
            # a document put back (dedup dropped restore: the source's fields and a verdict): its main text
            # is extracted here, so that searches find it as they find the others
            dedup = {**dedup, extracted.split(".", 1)[1]: self._view(doc).get("text") or ""}
        self._buffer[doc_id or url_id(str(doc["url"]))] = {**doc, "dedup": dedup}
        if len(self._buffer) >= self.bulk_size:
            self.flush()

    @property
    def buffered(self) -> int:
        """Documents added and not sent yet: a crash (SIGKILL) of this process loses them."""
        return len(self._buffer)

    def flush(self) -> None:
        """Send the buffered documents and refresh; raises :class:`BulkIndexError` for refused ones
        (the others are stored) and :class:`IndexUnavailable` when the cluster stays away."""
        if self._buffer:
            docs, self._buffer = self._buffer, {}
            self._send(docs)
        self.es.call("refresh the index", self.es.client.indices.refresh, index=self.name)

    def _send(self, docs: dict[str, dict[str, Any]]) -> None:
        todo = dict(docs)
        start, delay = time.monotonic(), self.es.first_delay
        while True:
            ops: list[dict[str, Any]] = []
            for key, doc in todo.items():
                ops += [{"index": {"_index": self.name, "_id": key}}, doc]
            try:
                got = self.es.call("write documents", self.es.client.bulk, operations=ops)
            except IndexUnavailable as exc:
                exc.docs = list(todo.values())  # type: ignore[attr-defined]  # not stored: the caller keeps them
                raise
            retry: dict[str, dict[str, Any]] = {}
            failed: list[tuple[str, int, str]] = []
            refused: list[dict[str, Any]] = []
            if got.get("errors"):
                for (key, doc), item in zip(todo.items(), got["items"]):
                    result = next(iter(item.values()))
                    status = int(result.get("status", 500))
                    if status < 300:
                        continue
                    if status in RETRY_STATUSES:
                        retry[key] = doc
                    else:
                        err = result.get("error") or {}
                        failed.append((str(doc.get("url") or key), status,
                                       f"{err.get('type', '')}: {err.get('reason', '')}"[:300]))
                        refused.append(doc)
            if failed:
                raise BulkIndexError(self.name, failed, refused)
            if not retry:
                return
            if time.monotonic() - start + delay > self.es.retry_seconds:
                exc = IndexUnavailable(f"Elasticsearch index {self.name} kept refusing {len(retry)} document(s) "
                                       f"for {time.monotonic() - start:.1f} s: {', '.join(list(retry)[:5])}")
                exc.docs = list(retry.values())  # type: ignore[attr-defined]
                raise exc
            log.warning("Elasticsearch index %s asked to retry %d document(s) later", self.name, len(retry))
            time.sleep(delay)
            delay = min(delay * 2, self.es.max_delay)
            todo = retry

    def remove(self, url: str) -> bool:
        key = url_id(url)
        if self.fields and key not in self._buffer:
            found = self._find_id(url)
            key = found[0] if found else key
        buffered = self._buffer.pop(key, None) is not None
        got = self.es.call("remove a document", self.es.client.options(ignore_status=404).delete,
                           index=self.name, id=key, refresh=True)
        return got.get("result") == "deleted" or buffered

    # -- reads --------------------------------------------------------------------------------------
    def get(self, url: str) -> dict[str, Any] | None:
        key = url_id(url)
        if key in self._buffer:
            return dict(self._buffer[key])
        got = self.es.call("read a document", self.es.client.options(ignore_status=404).get,
                           index=self.name, id=key)
        if got.get("found"):
            return self._view(got["_source"])
        if self.fields:  # a reindexed document keeps its source _id
            found = self._find_id(url)
            return self._view(found[1]) if found else None
        return None

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Best matches first: stored documents plus ``snippet``, ``status``, ``duplicate_of``, ``score``."""
        words = _WORD.findall(query)[:MAX_TERMS]
        if limit <= 0 or not words:
            return []
        self._flush_buffer()
        # a prefix word is analysed (stemmed) like the text, then matched as a prefix: "ferry*"
        # finds "ferries", whose indexed stem is "ferri"
        title, texts = self._search_fields()
        fields = [f"{title}^4", *texts]
        plain = " ".join(w for w, star in words if not star)
        prefixes = [{"multi_match": {"query": w, "fields": fields, "type": "phrase_prefix"}} for w, star in words if star]

        def clauses(operator: str) -> list[dict[str, Any]]:
            # the plain words in one clause (each in the title or the text: cross_fields), not one clause a
            # word: noida-db reads every document for each clause (a four-word search of 793 pages: 1.7 s, 4.3 s)
            return ([{"multi_match": {"query": plain, "fields": fields, "type": "cross_fields", "operator": operator}}]
                    if plain else []) + prefixes

        hits = self._run({"bool": {"must": clauses("and")}}, limit, words)
        if not hits and len(words) > 1:
            hits = self._run({"bool": {"should": clauses("or"), "minimum_should_match": 1}}, limit, words)
        return hits

    def _search_fields(self) -> tuple[str, list[str]]:
        """``(title field, text fields)`` searched: a reindexed corpus's own, else title and text. A corpus of
        both a text field and an HTML field (documents holding one or the other) is searched in both: the
        HTML's extracted text where the reindex kept it, else the HTML as its mapping indexes it."""
        f = self.fields or {}
        texts = [t for t in dict.fromkeys((f.get("text"), f.get("extracted") or f.get("html"))) if t]
        return f.get("title") or "title", texts or ["text"]

    def _run(self, query: dict[str, Any], limit: int, words: list[tuple[str, str]]) -> list[dict[str, Any]]:
        pre, post = self.highlight
        texts = self._search_fields()[1]
        got = self.es.call("search", self.es.client.search, index=self.name, query=query, size=int(limit),
                           highlight={"fields": {t: {"fragment_size": self.snippet_chars, "number_of_fragments": 1}
                                                 for t in texts},
                                      "pre_tags": [pre], "post_tags": [post]})
        out = []
        # the snippet is cut from the page's main text as _view reads it (the HTML's highlight would be
        # markup; the extracted text's, lines of a page whose window text_snippet chooses as for HTML)
        htmls = {(self.fields or {}).get("html"), (self.fields or {}).get("extracted")} - {None} if self.fields else set()
        marked = re.compile(re.escape(pre) + r"(.*?)" + re.escape(post), re.S)
        for h in got["hits"]["hits"]:
            doc = self._view(dict(h["_source"]))
            dedup = doc.get("dedup") or {}
            lit = h.get("highlight") or {}
            text = next((t for t in texts if lit.get(t)), texts[0])
            fragments = lit.get(text) or []
            if text in htmls:  # the highlight is a piece of markup: show the extracted text (module docstring)
                found = {w for f in fragments for m in marked.findall(f) for w in re.findall(r"\w+", m)}
                snippet = text_snippet(doc.get("text") or "", found | {w for w, star in words if not star},
                                       {w for w, star in words if star}, self.snippet_chars, self.highlight)
            else:
                snippet = fragments[0] if fragments else (doc.get("text") or "")[: self.snippet_chars]
            doc.update(snippet=snippet, status=dedup.get("status"), duplicate_of=dedup.get("duplicate_of"),
                       score=float(h["_score"] or 0.0))
            out.append(doc)
        return out

    def count(self) -> int:
        self._flush_buffer()
        self.es.call("refresh the index", self.es.client.indices.refresh, index=self.name)
        return int(self.es.call("count documents", self.es.client.count, index=self.name)["count"])

    def __len__(self) -> int:
        return self.count()

    def iter_docs(self, batch: int = 500) -> Iterator[dict[str, Any]]:
        """Every document, by url."""
        self._flush_buffer()
        url = (self.fields or {}).get("url_key") or "url"
        for hit, _ in scan(self.es, self.name, sort=[{url: "asc"}], size=batch):
            yield self._view(hit["_source"])

    def _flush_buffer(self) -> None:
        if self._buffer:
            self.flush()

    def close(self) -> None:
        if self.es is None:
            return
        try:
            if not self.readonly:
                self.flush()
        finally:
            self.es.close()
            self.es = None  # type: ignore[assignment]

    def __enter__(self) -> "ElasticSearch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
