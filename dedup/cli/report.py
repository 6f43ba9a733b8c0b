"""A static, self-contained HTML report of a crawl's dropped and flagged pages, to work in.

``dedup report [LOG] -o report.html --index URI`` writes one HTML file with its CSS, its
script and its charts inline (nothing is loaded from anywhere: open it from disk, attach it
to a ticket):

* a summary: groups, dropped / restored / flagged / kept counts, bar charts of the pages by
  status, rule and host, a histogram of their containment scores with t1 marked (t2 too when it
  decides, with ``decision = containment``), and what separates the statuses (:mod:`dedup.verdicts`);
* **filters** (kind, status, rule, host, score range, words of the URL, title or text), kept in
  the URL's ``#fragment`` so a view can be bookmarked; without JavaScript everything shows;
* the **groups**: each kept page (the one copies name in ``duplicate_of``) with its copies:
  the pages the crawl **dropped** (from the dropped log, :mod:`dedup.droplog`; ``restored``
  ones marked) and the kept pages **flagged** ``near_duplicate``/``duplicate`` (from the
  search index at ``--index``; left out, with a note, when there is none);
* for each near copy, a word-level difference from the kept page (:mod:`dedup.cli.worddiff`):
  two aligned columns in one scroll box, so both sides scroll together, identical runs
  collapsed to ``… 412 identical words …``; on a narrow screen the columns stack. An exact
  copy (the same words) is shown once, its opening words, with a note. The first
  :data:`EXPLAINED` near copies also get the sentence matching of :mod:`dedup.explain` (share of
  sentences matched, dotplot); each copy says why it has its status.

Nothing is embedded that the page does not show: the words of collapsed identical runs and the
rest of an exact copy's text are left out (``dedup dropped show URL`` prints both texts), and
the dotplots are SVG images without the hover titles an image never shows.

Every count is taken from the same list of pages the groups show: a restored page is counted
as restored, not as dropped, in the cards, the filters and the groups alike.

Texts are escaped; page URLs appear as plain links (nothing is loaded from them).
This module imports neither scrapy nor elasticsearch; ``index`` is imported lazily.
"""
from __future__ import annotations

import html
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import quote

from index import open_search

from ..droplog import DropLog, VerdictFields, host_of, page_from_item, read_log
from ..verdicts import legend, reason
from .summary import histogram
from .worddiff import diff_rows, tokens, words_html

__all__ = ["Pair", "Group", "ReportData", "collect", "render", "write_report", "bar_chart_svg", "histogram_svg"]

log = logging.getLogger(__name__)

FLAGGED = ("near_duplicate", "duplicate")
KINDS = ("dropped", "restored", "flagged")
#: near copies given the sentence matching (~25 ms each); the others name the command that gives it
EXPLAINED = 100
#: words of an exact copy's text shown (it is the kept page's text too)
PREVIEW_WORDS = 60
_ASSETS = Path(__file__).resolve().parent.parent / "data"


@dataclass
class Pair(VerdictFields):
    """One reported page (a copy) and the page it copies."""

    kind: str  # "dropped" (from the log) or "flagged" (from the search index)
    url: str
    title: str
    text: str
    verdict: dict[str, Any]
    state: str = "kept"  # dropped, restored, kept
    time: str = ""
    other: dict[str, Any] | None = None  # url, title, text of the page it copies
    other_source: str = ""
    note: str = ""
    has_text: bool = True  # False past --limit: counted and listed, text left out
    explained: bool | None = None  # a near copy given the sentence matching (True) or past EXPLAINED (False)

    @property
    def shown_kind(self) -> str:
        """``dropped``, ``restored`` or ``flagged``: what the cards count and the filter selects."""
        return "restored" if self.state == "restored" else self.kind


@dataclass
class Group:
    """A kept page and the copies that name it in ``duplicate_of``."""

    url: str
    copies: list[Pair] = field(default_factory=list)

    @property
    def page(self) -> dict[str, Any] | None:
        return next((c.other for c in self.copies if c.other is not None), None)

    @property
    def source(self) -> str:
        return next((c.other_source for c in self.copies if c.other is not None), "")


