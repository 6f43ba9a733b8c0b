"""The dropped-page log's format: writing its lines and reading them back, folded per URL.

Filtering and summarising entries (:mod:`dedup.cli.summary`) and restoring pages
(:mod:`dedup.cli.restore`) belong to the ``dedup`` command, which alone may open an index.

The log (``DEDUP_DROPPED_LOG``) is JSON lines, written through :class:`DropLogWriter` only:

* a **drop** line per dropped page: ``{"url", "time", "index", "verdict": {...}, "item": {...},
  "page": {...}}``: ``time`` ISO 8601 UTC; ``index`` the index the page was checked against and
  dropped from (:func:`index_identity`: a ``local://`` path made absolute, no credentials);
  ``verdict`` a :class:`~dedup.deduplicator.Verdict` dict (the only copy of it in the line);
  ``item`` the item's own fields with ``url``, ``title`` and the extracted ``text``, but not its
  raw HTML; ``page`` the tagged fields of the parsed page (:func:`dedup.sources.page_fields`:
  headings, bold, anchors, keywords, ...). Title, text and fields rebuild the page the crawl
  decided on (:meth:`dedup.sources.Source.from_logged`), so raw HTML is not needed (measured on
  the generated news site of ``benchmarks/bench_crawl.py``: 4.8 KB a line for pages of 40 KB of HTML).
  The crawl adds ``body``, the key of the bytes it dropped, and ``content_hash``, the key of their main
  text, when the verdict does not hold it already (``verdict.scores.content_hash``, the ``content_hash``
  rule's): by these the same page fetched again is known (a crawl's ``crawler.dropped_pages``). A reindex
  update logs a dropped document's line again, with ``source_key``, when its other fields changed (its page the
  same): that line renews the one before (what ``restore`` puts back), and is no drop more.
* an **event** line appended by ``dedup dropped restore``:
  ``{"event": "restored", "url", "time", "record_id", "index"}``; by a crawl that fetched a dropped URL
  again: ``{"event": "seen", "time", "lines": [offset, ...]}`` (unchanged: dropped again without a second drop
  line; each offset is where the page's latest drop line starts, up to :data:`SEEN_BATCH` pages a line, so a
  recrawl of an unchanged site adds ~8-9 bytes a dropped page, where a line a page took ~125; older logs have
  ``{"event": "seen", "url", "time"}`` lines, read too) or ``{"event": "kept", "url", "time", "status"}`` (its
  text changed and it was kept this time); by a crawl or ``reindex --update`` that decided a dropped page
  again with the very page it was dropped for (the page it matched changed, or its group is kept for another
  page now) and dropped it again: ``{"event": "dropped_again", "url", "time", "offset", "verdict": {...}}``
  (``fetched_at`` too when the item has one). ``offset`` is where the drop line holding its item starts: the new
  verdict stands for it, and the item, its text and fields are not logged twice (a whole drop line was ~4 KB
  in a crawl and the whole ``_source`` in a reindex; such an event is the verdict's ~0.6 KB).

Lines of older logs (no ``index``/``page``; the verdict repeated in ``item.dedup``) are read too.

The log is append-only (a crash in the middle of a write can only leave a partial *last* line,
which readers report and skip): restoring a page appends an event, it never rewrites the file.
Reading *folds* the lines into one :class:`Entry` per URL: the latest drop line of the URL (its verdict the
latest ``dropped_again`` event's, when one follows it), how many times it was dropped, when it was last seen
again unchanged, and its state: ``restored`` when a ``restored`` event follows that drop line, ``kept`` when a
``kept`` event does (a later drop of the same URL makes it ``dropped`` again).

Bad lines (not JSON, not an object, no ``url``/``verdict``) are reported as
:class:`LogProblem` with their line number and skipped; they never stop a reader.

Memory: folding keeps each entry's verdict and title, not its text; the full item is re-read
from the line's byte offset when needed (:meth:`DropLog.item`).

The **score** of an entry (filters, histogram) is the verdict's word-shingle containment
(``verdict.scores.containment``, overlap over the smaller page, 0..1).  Drops by the
``content_hash`` rule (same normalised main text) carry no containment: they count as 1.0.
Other verdicts without one (``title_anchor`` in ``literal`` mode) have no score.

This module imports neither scrapy, elasticsearch nor ``index``: the crawl's pipeline and a
reindex (``index.elastic.reindex``) write through it.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

from .page import Page
from .sources import Source, page_fields, page_from_source

logger = logging.getLogger(__name__)

__all__ = [
    "Entry", "VerdictFields", "LogProblem", "DropLog", "read_log", "iter_lines", "score_of", "host_of", "host_port",
    "parse_time", "append_event", "append_events", "drop_line", "page_from_item", "iso_now", "STATES", "RESTORED",
    "DropLogWriter", "index_identity", "SEEN", "KEPT", "DROPPED_AGAIN", "SEEN_BATCH", "dropped_again",
]

STATES = ("dropped", "restored", "kept")
RESTORED = "restored"
#: events a crawl appends (see the module docstring); ``restored`` is the restore command's
SEEN, KEPT, DROPPED_AGAIN = "seen", "kept", "dropped_again"
#: pages a ``seen`` line names at most (written at close, or when this many are waiting: a crawl killed loses at
#: most these marks, which only say when a dropped page was fetched again unchanged)
SEEN_BATCH = 500


def iso_now() -> str:
    """Now, as the log writes times: ISO 8601 UTC with milliseconds and ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: Any) -> datetime | None:
    """A log ``time`` as an aware UTC datetime, or None when missing or unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def score_of(verdict: dict[str, Any]) -> float | None:
    """The verdict's containment score (see the module docstring), or None."""
    scores = verdict.get("scores") or {}
    value = scores.get("containment") if isinstance(scores, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if verdict.get("rule") == "content_hash":
        return 1.0
    return None


def host_port(url: str) -> tuple[str, int | None]:
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return "", None
    return (f"[{host}]" if ":" in host else host), port


def host_of(url: str) -> str:
    """``host`` or ``host:port`` of ``url``, lowercased (what stats count and ``--host`` matches)."""
    host, port = host_port(url)
    return f"{host}:{port}" if port else host


@dataclass
class LogProblem:
    """A line of the log that was skipped (or an event that did not apply)."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class VerdictFields:
    """``status``, ``rule``, ``duplicate_of`` and ``score`` read from a ``verdict`` dict."""

    verdict: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.verdict.get("status") or "")

    @property
    def rule(self) -> str:
        return str(self.verdict.get("rule") or "")

    @property
    def duplicate_of(self) -> str | None:
        return self.verdict.get("duplicate_of")

    @property
    def nearest(self) -> str | None:
        """The page the verdict matched (``duplicate_of`` names its group's root; the same page unless the
        match is itself a copy)."""
        return self.verdict.get("nearest") or self.verdict.get("duplicate_of")

    @property
    def score(self) -> float | None:
        return score_of(self.verdict)


@dataclass
class Entry(VerdictFields):
    """One dropped URL, folded over the log (see the module docstring)."""

    url: str
    time: str
    verdict: dict[str, Any]
    title: str
    line: int  # 1-based line number of the latest drop line
    offset: int  # byte offset of that line
    fetched_at: Any = None
    drops: int = 1
    state: str = "dropped"
    restored_at: str | None = None
    index: str | None = None  # the index the page was dropped from (None: an older line does not say)
    restored_into: str | None = None
    seen: int = 0  # times fetched again unchanged since the drop line
    seen_at: str | None = None
    body: str | None = None  # the key of the bytes it was dropped for (None: an older line)
    content_hash: str | None = None  # the key of its text (None: an older line not dropped by it)
    verdict_line: int | None = None  # line number of the dropped_again event it has its verdict and time from

    @property
    def host(self) -> str:
        return host_of(self.url)

    @property
    def when(self) -> datetime | None:
        return parse_time(self.time)

    def to_dict(self, *, verdict: bool = False) -> dict[str, Any]:
        out = {"url": self.url, "time": self.time, "state": self.state, "restored_at": self.restored_at,
               "status": self.status, "rule": self.rule, "duplicate_of": self.duplicate_of, "nearest": self.nearest,
               "score": self.score, "host": self.host, "title": self.title, "drops": self.drops,
               "line": self.line, "index": self.index, "restored_into": self.restored_into,
               "seen": self.seen, "seen_at": self.seen_at, "verdict_line": self.verdict_line or self.line}
        if verdict:
            out["verdict"] = self.verdict
        return out


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, int, dict[str, Any] | None, str | None]]:
    """``(line number, byte offset, object or None, problem or None)`` for every non-blank line."""
    with open(path, "rb") as f:
        number, offset = 0, 0
        for raw in f:
            number += 1
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                tail = "" if raw.endswith(b"\n") else " (truncated last line: an interrupted write?)"
                yield number, start, None, f"not JSON ({_short(exc)}){tail}"
                continue
            if not isinstance(obj, dict):
                yield number, start, None, f"not a JSON object ({type(obj).__name__})"
                continue
            yield number, start, obj, None


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass
class DropLog:
    """A folded dropped log: ``entries`` (one per URL, in order of their latest drop line) and
    the ``problems`` met reading it."""

    path: Path
    entries: list[Entry] = field(default_factory=list)
    problems: list[LogProblem] = field(default_factory=list)
    lines: int = 0
    events: int = 0
    _by_url: dict[str, Entry] = field(default_factory=dict, repr=False)

    def get(self, url: str) -> Entry | None:
        """The entry of ``url`` (exactly as logged), or None."""
        if len(self._by_url) != len(self.entries):
            self._by_url = {e.url: e for e in self.entries}
        return self._by_url.get(url)

    def line(self, entry: Entry) -> dict[str, Any]:
        """The drop line of ``entry``, re-read from the log, with the verdict, time and ``fetched_at`` of the
        latest ``dropped_again`` event that followed it, if any."""
        with open(self.path, "rb") as f:
            f.seek(entry.offset)
            obj = json.loads(f.readline())
        if not isinstance(obj, dict):
            return {}
        if entry.verdict_line is not None:
            obj.update(verdict=entry.verdict, time=entry.time)
            if isinstance(obj.get("item"), dict) and entry.fetched_at is not None:
                obj["item"]["fetched_at"] = entry.fetched_at
        return obj

    def item(self, entry: Entry) -> dict[str, Any]:
        """The full logged item of ``entry`` (``url``, ``title``, ``text``, ...), re-read from the log."""
        item = self.line(entry).get("item")
        if not isinstance(item, dict):
            item = {}
        item.setdefault("url", entry.url)
        return item

    def source(self, entry: Entry) -> Source:
        """What :func:`~dedup.sources.page_from_source` rebuilds ``entry``'s page from."""
        line = self.line(entry)
        item = line.get("item") if isinstance(line.get("item"), dict) else {}
        page = line.get("page") if isinstance(line.get("page"), dict) else None
        return Source.from_logged({**item, "url": entry.url}, page)

    def find_item(self, url: str) -> dict[str, Any] | None:
        """The item logged for ``url`` (any state), or None."""
        entry = self.get(url)
        return self.item(entry) if entry is not None else None


def read_log(path: str | os.PathLike) -> DropLog:
    """Read and fold the dropped log at ``path``.

    Raises FileNotFoundError (with a hint) when there is no such file; bad lines become
    ``problems`` and are skipped.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no dropped log at {path} (set it with --log, or DEDUP_DROPPED_LOG; "
                                "a crawl writes it when it drops its first page)")
    if path.is_dir():
        raise FileNotFoundError(f"{path} is a directory, not a dropped log")
    log = DropLog(path)
    by_url: dict[str, Entry] = {}
    by_offset: dict[int, Entry] = {}  # drop lines by where they start, for batched seen lines
    for number, offset, obj, problem in iter_lines(path):
        log.lines = number
        if problem is not None:
            log.problems.append(LogProblem(number, problem))
            continue
        assert obj is not None
        if obj.get("event") == SEEN and isinstance(obj.get("lines"), list):
            log.events += 1
            _seen_at(by_offset, obj["lines"], obj.get("time") if isinstance(obj.get("time"), str) else None)
            continue
        url = obj.get("url")
        if not isinstance(url, str) or not url:
            log.problems.append(LogProblem(number, "no url"))
            continue
        event = obj.get("event")
        if event == DROPPED_AGAIN:
            log.events += 1
            _again(by_url, by_offset, obj, number, log.problems)
            continue
        if event is not None:
            log.events += 1
            entry = by_url.get(url)
            when = obj.get("time") if isinstance(obj.get("time"), str) else None
            if event not in (RESTORED, SEEN, KEPT):
                log.problems.append(LogProblem(number, f"unknown event {event!r} for {url}; ignored"))
            elif entry is None:
                log.problems.append(LogProblem(number, f"{event} event for {url}, which no earlier line drops"))
            elif event == SEEN:
                entry.seen, entry.seen_at = entry.seen + 1, when
            elif event == KEPT:
                entry.state = KEPT
            else:
                entry.state = RESTORED
                entry.restored_at = when
                entry.restored_into = obj.get("index") if isinstance(obj.get("index"), str) else None
            continue
        verdict = obj.get("verdict")
        if not isinstance(verdict, dict):
            log.problems.append(LogProblem(number, f"no verdict object for {url}"))
            continue
        item = obj.get("item") if isinstance(obj.get("item"), dict) else {}
        scores = verdict.get("scores") if isinstance(verdict.get("scores"), dict) else {}
        previous = by_url.pop(url, None)  # re-inserted last: entries stay in order of latest drop
        if previous is not None:
            by_offset.pop(previous.offset, None)
        by_url[url] = by_offset[offset] = Entry(
            url=url, time=obj.get("time") if isinstance(obj.get("time"), str) else "", verdict=verdict,
            title=str(item.get("title") or ""), line=number, offset=offset, fetched_at=item.get("fetched_at"),
            # a line renewing the previous one (its document's other fields changed: "source_key") is no drop more
            drops=(previous.drops + (0 if obj.get("source_key") else 1)) if previous else 1,
            index=obj.get("index") if isinstance(obj.get("index"), str) else None,
            body=obj.get("body"), content_hash=obj.get("content_hash") or scores.get("content_hash"))
    log.entries = list(by_url.values())
    return log


def _again(by_url: dict[str, Entry], by_offset: dict[int, Entry], obj: dict[str, Any], number: int,
           problems: list[LogProblem]) -> None:
    """A ``dropped_again`` event: the entry of the drop line it names (by offset) takes its verdict and time, one
    drop more, and moves last, as a new drop line of it would; one repeating the verdict the entry has counts for
    nothing. One naming no current entry of its URL (a later drop line replaced it, or the log was cut) is a
    problem, skipped."""
    url, verdict, offset = obj["url"], obj.get("verdict"), obj.get("offset")
    entry = by_offset.get(offset) if isinstance(offset, int) else None
    if entry is None or entry.url != url or not isinstance(verdict, dict):
        problems.append(LogProblem(number, f"dropped_again event for {url} names no drop line of it "
                                           f"(at {offset!r}){'' if isinstance(verdict, dict) else ', or no verdict'}; "
                                           "ignored"))
        return
    if verdict == entry.verdict:
        return  # the same decision logged twice (a reindex's batch sent again after a kill): one drop
    by_url.pop(url, None)
    by_url[url] = entry
    entry.verdict, entry.verdict_line = verdict, number
    entry.time = obj.get("time") if isinstance(obj.get("time"), str) else ""
    entry.drops += 1
    entry.state, entry.seen, entry.seen_at, entry.restored_at, entry.restored_into = "dropped", 0, None, None, None
    if obj.get("fetched_at") is not None:
        entry.fetched_at = obj["fetched_at"]


def _seen_at(by_offset: dict[int, Entry], offsets: list[Any], when: str | None) -> None:
    """A batched ``seen`` line: each offset names the entry of the drop line that starts there (one a later drop
    line of its URL replaced is no entry of the log any more: that page was dropped again since)."""
    for offset in offsets:
        entry = by_offset.get(offset) if isinstance(offset, int) else None
        if entry is not None:
            entry.seen, entry.seen_at = entry.seen + 1, when


# -- writing ---------------------------------------------------------------------------------------
def index_identity(uri: str) -> str:
    """``uri`` as a dropped log records which index a page was dropped from, so that two spellings of
    one index compare equal: a ``local://`` path made absolute (``local://.dedup`` run elsewhere is
    another directory); an Elasticsearch URI as ``http(s)://host:port/name`` (``es://`` is http, the
    port 9200 by default) without user name or password (the log is no place for credentials)."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme == "local":
        path = uri.split("://", 1)[1]
        return "local://" + os.path.abspath(os.path.expanduser(path))
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{'http' if scheme == 'es' else scheme}://{host}:{parts.port or 9200}/{parts.path.strip('/')}"


