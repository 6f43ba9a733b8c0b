"""The decision: is this page a copy of one already kept, and of which?

Order of tests (first that fires wins):

1. ``content_hash`` — same normalised main text as a kept page: ``exact_duplicate``.
2. ``title_anchor`` — seed 004: same normalised title and anchor count. Alone it
   merges distinct pages sharing a template title (search and tag pages), so by
   default (``title_anchor="confirm"``) it fires only when the shingle resemblance
   (Jaccard) with that page is >= t1, and then gives ``duplicate`` (kept and flagged),
   never a drop: only the content hash drops. ``"literal"`` applies seed 004 as written
   (``exact_duplicate`` on the title and anchor count alone, opt-in), ``"off"`` skips it.
3. candidates — pages whose TDW simhash is within k bits (bit-permutation tables)
   plus the ``knn`` nearest multireference-cosine signatures, plus up to ``contained``
   pages sharing ``contained_shared`` of their smallest sketch keys with the page (a short
   page contained in a longer one, or the reverse: :meth:`DedupIndex.contained`); pruned by seed 002's
   comparison reducer; verified by word-shingle containment:
   ``duplicate`` when containment >= t1 and the TDW angle test passes,
   ``near_duplicate`` when containment >= t2.

Every verdict carries all scores computed for the best candidate, the thresholds
and the algorithm and reference-text versions, as plain JSON-serialisable data.

Bad input: a page with no extractable main text (empty, binary, markup only, unparseable)
is ``unique`` with rule ``unextractable`` and ``scores["extraction"]`` saying why; it is
kept (so it is never silently lost) and compared with no other page, since there is no text to
compare, except by its exact key: its body's (``dedup.keys.raw_key``), so that a byte-identical
copy of it is an ``exact_duplicate`` (rule ``content_hash``) as any exact copy is (an empty body
has none). A page cut by an input limit (``max_page_bytes``, ``max_text_chars``) carries
``scores["truncated"]`` = ``{"bytes": [original, kept]}`` and/or ``{"chars": [original, kept]}``; a page
read without the parts it marks as not for indexing (:mod:`dedup.indexmarks`) ``{"unindexed": [original,
kept]}`` (characters of its HTML).
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, Iterable

import numpy as np

from . import _fast
from .bits import hamming
from .decision import DECISIONS, load_decision, title_similarity
from .features import Features, Featurizer
from .mrc import signature_cosine
from .permtables import DEFAULT_BLOCKS, DEFAULT_K
from .page import MAX_PAGE_BYTES, MAX_TEXT_CHARS, Page, limit_text, parse_page, site_host
from .extract import DEFAULT_EXTRACTOR, EXTRACTORS
from .query import QUERY_FORMAT, Query
from .record import Record
from .reducer import ComparisonReducer
from .spread import spread
from .store import DedupIndex, KeyTaken

__all__ = ["ALGORITHM", "STATUSES", "ACCEPTS", "SAME_FROM_RECORD", "QUERY_FORMAT", "ConfigError", "DedupConfig", "Verdict", "Deduplicator",
           "containment", "containment_many", "ROOT_HASH"]

ALGORITHM = "dedup-1"
LOOKED_UP = 4096  # URLs whose known() lookup process() may reuse (see Deduplicator._prior)
LOOKED_UP_SECONDS = 30.0
STATUSES = ("unique", "near_duplicate", "duplicate", "exact_duplicate")
TITLE_ANCHOR_MODES = ("confirm", "literal", "off")
_DROPPABLE = tuple(s for s in STATUSES if s != "unique")
#: rules of the verdicts :meth:`Deduplicator.check_record` gives exactly as :meth:`Deduplicator.check` gives
#: them from the page: the content hash, and no candidate left after the comparison reducer (its filters
#: on a record's term sample are never stricter than on the whole set); the kNN candidates are sought
#: with the record's signature (on its 256-level grid: cosine > 0.99999 with the page's)
SAME_FROM_RECORD = frozenset({"content_hash", "no_candidate"})

#: What each knob accepts: checked once, by :class:`DedupConfig`, and quoted by every error about it
#: (the crawl's ``DEDUP_*`` settings name their own setting and raw value: ``crawler.config``).
ACCEPTS = {
    "t1": "a number in (0, 1]",
    "t2": "a number in (0, 1]",
    "reducer_jaccard": "a number in (0, 1]",
    "max_distance": "an integer >= 0",
    "knn": "an integer >= 0",
    "contained": "an integer >= 0",
    "contained_shared": "an integer >= 1",
    "blocks": "an integer >= 1, greater than max_distance and at most 64",
    "sentence_tolerance": "an integer >= 1, or None",
    "title_anchor": f"one of {', '.join(TITLE_ANCHOR_MODES)}",
    "extractor": f"one of {', '.join(EXTRACTORS)}",
    "decision": f"one of {', '.join(DECISIONS)}",
}


class ConfigError(ValueError):
    """A value :class:`DedupConfig` does not accept. ``fields``: the knobs involved (the first one is
    at fault); ``accepted``: what the first accepts, when the error is about that value alone."""

    def __init__(self, message: str, fields: tuple[str, ...], accepted: str | None = None) -> None:
        super().__init__(message)
        self.fields = fields
        self.accepted = accepted


def _bad(name: str, value: Any) -> ConfigError:
    return ConfigError(f"{name} must be {ACCEPTS[name]}, got {value!r}", (name,), ACCEPTS[name])


@dataclass(frozen=True)
class DedupConfig:
    """Thresholds and knobs; defaults measured on goldset-dev (docs/accuracy.md).

    t1: containment for ``duplicate`` (0.8). t2: containment for ``near_duplicate`` (0.4).
    max_distance / blocks: simhash tables' k and block count (3, 5: C(5, 3) = 10 tables).
    knn: nearest signatures fetched (20); knn_floor: their minimum MRC cosine (0.0).
    contained / contained_shared: containment candidates proposed at most (10; 0 turns the search off) and
    the posted sketch keys (:data:`dedup.store.CONTAINED_KEYS`) they must share with the page (2).
    reducer_jaccard / sentence_tolerance: the comparison reducer's t and Ts (0.1, None = off).
    min_shingles: below this many shingles on the smaller page, resemblance replaces containment (10).
    max_page_bytes / max_text_chars: input limits, applied before parsing / featurizing (None: off).
    extractor: main-text extractor for HTML (:data:`dedup.extract.DEFAULT_EXTRACTOR`; see :mod:`dedup.extract`).
    Defaults live here (and the tables' k and blocks in :mod:`dedup.permtables`); the crawl's settings
    table reads them. :data:`ACCEPTS` says what each knob accepts.
    decision: ``logit`` (default: the calibrated model of :mod:`dedup.decision` decides whether the
    best candidate is a copy; t1 and the angle test still split ``duplicate`` from ``near_duplicate``)
    or ``containment`` (the old rule: containment >= t2).
    """

    weights: Any = "tdw"
    t1: float = 0.8
    t2: float = 0.4
    max_distance: int = DEFAULT_K
    blocks: int = DEFAULT_BLOCKS
    knn: int = 20
    knn_floor: float = 0.0
    contained: int = 10
    contained_shared: int = 2
    reducer_jaccard: float = 0.1
    sentence_tolerance: int | None = None
    title_anchor: str = "confirm"
    shingle: int = 5
    sketch: int = 256
    min_shingles: int = 10
    drop: tuple[str, ...] = ("exact_duplicate",)
    max_page_bytes: int | None = MAX_PAGE_BYTES
    max_text_chars: int | None = MAX_TEXT_CHARS
    extractor: str = DEFAULT_EXTRACTOR
    decision: str = "logit"

    def __post_init__(self) -> None:
        """The one validation of the knobs (the crawl's settings only parse their strings before it):
        raises :class:`ConfigError` naming the knob, the value and what it accepts."""
        if self.extractor not in EXTRACTORS:
            raise _bad("extractor", self.extractor)
        if self.decision not in DECISIONS:
            raise _bad("decision", self.decision)
        for name in ("max_page_bytes", "max_text_chars"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 or None (got {value})", (name,), "an integer >= 1, or None")
        for name in ("t1", "t2", "reducer_jaccard"):
            if not 0.0 < getattr(self, name) <= 1.0:  # NaN fails too
                raise _bad(name, getattr(self, name))
        if self.t2 > self.t1:
            raise ConfigError(f"t2 must be <= t1, got t1={self.t1}, t2={self.t2}", ("t2", "t1"))
        for name, low in (("max_distance", 0), ("knn", 0), ("blocks", 1), ("contained", 0), ("contained_shared", 1)):
            if getattr(self, name) < low:
                raise _bad(name, getattr(self, name))
        # the constraints of dedup.permtables, checked without building its C(blocks, k) tables
        if not self.max_distance < self.blocks <= 64:
            raise ConfigError(f"blocks must be greater than max_distance and at most 64 (one block per fingerprint "
                              f"bit), got blocks={self.blocks}, max_distance={self.max_distance}",
                              ("blocks", "max_distance"))
        if self.sentence_tolerance is not None and self.sentence_tolerance < 1:
            raise _bad("sentence_tolerance", self.sentence_tolerance)
        if self.title_anchor not in TITLE_ANCHOR_MODES:
            raise _bad("title_anchor", self.title_anchor)
        for status in self.drop:
            if status == "unique":
                raise ConfigError(f"drop: 'unique' cannot be dropped (nothing would ever be kept); "
                                  f"valid: {', '.join(_DROPPABLE)}", ("drop",))
            if status not in STATUSES:
                raise ConfigError(f"drop: unknown status {status!r}; valid: {', '.join(_DROPPABLE)}", ("drop",))

    def drops(self, verdict: "Verdict") -> bool:
        """Whether ``verdict``'s page is dropped: its status is one of ``drop``, and it is not an exact copy of
        its own site's text (rule ``site_text``, which is never dropped: see :func:`_site_text`)."""
        return verdict.status in self.drop and verdict.rule != "site_text"

    def thresholds(self) -> dict[str, Any]:
        return {"t1": self.t1, "t2": self.t2, "max_distance": self.max_distance, "knn": self.knn,
                "reducer_jaccard": self.reducer_jaccard, "angle": round(180.0 * (1.0 - self.t1), 6),
                "sentence_tolerance": self.sentence_tolerance, "title_anchor": self.title_anchor,
                "decision": self.decision}


@dataclass
class Verdict:
    status: str
    duplicate_of: str | None
    rule: str
    scores: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    algorithm: str = ALGORITHM
    reference: str = ""
    candidates: int = 0
    kept: bool = True
    duplicate_id: int | None = None
    #: which extractor gave the page's main text (Page.extraction: resiliparse, trafilatura, ...)
    extraction: str = ""
    #: the kept page this one was matched with (its best candidate, or the holder of its content);
    #: ``duplicate_of`` names the page its group was kept for, which is ``nearest`` unless that page is
    #: itself flagged as a copy (then the page it names, followed to the end of the chain)
    nearest: str | None = None
    #: the older version of the same URL that this page's record replaced (fetched again with other
    #: content): its ``record`` id, ``status``, ``duplicate_of``, ``fetched_at`` and ``content_hash``
    replaced: dict[str, Any] | None = None
    #: fetched again with the content its URL's record holds: the record's verdict, nothing written
    refetched: bool = False
    #: the URL of the page this one now copies when that page was flagged as a copy of this one (this page edited,
    #: or put back): that page is its group's kept page now (``unique``), not a page naming its own copy
    regrouped: str | None = None
    #: the content hash of the page ``duplicate_of`` names, as the decision read it: kept in a flagged copy's record
    #: (``extra["root"]``, :data:`ROOT_HASH` hex digits), by which :meth:`Deduplicator.root_changed` knows that page
    #: holds other text now. Not in :meth:`to_dict` (items and drop lines do not carry it)
    root_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain JSON-safe data. Left out when they say nothing (most verdicts, so that the
        dropped log and the items stay as small as before them): ``nearest`` when it is ``duplicate_of``
        (read it as ``d.get("nearest") or d["duplicate_of"]``), ``replaced`` when None, ``refetched`` when
        false.  As ``dataclasses.asdict`` makes it, without its deep copy of every number and string (a
        reindex writes a verdict a document: asdict cost ~0.4 ms of its CPU a document)."""
        out = {name: _plain(getattr(self, name)) for name in _VERDICT_FIELDS}
        if out["nearest"] == out["duplicate_of"]:
            del out["nearest"]
        if out["replaced"] is None:
            del out["replaced"]
        if not out["refetched"]:
            del out["refetched"]
        if out["regrouped"] is None:
            del out["regrouped"]
        return out


_VERDICT_FIELDS = tuple(f.name for f in fields(Verdict) if f.name != "root_hash")
#: hex digits of the root's content hash a flagged copy's record keeps (48 bits: a changed text is missed
#: once in ~10^14 changes; 22 bytes of the record's ``extra`` JSON, flagged records only)
ROOT_HASH = 12


def regrouped_verdict(url: str) -> dict[str, Any]:
    """What the search document of a page regrouped by :meth:`Deduplicator.regroup` gets over its verdict: it is
    its group's kept page now, since ``url`` (the page it was flagged as a copy of) was dropped as its copy."""
    return {"status": "unique", "duplicate_of": None, "rule": "regrouped", "regrouped_from": url}


def _plain(value: Any) -> Any:
    """``value`` with its dicts, lists and tuples copied (as ``asdict`` copies them) and its leaves as they are
    (numbers, strings, None: immutable; a dataclass or any other object goes through ``asdict``'s copy)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, type(None))):
        return value
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(_plain(v) for v in value)
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else copy.deepcopy(value)


def containment(a: np.ndarray, a_total: int, b: np.ndarray, b_total: int, *, min_size: int = 10) -> tuple[float, float]:
    """``(containment, resemblance)`` of two shingle sets from their bottom-k sketches.

    Both sketches are cut at the smaller of their largest kept hashes, which leaves
    two uniform samples of the same hash range; full sets (total <= sketch size)
    are exact. Containment is the overlap over the smaller sample. When the smaller
    page has fewer than ``min_size`` shingles, containment is unreliable (a three-word
    page is "contained" in anything) and resemblance is returned in its place.
    One pair of :func:`containment_many`, which a check calls for all its candidates at once.
    """
    return containment_many(a, a_total, [b], [b_total], min_size=min_size)[0]


def containment_many(a: np.ndarray, a_total: int, bs: list[np.ndarray], b_totals: list[int], *,
                     min_size: int = 10) -> list[tuple[float, float]]:
    """:func:`containment` of ``a`` with each sketch ``bs[i]`` (of a set of ``b_totals[i]`` shingles), all
    at once, in one C call (dedup/_fast.c; sorted uint32 or uint64 keys): each of ``b``'s keys searched in
    ``a``; the pair's overlap is its count of shared keys (every shared key lies within both cuts: it is at
    most ``a``'s last key and ``b``'s), the cut samples' sizes counts of keys up to the other sketch's last
    key when that sketch is cut. tests/test_verify_many.py compares it with the former pair-by-pair code,
    tests/test_fast.py with the numpy code it replaces."""
    return _fast.containment_many(a, a_total, bs, b_totals, min_size)


#: content-hash holders read for one that is not of the page's site under another title (_site_text)
HOLDERS = 8
#: a text of at most this many shingles (~55 English words: a footer's or a blurb's sentence or two; ~35 Han or
#: kana characters) held by pages of the same site under other titles is the site's (_site_text); a longer one
#: may be a brief, whose print or mirror URL may retitle it (a 60-word brief is 32 shingles, a 33-word footer 16)
SITE_TEXT_SHINGLES = 30


def _site_text(url: str | None, title: str, holder: Record) -> bool:
    """A page of ``url`` and ``title`` whose text ``holder`` holds too is of the same site under another title:
    the text is then most likely the site's own (a footer or a blurb read as the main text of pages that have
    none), not a copy of a page. URL variants of one page (a print or tracking URL) keep its title, and copies
    on other sites are copies whatever their titles."""
    host = site_host(url)
    return bool(host) and host == site_host(holder.url) and " ".join(title.split()).casefold() != " ".join(
        holder.title.split()).casefold()


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _with_cuts(verdict: Verdict, truncated: dict | None) -> Verdict:
    """``verdict`` saying how its page was cut before it was read (``scores["truncated"]``), if it was."""
    if truncated:
        verdict.scores["truncated"] = dict(truncated)
    return verdict


def chunk_share(a: np.ndarray, b: np.ndarray, k: int = 3) -> float:
    """Seed 003: share of the shorter page's sentence simhashes within ``k`` bits of one in the other."""
    if a.size == 0 or b.size == 0:
        return 0.0
    short, other = (a, b) if a.size <= b.size else (b, a)
    d = hamming(short[:, None], other[None, :])
    return float((d.min(axis=1) <= k).mean())