@dataclass
class ReportData:
    log_path: str
    index_uri: str
    dropped: list[Pair] = field(default_factory=list)
    flagged: list[Pair] = field(default_factory=list)
    kept: int | None = None  # documents in the search index, None when absent
    kept_by_status: dict[str, int] = field(default_factory=dict)
    index_note: str = ""
    log_problems: list[str] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def pairs(self) -> list[Pair]:
        return self.dropped + self.flagged

    @property
    def counts(self) -> dict[str, int]:
        """Pages by :attr:`Pair.shown_kind`, groups, and documents in the search index."""
        kinds = Counter(p.shown_kind for p in self.pairs)
        return {"dropped": kinds["dropped"], "restored": kinds["restored"], "flagged": kinds["flagged"],
                "groups": len(self.groups()), "kept": self.kept if self.kept is not None else 0}

    def groups(self) -> list[Group]:
        """Copies grouped by the page they copy, groups in order of their first copy (log
        order, then index order); a copy naming no page is a group of its own."""
        out: dict[str, Group] = {}
        for pair in self.pairs:
            key = pair.duplicate_of or f"\0{pair.url}"
            out.setdefault(key, Group(pair.duplicate_of or "")).copies.append(pair)
        return list(out.values())


# -- gathering ------------------------------------------------------------------------------------
def _open_search(uri: str):
    return open_search(uri, readonly=True)  # never creates an index


def collect(log_path: str | Path, index_uri: str, *, limit: int | None = None) -> ReportData:
    """Read the log and the search index into a :class:`ReportData` (no explanation yet).

    Every page is counted; only the first ``limit`` of each section (all when None) get their
    texts and the page they copy (so a large log is not held in memory)."""
    droplog: DropLog = read_log(log_path)
    data = ReportData(str(log_path), index_uri, log_problems=[str(p) for p in droplog.problems])
    search = None
    try:
        search = _open_search(index_uri)
    except FileNotFoundError as exc:
        data.index_note = f"No search index at {index_uri} ({exc}): flagged pages are not included."
    except Exception as exc:  # noqa: BLE001 - an unreachable backend must not stop the report
        data.index_note = (f"The search index {index_uri} could not be opened ({type(exc).__name__}: {exc}): "
                           "flagged pages are not included.")
    try:
        if search is not None:
            try:
                statuses: Counter[str] = Counter()
                for doc in search.iter_docs():
                    verdict = doc.get("dedup") or {}
                    statuses[str(verdict.get("status") or "unknown")] += 1
                    if verdict.get("status") in FLAGGED:
                        full = limit is None or len(data.flagged) < limit
                        data.flagged.append(Pair("flagged", doc.get("url") or "", doc.get("title") or "",
                                                 (doc.get("text") or "") if full else "", verdict, "kept",
                                                 has_text=full))
                data.kept = sum(statuses.values())
                data.kept_by_status = dict(statuses.most_common())
            except Exception as exc:  # noqa: BLE001
                data.flagged, data.kept = [], None
                data.index_note = (f"Reading the search index {index_uri} failed ({type(exc).__name__}: {exc}): "
                                   "flagged pages are not included.")
        # a dropped page kept when fetched again is in the index now (flagged or unique), not dropped
        for n, entry in enumerate(e for e in droplog.entries if e.state != "kept"):
            full = limit is None or n < limit
            item = droplog.item(entry) if full else {}
            data.dropped.append(Pair("dropped", entry.url, str(item.get("title") or entry.title),
                                     str(item.get("text") or ""), entry.verdict, entry.state, entry.time,
                                     has_text=full))
        for pair in data.dropped + data.flagged:
            if not data.thresholds and pair.verdict.get("thresholds"):
                data.thresholds = dict(pair.verdict["thresholds"])
        found: dict[str, tuple[dict[str, Any] | None, str, str]] = {}  # one lookup per kept page
        for section in (data.dropped, data.flagged):
            for pair in section if limit is None else section[:limit]:
                _find_other(pair, search, droplog, found)
    finally:
        if search is not None:
            search.close()
    return data


def _find_other(pair: Pair, search: Any, droplog: DropLog,
                found: dict[str, tuple[dict[str, Any] | None, str, str]]) -> None:
    # compared with the page it was matched with; the group is its root's (duplicate_of)
    target = pair.verdict.get("nearest") or pair.verdict.get("duplicate_of")
    if not target:
        pair.note = "The verdict names no page it copies."
        return
    if target not in found:
        _lookup(pair, target, search, droplog)
        found[target] = (pair.other, pair.other_source, pair.note)
    pair.other, pair.other_source, pair.note = found[target]
    if target != pair.verdict.get("duplicate_of"):
        pair.note = " ".join(filter(None, [f"Matched with {target}, itself a copy in this group.", pair.note]))