def drop_line(verdict: dict[str, Any], item: dict[str, Any], page: Page | None = None, *,
              index: str | None = None, omit: Iterable[str] = (), body: str | None = None,
              content_hash: str | None = None) -> dict[str, Any]:
    """The drop line of a dropped page, the one format every writer uses (the crawl's
    :class:`DropLogWriter`, a reindex's batched appends): its ``verdict`` (a Verdict dict, stored
    once), ``item`` (its fields; ``dedup``, ``page`` and the names in ``omit``, e.g. the raw-HTML
    field, are left out), the ``index`` it was dropped from (as :func:`index_identity` spells it)
    and the parsed ``page`` (its title and text complete the item; its tagged fields are kept
    beside it)."""
    return _drop_line(verdict, item, page, index_identity(index) if index else None, omit, body, content_hash)


def _drop_line(verdict: dict[str, Any], item: dict[str, Any], page: Page | None, index: str | None,
               omit: Iterable[str], body: str | None, content_hash: str | None) -> dict[str, Any]:
    """:func:`drop_line` given the index as :func:`index_identity` spells it (a writer spells it once)."""
    skip = {"dedup", "page", *omit}
    logged = {k: v for k, v in item.items() if k not in skip}
    if page is not None:
        if not logged.get("title"):
            logged["title"] = page.title
        if not logged.get("text"):
            logged["text"] = page.text
    line: dict[str, Any] = {"url": logged.get("url") or (page.url if page else None), "time": iso_now()}
    if index:
        line["index"] = index
    line["verdict"] = verdict
    line["item"] = logged
    if page is not None:
        line["page"] = page_fields(page)
    if body:
        line["body"] = body
    if content_hash:
        line["content_hash"] = content_hash
    return line