def _link_stale(record: Record, root: Record) -> bool:
    """Whether ``root``, the page ``record`` names, holds another text than the one ``record``'s verdict read (by
    the hash the record keeps; a record stored before it keeps none, and its link is taken as it is)."""
    read = record.extra.get("root")
    return isinstance(read, str) and bool(read) and not (root.content_hash or "").endswith(read)


def _keep_root(record: Record, verdict: Verdict) -> None:
    """A flagged copy's record keeps the last :data:`ROOT_HASH` digits of its root's content hash (as
    :meth:`Deduplicator.root_changed` reads them); any other record keeps none (a regrouped or unique one)."""
    if verdict.status != "unique" and verdict.duplicate_of and verdict.root_hash:
        record.extra["root"] = verdict.root_hash[-ROOT_HASH:]
    else:
        record.extra.pop("root", None)


class Deduplicator:
    """Checks pages against a :class:`~dedup.store.DedupIndex` and adds the kept ones."""

    def __init__(self, index: DedupIndex, config: DedupConfig | None = None, *,
                 featurizer: Featurizer | None = None) -> None:
        self.index = index
        self.config = config or DedupConfig()
        c = self.config
        self.featurizer = featurizer or Featurizer(weights=c.weights, shingle=c.shingle, sketch=c.sketch)
        self.reducer = ComparisonReducer(c.reducer_jaccard, c.sentence_tolerance)
        # seed 002's cosine test at t = t1 separates "duplicate" from "near_duplicate"
        self._duplicate_angle = ComparisonReducer(c.t1)
        self._thresholds = c.thresholds()
        self.decision = load_decision() if c.decision == "logit" else None
        if self.decision is not None:
            self._thresholds.update(self.decision.thresholds())
        # url -> (the record known() found or None, when): process() of that URL uses it once instead of a
        # second lookup (a term query on Elasticsearch), if it comes within LOOKED_UP_SECONDS (a page spooled
        # through an outage is looked up again). Bounded: a page known() saw may never be decided.
        self._looked_up: dict[str, tuple[Record | None, float]] = {}

    # -- public API -------------------------------------------------------------------------
    def process_html(self, html: bytes | str, url: str, **kwargs: Any) -> tuple[Page, Verdict]:
        kwargs.setdefault("max_bytes", self.config.max_page_bytes)
        kwargs.setdefault("max_text_chars", self.config.max_text_chars)
        kwargs.setdefault("extractor", self.config.extractor)
        page = parse_page(html, url, **kwargs)
        return page, self.process(page)

    def features(self, page: Page) -> Features:
        """``page``'s features, after its text is cut to ``max_text_chars`` (what :meth:`process` computes
        when it is given none)."""
        limit_text(page, self.config.max_text_chars)
        return self.featurizer(page)

    def process(self, page: Page, *, features: Features | None = None, body: str | None = None,
                regroup: bool = True, **record_fields: Any) -> Verdict:
        """Check ``page``; when its status is not in ``config.drop``, add it to the index.
        ``features``: the page's, when computed elsewhere (a worker process; same featurizer settings).
        ``body``: the key of the bytes it was made from (:attr:`dedup.sources.Source.body_key`), kept in
        its record so that the same bytes fetched again are known without parsing (:meth:`known`).

        One record per URL: a URL whose record holds the same content is *refetched* (its record's
        verdict, nothing written); a URL whose content changed is decided against the other pages,
        never its own older version, and its record is replaced (``verdict.replaced``), or removed
        when the new content is dropped. ``regroup=False``: a page put back as an exact copy of its own copy
        leaves that copy's record as it is (the caller regroups it: :meth:`regroup_target`)."""
        if features is None:
            features = self.features(page)
        prior = self._prior(page.url)
        same = prior is not None and prior.content_hash == features.content_hash
        root_changed = same and self.root_changed(prior)
        if same and not root_changed:
            return self._refetched(prior)
        verdict = self._check_page(page, features, prior, same_url=True)
        if verdict.refetched:  # its URL's record holds this content, found by the content hash alone
            return verdict
        verdict.extraction = page.extraction
        verdict.kept = not self.config.drops(verdict)
        if prior is not None:
            verdict.replaced = {"record": prior.id, "status": prior.status, "duplicate_of": prior.duplicate_of,
                                "fetched_at": prior.fetched_at, "content_hash": prior.content_hash}
            if root_changed:
                verdict.replaced["root_changed"] = True
            if prior.extra.get("restored_at"):  # put back by `dedup dropped restore`, decided again now
                verdict.replaced["restored"] = True
        if verdict.kept:
            try:
                self.add(page, features, verdict, body=body, instead_of=prior, **record_fields)
            except KeyTaken as taken:
                # another process sharing the index kept this content between our check and our
                # add (the claim is atomic): the page is an exact duplicate of that record after all
                verdict = replace(self._taken(features, taken, page.url), replaced=verdict.replaced)
                if verdict.refetched:  # the holder is this URL's record, written meanwhile by another process
                    return verdict
                verdict.extraction = page.extraction
                verdict.kept = not self.config.drops(verdict)
                if verdict.kept:  # a kept exact duplicate claims nothing, so this add cannot race
                    self.add(page, features, verdict, body=body, instead_of=prior, **record_fields)
        if not verdict.kept and prior is not None:
            self.index.remove(prior.id)  # the URL's content is dropped now: its older version goes
        target = self.regroup_target(verdict, page.url) if regroup else None
        if target is not None:
            self.regroup(verdict, target)
        return verdict

    def regroup_target(self, verdict: Verdict, url: str | None) -> Record | None:
        """The record of the page ``verdict`` names when that page was flagged as a copy of ``url`` (``url`` put
        back, and dropped as an exact copy of its own copy): :meth:`regroup` makes it its group's kept page."""
        if not url or verdict.duplicate_id is None or verdict.status == "unique":
            return None
        found = self.index.get([verdict.duplicate_id])
        record = found[0] if found else None
        return record if record is not None and record.duplicate_of == url and record.url != url else None

    def regroup(self, verdict: Verdict, record: Record) -> Record:
        """``record`` (:meth:`regroup_target`) is its group's kept page now: stored as ``unique`` (under a new id),
        named by ``verdict.regrouped`` (a crawl's search document of it is changed to match). Without this each
        page named the other, and no page of the group read as kept. Returns the record as stored."""
        now = replace(record, status="unique", duplicate_of=None,
                      extra={k: v for k, v in record.extra.items() if k != "root"})
        self.index.replace(record.id, now)
        verdict.regrouped = record.url
        return now

    def known(self, url: str, body: str) -> Verdict | None:
        """The verdict of a page fetched again with the very bytes its URL's record was made from
        (``body``: :attr:`dedup.sources.Source.body_key`), found before any parsing; None otherwise."""
        prior = self.index.by_url(url) if url and body else None
        if prior is None or prior.extra.get("body") != body or self.root_changed(prior):
            if url and body:
                self._looked_up[url] = (prior, time.monotonic())
                if len(self._looked_up) > LOOKED_UP:
                    del self._looked_up[next(iter(self._looked_up))]
            return None
        return self._refetched(prior)

    def _prior(self, url: str | None) -> Record | None:
        """The record of ``url``: the one :meth:`known` found for it, once, else looked up."""
        if not url:
            return None
        found = self._looked_up.pop(url, None)
        if found is not None and time.monotonic() - found[1] < LOOKED_UP_SECONDS:
            return found[0]
        return self.index.by_url(url)

    def root_changed(self, record: Record) -> bool:
        """``record`` is a kept copy (flagged) whose group's kept page changed or went since it was decided: the record
        of the page it names is gone, is a copy itself whose link leads on (a chain: that page's link was stale when
        this one was decided, and it was decided again since; a copy whose own link is stale, or that names a page gone,
        would be named again: not a change), or holds another text than the one the decision read (the content hash kept
        in ``record.extra["root"]``). Fetched again unchanged, such a page is decided again rather than left naming a
        page that no longer holds its text. A record stored before it kept that hash is told by time: its root's record
        written after it (a record is written only when its text is decided), which a page's own dates can mislead (a
        reindex's time field, absent or not moved on edit)."""
        if record.status == "unique" or not record.duplicate_of:
            return False
        root = self.index.by_url(record.duplicate_of)
        if root is None:
            return True
        if root.status != "unique" and self._root(root, record.url) is not root:
            return True  # a copy itself, whose link leads on (a chain the pages' edits left): named anew, shorter
        if record.extra.get("root"):
            return _link_stale(record, root)
        return root.fetched_at > record.fetched_at

    def drop_holds(self, content_hash: str, nearest: str, duplicate_of: str | None, *, exact: bool = True) -> bool:
        """Whether a page dropped as a copy is still what its drop line says: the page it matched (``nearest``) is
        kept and, for an exact copy, holds its text (``content_hash``), and its group is kept for the page the line
        names (``duplicate_of``: not rewritten since, helper-27). A crawl fetching the page again and a reindex
        update decide it again when not."""
        record = self.index.by_url(nearest)
        if record is None or (exact and record.content_hash != content_hash):
            return False
        return not duplicate_of or self.root_of(record).url == duplicate_of

    def root_of(self, record: Record) -> Record:
        """The kept page ``record``'s group was kept for, as a verdict naming ``record`` would name it: the end
        of its ``duplicate_of`` chain, up to a link that holds another text now (:meth:`_root`)."""
        return self._root(record, None)

    def _refetched(self, record: Record) -> Verdict:
        return Verdict(record.status, record.duplicate_of, "replay_of_recorded_page", {"record": record.id},
                       self._thresholds, reference=record.ref_id, extraction=str(record.extra.get("extraction", "")),
                       refetched=True)

    def _taken(self, f: Features, taken: KeyTaken, url: str) -> Verdict:
        found = self.index.get([taken.record_id])
        if found and found[0].url == url:
            return self._refetched(found[0])
        holder = self._root(found[0], None) if found else None
        return Verdict("exact_duplicate", holder.url if holder else None, "content_hash",
                       {"content_hash": f.content_hash, "race": True},
                       thresholds=self._thresholds, reference=f.signature.ref_id, candidates=1,
                       duplicate_id=holder.id if holder else taken.record_id,
                       nearest=found[0].url if found else None, root_hash=holder.content_hash if holder else None)

    def add(self, page: Page, features: Features, verdict: Verdict, *, body: str | None = None,
            instead_of: Record | None = None, **record_fields: Any) -> int:
        """Store ``page``'s record with ``verdict``'s status and ``duplicate_of``; in place of ``instead_of``
        (the same URL's older record) when given."""
        # a record's time is when its text was decided unless the caller says when its page was fetched: it tells
        # a flagged copy whose group's kept page was written since (root_changed, of a record before root hashes)
        record_fields.setdefault("fetched_at", time.time())
        record = features.to_record(page, status=verdict.status, duplicate_of=verdict.duplicate_of, **record_fields)
        if body:
            record.extra["body"] = body
        _keep_root(record, verdict)
        if instead_of is not None:
            return self.index.replace(instead_of.id, record)
        return self.index.add(record)

    def check(self, page: Page, features: Features | None = None, *, own: Record | None = None) -> Verdict:
        """The verdict for ``page`` against the index (the index is not changed). ``own``: the older
        record of the page's URL, which it is never compared with."""
        return self._check_page(page, features or self.featurizer(page), own)

    def _check_page(self, page: Page, f: Features, own: Record | None, *, same_url: bool = False) -> Verdict:
        """:meth:`check`; ``same_url``: a record of the page's own URL holding its content is this page
        (refetched), not a page it copies."""
        # the page's keys in the records' compact form (dedup.record)
        return _with_cuts(self._check(Query.of_page(page, f), page.extraction, own, page.url if same_url else None,
                                      page.url), page.truncated)

    def check_record(self, record: Record) -> Verdict:
        """The verdict for a page known by its stored :class:`Record` (the final pass of a sliced
        reindex decides kept pages again from their records) against the index (not changed). The
        record's keys are already compact: they are compared as they are, never compacted again.
        The same decision as :meth:`check` of the page for the rules of :data:`SAME_FROM_RECORD`; past
        them, an estimate from what the record holds (its shingle sketch and heaviest terms, not the whole
        sets: see :class:`Query`), so a caller that must decide as the page does decides those again
        from the page's features."""
        # the record keeps how its page was cut before it was read (Features.to_record)
        return _with_cuts(self._check(Query.of_record(record), str(record.extra.get("extraction", "")),
                                      page_url=record.url), record.extra.get("truncated"))

    def query_features(self, page: Page, features: Features) -> dict[str, Any]:
        """What :meth:`check` compares of ``page`` (the query side: the whole term vector, the whole
        shingle sketch, the exact signature...), JSON-safe and compact (arrays as base64): a sliced
        reindex's slice hands it to the final pass, which decides with :meth:`check_query_features`
        exactly as :meth:`check` decides from the page, without parsing it again."""
        out = Query.of_page(page, features).to_dict()
        out.update(extraction=page.extraction, truncated=dict(page.truncated), url=page.url)
        return out

    def check_query_features(self, data: dict[str, Any]) -> Verdict:
        """The verdict :meth:`check` gives the page ``data`` was made from (:meth:`query_features`),
        against the index (not changed). Raises ``ValueError`` for a form of another version."""
        return _with_cuts(self._check(Query.from_dict(data), str(data.get("extraction") or ""),
                                      page_url=data.get("url")), data.get("truncated"))

    def add_record(self, record: Record, verdict: Verdict) -> int:
        """Add a copy of ``record`` (a page checked with :meth:`check_record`) with ``verdict``'s status
        and ``duplicate_of``, as :meth:`add` adds a page; its arrays are stored as they are."""
        copy = replace(record, id=0, status=verdict.status, duplicate_of=verdict.duplicate_of, extra=dict(record.extra))
        _keep_root(copy, verdict)
        return self.index.add(copy)

    def _check(self, q: Query, extraction: str, own: Record | None = None, url: str | None = None,
               page_url: str | None = None) -> Verdict:
        """The verdict for ``q``. ``url``: the page's URL when a record of it holding its content is the page
        itself (refetched); ``page_url``: the page's URL (None: unknown), which the content-hash rule reads."""
        base = {"thresholds": self._thresholds, "reference": q.ref_id}
        own_id = own.id if own is not None else None
        own_url = own.url if own is not None else None

        def found(ids: list[int]) -> list[int]:
            return [i for i in ids if i != own_id] if own_id is not None else ids

        def copy_of(rec: Record, status: str, rule: str, scores: dict[str, Any], n: int) -> Verdict:
            if url and rec.url == url and rule == "content_hash":
                # the holder of this content is a record of this very URL, which a lookup by URL did not
                # find yet (another crawler wrote it, and Elasticsearch has not refreshed): this page
                return self._refetched(rec)
            root = self._root(rec, own_url)
            if own_url and root.duplicate_of == own_url and status != "exact_duplicate":
                # the page matched is flagged as a copy of this one (this page edited since): this page stays
                # its group's kept page, never a copy of its own copy (each would name the other)
                return Verdict("unique", None, "group_root", scores, candidates=n, nearest=rec.url, **base)
            return Verdict(status, root.url, rule, scores, candidates=n, duplicate_id=root.id, nearest=rec.url,
                           root_hash=root.content_hash, **base)

        if q.content_hash:  # a page without main text has its raw body's key (dedup.keys.raw_key) or none
            ids = found(self.index.lookup("content_hash", q.content_hash))
            if ids:
                holders = self.index.get(ids[:1])
                short = q.shingle_count <= SITE_TEXT_SHINGLES
                if short and holders and _site_text(page_url, q.title, holders[0]):
                    holders += self.index.get(ids[1:HOLDERS])  # another holder may be a copy's original
                holder = next((rec for rec in holders if not (short and _site_text(page_url, q.title, rec))), None)
                if holder is not None:
                    return copy_of(holder, "exact_duplicate", "content_hash", {"content_hash": q.content_hash},
                                   len(ids))
                if holders:
                    # a short text held only by pages of this site under other titles: the site's (a footer or
                    # a blurb read as the main text of a page that has none), not this page's. An exact copy of
                    # it all the same (a kept exact duplicate claims no content), but never dropped
                    return copy_of(holders[0], "exact_duplicate", "site_text", {"content_hash": q.content_hash},
                                   len(ids))
        if not q.has_text:
            # nothing else to compare: kept as unique, and said why, rather than matched on an empty key
            return Verdict("unique", None, "unextractable", {"extraction": extraction or "none"}, **base)
        mode = self.config.title_anchor
        title_ids = found(self.index.lookup("title_key", q.title_key)) if q.title_key and mode != "off" else []
        if title_ids and mode == "literal":
            return copy_of(self.index.get(title_ids[:1])[0], "exact_duplicate", "title_anchor",
                           {"title_key": q.title_key}, len(title_ids))
        candidates = found(self._candidates(q, title_ids))
        best, best_key, best_resemblance = None, None, 0.0
        records = list(self.index.get(candidates))
        # the reducer's filters and the containments of all candidates at once (the same figures as one by one)
        kept = [rec for rec, out in zip(records, self._pruned(q, records)) if not out]
        pruned = len(records) - len(kept)
        found = containment_many(q.shingles, q.shingle_count, [rec.shingles for rec in kept],
                                 [rec.shingle_count for rec in kept], min_size=self.config.min_shingles)
        # the best is the highest (containment, TDW cosine), the first of equals: among the candidates of the
        # highest containment, so the cosine is only needed for those (~1.5 a page, not every one that ties
        # or beats the best so far in arrival order)
        top = max((cont for cont, _ in found), default=None)
        for rec, (cont, resemblance) in zip(kept, found):
            if cont == top:
                key = (cont, q.cosine(rec))
                if best_key is None or key > best_key:
                    best, best_key, best_resemblance = rec, key, resemblance
        n = len(candidates)
        if best is None:
            return Verdict("unique", None, "no_candidate" if n == pruned else "below_t2",
                           {"pruned": pruned}, candidates=n, **base)
        best_scores = self._scores(q, best, best_key[0], best_resemblance, best_key[1])
        best_scores["title"] = round(title_similarity(q.title, best.title), 4)
        # the larger of the two pages' list-item shares: a listing matched by a page it quotes, or by the next page
        best_scores["listing"] = max(q.list_share, float(best.extra.get("list_share", 0.0)))
        best_scores["pruned"] = pruned
        c = self.config
        s = best_scores["containment"]
        # confirmed by resemblance, not containment: a truncated copy with the same template
        # must not make the full page a copy of the fragment. Never a drop: an exact copy of the
        # text was caught by the content hash above, so this is an edited copy (a paragraph added,
        # removed or cut), which is flagged and kept like any other near copy (issue 20)
        if best.id in title_ids and best_scores["resemblance"] >= c.t1:
            best_scores["title_key"] = q.title_key
            return copy_of(best, "duplicate", "title_anchor", best_scores, n)
        if self.decision is not None:
            # the calibrated model says whether it is a copy (and which signals decided it);
            # containment >= t1 with the angle test still says how close a copy
            why = best_scores["decision"] = self.decision.explain(best_scores)
            copy, below = why["copy"], "below_decision"
        else:
            copy, below = s >= c.t2, "below_t2"
        if copy and s >= c.t1 and best_scores["angle_ok"]:
            status, rule = "duplicate", "containment>=t1"
        elif copy:
            status, rule = "near_duplicate", "decision" if self.decision is not None else "containment>=t2"
        else:
            best_scores["candidate"] = best.url  # the closest kept page, for calibration sweeps
            return Verdict("unique", None, below, best_scores, candidates=n, **base)
        return copy_of(best, status, rule, best_scores, n)

    # -- internals --------------------------------------------------------------------------
    def _root(self, rec: Record, own_url: str | None) -> Record:
        """The page ``rec``'s group was kept for: ``rec`` itself unless it is flagged as a copy, then the
        record its ``duplicate_of`` names, and so on (a chain is one link long when every verdict names its
        root; updates of pages can make it longer). Stops at a page that is gone, at a cycle, before
        ``own_url`` (the page being decided: a page is never the root of its own copy), and before a page that
        holds another text than the one the link's copy was decided against (its ``extra["root"]``): that page
        was rewritten, and the copy is what holds its group's text now (helper-27: a rewritten page's copies,
        each decided again, matched one another and named the rewritten page through the other's stale link)."""
        seen = {rec.id}
        while rec.status != "unique" and rec.duplicate_of and rec.duplicate_of not in (rec.url, own_url):
            nxt = self.index.by_url(rec.duplicate_of)
            if nxt is None or nxt.id in seen or _link_stale(rec, nxt):
                break
            seen.add(nxt.id)
            rec = nxt
        return rec

    def _candidates(self, q: Query, extra: Iterable[int]) -> list[int]:
        ids = set(extra)
        ids.update(i for i, _ in self.index.near_simhash(q.simhash))
        if self.config.knn and q.vector.any():
            ids.update(i for i, _ in self.index.nearest(q.vector, q.ref_id,
                                                       self.config.knn, self.config.knn_floor))
        if self.config.contained and q.shingles.size:
            # a short page inside a longer one (or the reverse): simhash and signature differ, the sketch keys don't
            ids.update(i for i, _ in self.index.contained(q.shingles, self.config.contained_shared,
                                                          self.config.contained))
        return sorted(ids)

    def _pruned(self, q: Query, records: list[Record]) -> list[bool]:
        """Whether the comparison reducer prunes each candidate, as ``reducer.passes`` says pair by pair;
        for a page's query (its whole term set) the prefix and positional filters run on all at once."""
        red = self.reducer
        if q.term_count is not None:  # a record's query: both sides sampled
            return [red.passes(q.sample, q.sentences, rec.term_sample, rec.sentences, rec.term_count, q.term_count)
                    is not None for rec in records]
        out = [not red.sentences_ok(q.sentences, rec.sentences) for rec in records]
        rest = [j for j, o in enumerate(out) if not o]
        ok = red.prefix_positional_ok_sampled_many(q.sample, [records[j].term_sample for j in rest],
                                                   [records[j].term_count for j in rest])
        for j, o in zip(rest, ok):
            out[j] = not o
        return out

    def _scores(self, q: Query, rec: Record, cont: float, resemblance: float, tdw_cos: float) -> dict[str, Any]:
        """Every score of the pair, for the verdict of its best candidate (which the reducer passed),
        from its containment, resemblance and TDW cosine as the search for the best computed them."""
        rec_total = rec.shingle_count
        angle_ok, angle = self._duplicate_angle.angle_test(tdw_cos)
        # a record made with another reference text has no comparable signature
        mrc = round(signature_cosine(q.vector, rec.signature), 4) if rec.ref_id == q.ref_id else None
        return {
            "containment": round(float(cont), 4),
            "resemblance": round(float(resemblance), 4),
            "shingles": [q.shingle_count, rec_total],
            # where the shared text lies over the smaller page (dedup.spread); None: a record without positions
            "spread": _round(spread(q.shingles, q.positions, q.shingle_count, rec.shingles, rec.shingle_positions,
                                    rec_total)),
            "tdw_cosine": round(float(tdw_cos), 4),
            "angle": round(float(angle), 2),
            "angle_ok": bool(angle_ok),
            "mrc": mrc,
            "hamming": (q.simhash ^ rec.simhash).bit_count(),
            # records keep no sentence simhashes (dedup.record): None for them
            "chunks": round(chunk_share(q.chunks, rec.chunks), 4) if rec.chunks.size else None,
            "sentences": [q.sentences, rec.sentences],
        }