def _lookup(pair: Pair, target: str, search: Any, droplog: DropLog) -> None:
    if search is not None:
        try:
            doc = search.get(target)
        except Exception as exc:  # noqa: BLE001
            doc = None
            pair.note = f"Search index lookup failed ({type(exc).__name__}: {exc})."
        if doc is not None:
            pair.other, pair.other_source = doc, "search index"
            return
    item = droplog.find_item(target)
    if item is not None:
        pair.other, pair.other_source = item, "dropped log"
        return
    pair.note = "The page it copies is in neither the search index nor the dropped log."


# -- charts ---------------------------------------------------------------------------------------
_PALETTE = {"exact_duplicate": "#c0392b", "duplicate": "#e67e22", "near_duplicate": "#f1c40f",
            "restored": "#27ae60", "unique": "#7f8c8d"}
_BAR = "#4c78a8"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _link(url: Any) -> str:
    """A link to an http(s) URL; anything else (a tampered log's ``javascript:``) as plain text."""
    url = str(url or "")
    if url.lower().startswith(("http://", "https://")):
        return f'<a href="{_e(url)}">{_e(url)}</a>'
    return f"<code>{_e(url)}</code>"


def bar_chart_svg(title: str, items: Sequence[tuple[str, int]], *, width: int = 440, bar_height: int = 18,
                  label_width: int = 190, colors: dict[str, str] | None = None) -> str:
    """A horizontal bar chart as an inline ``<svg>`` element (labels, bars, counts)."""
    colors = colors or {}
    gap, top = 6, 24
    height = top + max(len(items), 1) * (bar_height + gap) + 4
    most = max((n for _, n in items), default=0)
    room = width - label_width - 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
           f'<text x="0" y="15" class="chart-title">{_e(title)}</text>']
    if not items:
        out.append(f'<text x="0" y="{top + 14}" class="chart-empty">none</text>')
    for i, (label, n) in enumerate(items):
        y = top + i * (bar_height + gap)
        w = 0 if not most else max(round(n / most * room), 1 if n else 0)
        color = colors.get(label.split(" ")[0], _BAR)
        out.append(f'<g><title>{_e(label)}: {n}</title>'
                   f'<text x="{label_width - 6}" y="{y + bar_height - 5}" text-anchor="end" class="chart-label">'
                   f'{_e(_cut(label, 30))}</text>'
                   f'<rect x="{label_width}" y="{y}" width="{w}" height="{bar_height}" fill="{color}" rx="2"/>'
                   f'<text x="{label_width + w + 5}" y="{y + bar_height - 5}" class="chart-count">{n}</text></g>')
    out.append("</svg>")
    return "".join(out)


def histogram_svg(title: str, scores: Iterable[float], *, bins: int = 10, width: int = 440, height: int = 200,
                  marks: dict[str, float] | None = None) -> str:
    """A histogram of scores in [0, 1] as an inline ``<svg>``, with dashed lines at ``marks``."""
    counts = histogram(list(scores), bins)
    left, right, top, bottom = 30, 10, 28, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    most = max((c for _, _, c in counts), default=0)
    bw = plot_w / bins
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
           f'<text x="0" y="15" class="chart-title">{_e(title)}</text>',
           f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" class="axis"/>']
    for i, (lo, hi, c) in enumerate(counts):
        h = 0 if not most else round(c / most * (plot_h - 14))
        x = left + i * bw
        out.append(f'<g><title>[{lo:.2f}, {hi:.2f}{"]" if i == bins - 1 else ")"}: {c}</title>'
                   f'<rect x="{x + 1:.1f}" y="{top + plot_h - h}" width="{bw - 2:.1f}" height="{h}" fill="{_BAR}"/>'
                   + (f'<text x="{x + bw / 2:.1f}" y="{top + plot_h - h - 3}" text-anchor="middle" '
                      f'class="chart-count">{c}</text>' if c else "") + "</g>")
    for k in range(0, bins + 1, max(bins // 5, 1)):
        x = left + k * bw
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 14}" text-anchor="middle" class="chart-label">'
                   f'{k / bins:.1f}</text>')
    for name, value in (marks or {}).items():
        if isinstance(value, (int, float)) and 0 <= value <= 1:
            x = left + value * plot_w
            out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" class="mark-line"/>'
                       f'<text x="{x + 3:.1f}" y="{top + 9}" class="chart-label">{_e(name)}={value:g}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" class="chart-label">'
               'containment (content_hash drops count as 1.0)</text></svg>')
    return "".join(out)