def dropped_again(url: str, offset: int, verdict: dict[str, Any], fetched_at: Any = None) -> dict[str, Any]:
    """The ``dropped_again`` event of ``url``, dropped again with the page its drop line at ``offset`` holds
    (see the module docstring): every writer's format, as :func:`drop_line` is for drop lines."""
    event: dict[str, Any] = {"event": DROPPED_AGAIN, "url": url, "time": iso_now(), "offset": int(offset),
                             "verdict": verdict}
    if fetched_at is not None:
        event["fetched_at"] = fetched_at
    return event


class DropLogWriter:
    """The one writer of drop lines (see the module docstring), appending to ``path``.

    Each line is flushed when written: a crash loses nothing already decided.
    """

    def __init__(self, path: str | os.PathLike, index: str | None = None) -> None:
        self.path = Path(path)
        # spelt once, when the log opens: every line names the same index (a relative local:// path is made
        # absolute against the directory the crawl started in)
        self.index = index_identity(index) if index else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a+", encoding="utf-8")  # "+": the torn-line check reads the last byte
        self._seen: list[int] = []  # offsets of the drop lines of pages seen again, not yet written
        self._end_torn_line()

    def _end_torn_line(self) -> None:
        """A log whose last line is torn (a crash in the middle of a write) gets a newline before this writer's
        first line, which would else be glued to it and skipped with it by every reader (its page then in no
        index and no readable line)."""
        if not _torn(self._file.fileno()):
            return
        logger.warning("The dropped log %s ends with a torn line (a crash while it was written): readers skip it "
                       "(dedup dropped list says so); new lines start on a line of their own", self.path)
        self._file.write("\n")
        self._file.flush()

    def write(self, verdict: dict[str, Any], item: dict[str, Any], page: Page | None = None,
              omit: Iterable[str] = (), *, body: str | None = None, content_hash: str | None = None) -> int:
        """Log a dropped page (see :func:`drop_line`), flushed at once. Returns the byte offset of its line."""
        return self._line(_drop_line(verdict, item, page, self.index, omit, body, content_hash))

    def again(self, url: str, offset: int, verdict: dict[str, Any], fetched_at: Any = None) -> None:
        """Log that ``url`` was dropped again, with ``verdict``, for the page its drop line at ``offset`` holds
        (:func:`dropped_again`), flushed at once. Marks of that line not yet written go: they came before this
        drop, which a reader's fold starts the entry's seen count again at (as at a new drop line)."""
        self._seen = [o for o in self._seen if o != offset]
        self._line(dropped_again(url, offset, verdict, fetched_at))

    def event(self, kind: str, url: str, **fields: Any) -> None:
        """Append an event line about ``url`` (``kept``: see the module docstring)."""
        self._line({"event": kind, "url": url, "time": iso_now(), **fields})

    def seen(self, offset: int) -> None:
        """The page whose latest drop line starts at ``offset`` was fetched again unchanged: one mark in the next
        batched ``seen`` line (see the module docstring)."""
        self._seen.append(int(offset))
        if len(self._seen) >= SEEN_BATCH:
            self._write_seen()

    def _write_seen(self) -> None:
        if self._seen:
            self._line({"event": SEEN, "time": iso_now(), "lines": self._seen})
            self._seen = []

    def _line(self, obj: dict[str, Any]) -> int:
        """Write ``obj`` as a line; returns where the line starts. Told from where the write ended (the file is
        opened to append: another crawl appending to the same log moves the end, not this file's position)."""
        data = json.dumps(obj, ensure_ascii=False, default=str) + "\n"
        self._file.write(data)
        self._file.flush()
        return os.lseek(self._file.fileno(), 0, os.SEEK_CUR) - len(data.encode("utf-8"))

    def sync(self) -> None:
        """Flush and fsync (a checkpoint that must survive a power cut)."""
        self._write_seen()
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._write_seen()
            self._file.close()