# -- rendering ------------------------------------------------------------------------------------
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _status_badge(status: str) -> str:
    return f'<span class="badge s-{_e(status)}">{_e(status.replace("_", " ") or "no status")}</span>'


def _kind_badge(kind: str) -> str:
    return f'<span class="badge k-{_e(kind)}">{_e(kind)}</span>'


def _fmt_score(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def _num(value: Any) -> str:
    """A score or threshold as printed: 4 places at most (an angle of 35.99999999999999 is 36)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{round(float(value), 4):g}"


def _time(value: str) -> str:
    return value.replace("T", " ")[:19] + " UTC" if value else ""


def _same_words(a: str, b: str) -> bool:
    return tokens(a) == tokens(b)


def _meta(pair: Pair, tag: str = "p") -> str:
    verdict = pair.verdict
    scores = verdict.get("scores") or {}
    meta = [f"rule <code>{_e(pair.rule or '-')}</code>"]
    for key in ("containment", "resemblance", "tdw_cosine", "mrc", "hamming", "chunks", "angle"):
        if isinstance(scores.get(key), (int, float)) and not isinstance(scores.get(key), bool):
            meta.append(f"{key} {_num(scores[key])}")
    why = scores.get("decision")
    if isinstance(why, dict) and why.get("signals"):  # the calibrated decision: p and what moved it most
        meta.append(f"decision p {_num(why.get('p'))} by {_e(', '.join(map(str, why['signals'])))}")
    if pair.time:
        meta.append(f"{'dropped' if pair.kind == 'dropped' else 'seen'} {_e(_time(pair.time))}")
    why = reason(verdict, why_copy=False)
    if why and tag == "span":  # inside a note: one more item of the line
        meta.append(_e(why))
    return f'<{tag} class="meta">{" · ".join(meta)}</{tag}>' + (f'<p class="why">{_e(why)}</p>' if why and tag != "span"
                                                                else "")


def _sentences(pair: Pair, explain: Callable | None, dotplot_svg: Callable | None) -> str:
    """Sentence matching of a near copy against its kept page (share matched, dotplot)."""
    if explain is None or pair.other is None:
        return ""
    try:
        page_a = page_from_item({"url": pair.url, "title": pair.title, "text": pair.text})
        page_b = page_from_item({"url": pair.other.get("url") or pair.duplicate_of,
                                 "title": pair.other.get("title"), "text": pair.other.get("text")})
        e = explain(page_a, page_b)
    except Exception as exc:  # noqa: BLE001 - one bad pair must not stop the report
        log.warning("explaining %s failed: %s", pair.url, exc, exc_info=True)
        return f'<p class="note">Sentence matching failed ({_e(type(exc).__name__)}: {_e(exc)}).</p>'
    line = (f"sentences: {e.matched_a} of {len(e.sentences_a)} of this copy match one of the kept page "
            f"(fuzzy-set EQ; {e.matched_b} of {len(e.sentences_b)} the other way)")
    plot = ""
    if dotplot_svg is not None:
        uri = "data:image/svg+xml," + quote(dotplot_svg(e), safe=" =:/,.-'()")
        plot = (f'<figure class="dotplot"><img class="dotplot" src="{uri}" alt="dotplot of matched sentences">'
                '<figcaption>a dot for each matched pair of sentences; x: this copy, y: the kept page '
                '(a diagonal is a copy). <code>dedup explain</code> prints the pairs.</figcaption></figure>')
    return f'<details class="more sentences"><summary>{_e(line)}</summary>{plot}</details>'


def _comparison(pair: Pair, explain: Callable | None, dotplot_svg: Callable | None) -> str:
    if explain is not None and pair.explained is False:
        explain = None
    if not pair.has_text:
        return (_meta(pair) + '<p class="note">Text not included (past <code>--limit</code>); counted and '
                'filtered all the same.</p>')
    if pair.other is None:
        return (_meta(pair) + f'<p class="note">{_e(pair.note or "The page it copies is not available.")}</p>'
                + _text_once(pair.text))
    kept_text = str(pair.other.get("text") or "")
    words = len([t for t in tokens(pair.text) if t != "\n"])
    if _same_words(kept_text, pair.text):
        return (f'<p class="note exact">Exact copy: the same {words} words as the kept page, which begins as below. '
                f'{_meta(pair, "span")}</p>' + _text_once(pair.text))
    diff = diff_rows(kept_text, pair.text)
    lead = ""
    if pair.rule == "content_hash":
        lead = ('<p class="note exact">Exact copy after normalisation (case, punctuation, spacing): the words '
                'differ only in these.</p>')
    cells = ['<div class="h">kept page</div><div class="h">this copy</div>']
    for row in diff.rows:
        if row.kind == "same":
            cells.append(f'<div class="same">{row.left}</div>')
        else:
            cells.append(f'<div class="l{" empty" if not row.left else ""}">{row.left}</div>'
                         f'<div class="r{" empty" if not row.right else ""}">{row.right}</div>')
    summary = (f'<p class="meta">{diff.same_words} words in common; the kept page has {diff.kept_words}, '
               f'this copy {diff.copy_words}. <del>struck</del>: only on the kept page, '
               f'<ins>green</ins>: only in this copy.</p>')
    more = ("" if explain is not None or pair.explained is None else
            f'<p class="note">Sentence matching: <code>dedup explain {_e(pair.url)}</code> (the report gives it '
            f'for the first {EXPLAINED} near copies).</p>')
    return (_meta(pair) + lead + summary + f'<div class="diff" role="table" aria-label="word difference">{"".join(cells)}</div>'
            + _sentences(pair, explain, dotplot_svg) + more)


def _text_once(text: str) -> str:
    """The opening words of a text shown once (an exact copy's: the kept page's too)."""
    toks = tokens(text)
    words = [t for t in toks if t != "\n"]
    if not words:
        return ""
    shown, n = [], 0
    for t in toks:
        n += t != "\n"
        if n > PREVIEW_WORDS:
            break
        shown.append(t)
    rest = (f' <span class="meta">… {len(words) - PREVIEW_WORDS} more words</span>'
            if len(words) > PREVIEW_WORDS else "")
    return f'<div class="text">{words_html(shown)}{rest}</div>'


def _copy_html(pair: Pair, cid: str, explain: Callable | None, dotplot_svg: Callable | None) -> str:
    kind = pair.shown_kind
    score = pair.score
    attrs = (f'data-kind="{kind}" data-status="{_e(pair.status)}" data-rule="{_e(pair.rule)}" '
             f'data-host="{_e(host_of(pair.url))}" data-score="{"" if score is None else f"{score:.4f}"}"')
    title = f'<span class="copy-title">{_e(_cut(pair.title, 140))}</span>' if pair.title else ""
    line = (f'{_kind_badge(kind)} {_status_badge(pair.status)} {_link(pair.url)} '
            f'<span class="score">score {_fmt_score(score)}</span>')
    if not pair.has_text:  # listed, counted and filtered; its verdict and texts are a command away
        return (f'<article class="copy listed" id="{cid}" {attrs}><p>{line} <span class="meta">(past --limit)'
                f'</span>{title}</p></article>')
    head = f"<summary>{line}{title}</summary>"
    body = _comparison(pair, explain, dotplot_svg)
    return f'<article class="copy" id="{cid}" {attrs}><details open>{head}<div class="body">{body}</div></details></article>'


def _group_html(group: Group, gid: str, explain: Callable | None, dotplot_svg: Callable | None,
                tick: Callable[[], None]) -> str:
    page = group.page
    kinds = Counter(c.shown_kind for c in group.copies)
    count = ", ".join(f"{n} {k}" for k in KINDS for n in [kinds[k]] if n)
    if group.url:
        status = str(((page or {}).get("dedup") or {}).get("status") or "") if page else ""
        where = f" · from the {_e(group.source)}" if group.source else " · not found in the index or the log"
        head = (f'<div class="group-head"><a class="anchor" href="#{gid}" title="link to this group">#</a> '
                f'<span class="badge k-kept">kept</span> <span class="kept">{_link(group.url)}</span>'
                + (f'<p class="title">{_e(page.get("title") or "")}</p>' if page and page.get("title") else "")
                + f'<p class="meta">{len(group.copies)} {"copy" if len(group.copies) == 1 else "copies"}: {count}'
                + (f" · its own verdict {_e(status)}" if status else "") + f"{where}</p></div>")
    else:
        head = '<div class="group-head"><p class="meta">A copy whose verdict names no kept page</p></div>'
    parts = [f'<section class="group" id="{gid}">{head}']
    for n, pair in enumerate(group.copies, 1):
        parts.append(_copy_html(pair, f"{gid}-{n}", explain, dotplot_svg))
        tick()
    parts.append("</section>")
    return "".join(parts)


def _select(name: str, label: str, counts: Counter) -> str:
    options = "".join(f'<option value="{_e(v)}">{_e(v or "(none)")} ({n})</option>'
                      for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return (f'<label class="field"><span class="lbl">{label}</span><select name="{name}">'
            f'<option value="">any</option>{options}</select></label>')


def _filters(data: ReportData) -> str:
    pairs = data.pairs
    kinds = Counter(p.shown_kind for p in pairs)
    boxes = "".join(f'<label><input type="checkbox" name="kind" value="{k}" checked> {k} '
                    f'<span class="meta" id="k-{k}">({kinds[k]})</span></label>' for k in KINDS)
    return ('<form id="filters" class="filters" role="search" aria-label="filter the pages">'
            f'<fieldset><legend>show</legend>{boxes}</fieldset>'
            + _select("status", "status", Counter(p.status for p in pairs))
            + _select("rule", "rule", Counter(p.rule for p in pairs))
            + _select("host", "host", Counter(host_of(p.url) for p in pairs))
            + '<div class="field"><span class="lbl">score (containment)</span><span class="range">'
              '<input type="number" name="min" min="0" max="1" step="0.05" placeholder="0" aria-label="lowest score">'
              '\u2013<input type="number" name="max" min="0" max="1" step="0.05" placeholder="1" '
              'aria-label="highest score"></span></div>'
              '<label class="field q"><span class="lbl">search</span><input type="search" name="q" '
              'placeholder="words of the URL, title or text"></label>'
              '<button type="button" id="reset">reset</button></form>')


def render(data: ReportData, *, limit: int | None = 200, title: str = "Dedup report",
           progress: Callable[[int, int], None] | None = None,
           explainer: tuple[Callable, Callable] | None = None) -> str:
    """The report's HTML.  ``limit``: pages shown with their texts per section (None: all; the
    others are counted, grouped and filtered without text).  ``explainer``: ``(explain,
    dotplot_svg)``, by default those of :mod:`dedup.explain`; ``(None, None)`` leaves the
    sentence matching out."""
    if explainer is None:
        from ..explain import dotplot_svg as svg, explain as explain_pair
        from ..explain.sentences import Refiner, default_tables

        tables, refiner = default_tables(), Refiner()  # made once for every pair of the report

        def explain(a: Any, b: Any) -> Any:
            return explain_pair(a, b, tables=tables, refiner=refiner)

        def dotplot_svg(e: Any) -> str:
            return svg(e, tips=False)  # shown as an image, which shows no hover titles
    else:
        explain, dotplot_svg = explainer
    counts = data.counts
    everything = data.pairs
    groups = data.groups()
    status_items: Counter[str] = Counter(f"{p.status} ({p.shown_kind})" for p in everything)
    for status, n in data.kept_by_status.items():
        if status not in FLAGGED and status != "restored":  # restored pages are counted from the log
            status_items[f"{status} (kept)"] += n
    rules = Counter(p.rule for p in everything)
    hosts = Counter(host_of(p.url) for p in everything)
    host_items = hosts.most_common(15)
    if len(hosts) > 15:
        host_items.append((f"{len(hosts) - 15} other hosts", sum(n for _, n in hosts.most_common()[15:])))
    scores = [s for s in (p.score for p in everything) if s is not None]
    # t2 is a threshold only when the containment rule decides; the calibrated decision flags below it
    logit = str(data.thresholds.get("decision", "")).startswith("logit")
    marks = {k: data.thresholds[k] for k in (("t1",) if logit else ("t2", "t1")) if k in data.thresholds}
    charts = [
        bar_chart_svg("Pages by status", status_items.most_common(), colors=_PALETTE),
        bar_chart_svg("Dropped and flagged pages by rule", rules.most_common()),
        bar_chart_svg("Dropped and flagged pages by host", host_items),
        histogram_svg(f"Containment scores ({len(scores)} pages)", scores, marks=marks),
    ]
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_asset('report.css')}</style></head><body>",
        f'<header><h1>{_e(title)}</h1><p class="meta">dropped log <code>{_e(data.log_path)}</code> · '
        f'index <code>{_e(data.index_uri)}</code> · generated {generated}</p></header>',
        '<section id="summary"><h2>Summary</h2><div class="cards">',
    ]
    for key, label in (("groups", "groups (kept pages with copies)"), ("dropped", "dropped pages"),
                       ("restored", "restored pages"), ("flagged", "flagged pages (kept near copies)"),
                       ("kept", "pages in the search index")):
        value = counts[key] if not (key == "kept" and data.kept is None) else "\u2013"
        out.append(f'<div class="card"><span class="n" id="n-{key}">{value}</span>'
                   f'<span class="l">{_e(label)}</span></div>')
    out.append("</div>")
    if data.index_note:
        out.append(f'<p class="note" id="index-note">{_e(data.index_note)}</p>')
    if data.log_problems:
        shown = "; ".join(data.log_problems[:10]) + ("; ..." if len(data.log_problems) > 10 else "")
        out.append(f'<p class="note" id="log-note">{len(data.log_problems)} bad lines of the dropped log were '
                   f'skipped: {_e(shown)}</p>')
    if data.thresholds:
        out.append('<p class="meta">thresholds: ' + " · ".join(f"{_e(k)} {_e(_num(v))}" for k, v in
                                                           data.thresholds.items() if v is not None) + "</p>")
        out.append(f'<p class="meta" id="legend">{_e(legend(data.thresholds))}'
                   + (" (no containment threshold: t2 is not used)" if logit else "") + "</p>")
    out.append('<div class="charts">' + "".join(f"<figure>{c}</figure>" for c in charts) + "</div></section>")

    out.append(f'<section id="groups"><h2>Groups ({len(groups)})</h2>')
    if not everything:
        out.append(f'<p class="note">No page was dropped{"" if data.index_note else " or flagged"}.</p>')
    else:
        out.append(_filters(data))
        out.append(f'<p id="shown" aria-live="polite" data-pages="{len(everything)}" data-groups="{len(groups)}">'
                   f"Showing <b>{len(everything)}</b> of {len(everything)} pages in <b>{len(groups)}</b> of "
                   f"{len(groups)} groups.</p>")
        out.append('<p class="note" id="none" hidden>No page matches these filters.</p>')
        listed = sum(1 for p in everything if not p.has_text)
        if listed:
            out.append(f'<p class="note" id="listed">{listed} pages past <code>--limit {limit}</code> (per section) are '
                       'listed without their verdicts and texts: <code>dedup dropped show URL</code> gives a dropped '
                       "page's, <code>dedup explain URL</code> a flagged one's, <code>--limit 0</code> all.</p>")
        done = [0]

        def tick() -> None:
            done[0] += 1
            if progress:
                progress(done[0], len(everything))

        near = [p for g in groups for p in g.copies
                if p.has_text and p.other is not None and not _same_words(str(p.other.get("text") or ""), p.text)]
        for n, pair in enumerate(near):
            pair.explained = n < EXPLAINED
        for n, group in enumerate(groups, 1):
            out.append(_group_html(group, f"g{n}", explain, dotplot_svg, tick))
    out.append("</section>")
    out.append('<footer><p class="meta">scrapy-dedup report: one static file, its style and script inline, '
               'nothing loaded from elsewhere; filters keep their state in the address (#...).</p></footer>')
    out.append(f"<script>{_asset('report.js')}</script></body></html>")
    return "\n".join(out)


def write_report(log_path: str | Path, out: str | Path, index_uri: str, *, limit: int | None = 200,
                 title: str = "Dedup report", progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Collect, render and write the report to ``out`` (atomically); returns its counts."""
    data = collect(log_path, index_uri, limit=limit)
    page = render(data, limit=limit, title=title, progress=progress)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    result: dict[str, Any] = dict(data.counts)
    result.update(path=str(out), bytes=len(page.encode("utf-8")), index_note=data.index_note or None,
                  bad_log_lines=len(data.log_problems))
    return result