def _torn(fd: int) -> bool:
    """Whether the log open (readable) at ``fd`` ends with a torn line: not empty, and no newline last."""
    size = os.fstat(fd).st_size
    return bool(size) and os.pread(fd, 1, size - 1) != b"\n"


def append_event(path: str | os.PathLike, event: dict[str, Any]) -> None:
    """Append one event line to the log with a single ``O_APPEND`` write, then fsync.

    When the file does not end with a newline (a torn last line), a newline goes first so the
    event never merges with it.
    """
    append_events(path, [event])


def append_events(path: str | os.PathLike, events: Iterable[dict[str, Any] | bytes]) -> None:
    """Append lines (drop lines or events) as :func:`append_event` does, with one write and one fsync; an
    event given as bytes is its JSON already (one line, as a reindex's work folder keeps it)."""
    data = b"".join((e if isinstance(e, bytes) else json.dumps(e, ensure_ascii=False, default=str).encode("utf-8"))
                    + b"\n" for e in events)
    if not data:
        return
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        if _torn(fd):
            data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


# -- rebuilding ------------------------------------------------------------------------------------
def page_from_item(item: dict[str, Any], page: dict[str, Any] | None = None) -> Page:
    """A :class:`~dedup.page.Page` of a logged item's ``url``, ``title`` and ``text`` (and its logged
    tagged fields ``page``), through :func:`dedup.sources.page_from_source`."""
    return page_from_source(Source.from_logged(item, page))
