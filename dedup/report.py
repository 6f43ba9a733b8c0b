"""A static, self-contained HTML report of a crawl's dropped and flagged pages.

``dedup report LOG -o report.html --index URI`` writes one HTML file with inline CSS and inline
SVG (no external assets, no JavaScript):

* a summary: dropped / restored / flagged / kept counts, bar charts of the pages by status, rule
  and host, and a histogram of their containment scores with the t2/t1 thresholds marked;
* the **dropped** pages, from the dropped log (:mod:`dedup.droplog`; restored ones are marked);
* the **flagged** pages (kept ``near_duplicate`` / ``duplicate``), from the search index at
  ``--index`` (``iter_docs()``); left out, with a note, when the index is absent;
* for each page, its text beside the page it copies (``duplicate_of``: the search index first,
  then the log), the matched sentences highlighted with ``<mark>`` (each mark links to the
  sentence it matches on the other side), and the pair's dotplot as an ``<img>`` holding an SVG
  ``data:`` URI.  Sentence matching and dotplots come from :mod:`dedup.explain`.

Texts are escaped; page URLs appear as plain links (nothing is loaded from them).
This module imports neither scrapy nor elasticsearch; ``index`` is imported lazily.
"""
from __future__ import annotations

import base64
import html
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .droplog import DropLog, VerdictFields, histogram, host_of, page_from_item, read_log

__all__ = ["Pair", "ReportData", "collect", "render", "write_report", "bar_chart_svg", "histogram_svg"]

log = logging.getLogger(__name__)

FLAGGED = ("near_duplicate", "duplicate")


@dataclass
class Pair(VerdictFields):
    """One reported page and the page it copies."""

    kind: str  # "dropped" or "flagged"
    url: str
    title: str
    text: str
    verdict: dict[str, Any]
    state: str = "kept"  # dropped, restored, kept
    time: str = ""
    other: dict[str, Any] | None = None  # url, title, text of the page it copies
    other_source: str = ""
    note: str = ""


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
    def counts(self) -> dict[str, int]:
        return {
            "dropped": sum(1 for p in self.dropped if p.state == "dropped"),
            "restored": sum(1 for p in self.dropped if p.state == "restored"),
            "flagged": len(self.flagged),
            "kept": self.kept if self.kept is not None else 0,
        }


# -- gathering ------------------------------------------------------------------------------------
def _open_search(uri: str):
    from index import open_search  # lazy: dedup's modules do not import index

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
                                                 (doc.get("text") or "") if full else "", verdict, "kept"))
                data.kept = sum(statuses.values())
                data.kept_by_status = dict(statuses.most_common())
            except Exception as exc:  # noqa: BLE001
                data.flagged, data.kept = [], None
                data.index_note = (f"Reading the search index {index_uri} failed ({type(exc).__name__}: {exc}): "
                                   "flagged pages are not included.")
        for n, entry in enumerate(droplog.entries):
            item = droplog.item(entry) if limit is None or n < limit else {}
            data.dropped.append(Pair("dropped", entry.url, str(item.get("title") or entry.title),
                                     str(item.get("text") or ""), entry.verdict, entry.state, entry.time))
        for pair in data.dropped + data.flagged:
            if not data.thresholds and pair.verdict.get("thresholds"):
                data.thresholds = dict(pair.verdict["thresholds"])
        for section in (data.dropped, data.flagged):
            for pair in section if limit is None else section[:limit]:
                _find_other(pair, search, droplog, index_uri)
    finally:
        if search is not None:
            search.close()
    return data


def _find_other(pair: Pair, search: Any, droplog: DropLog, uri: str) -> None:
    target = pair.verdict.get("duplicate_of")
    if not target:
        pair.note = "The verdict names no page it copies."
        return
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
_CSS = """
:root { --fg: #1d232a; --muted: #5b6770; --line: #d5dbe0; --bg: #f6f8fa; --mark: #ffe066; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg);
       margin: 0 auto; max-width: 1280px; padding: 1rem 1.5rem 3rem; }
h1 { margin: .2rem 0; font-size: 1.6rem; } h2 { border-bottom: 2px solid var(--line); padding-bottom: .2rem;
     margin-top: 2rem; } h4 { margin: .2rem 0; font-size: .95rem; }
a { color: #1f5f99; overflow-wrap: anywhere; }
.meta, .note, figcaption { color: var(--muted); font-size: .85rem; }
.note { background: var(--bg); border-left: 4px solid #e0a800; padding: .4rem .7rem; }
.cards { display: flex; flex-wrap: wrap; gap: .8rem; margin: 1rem 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .5rem 1rem; min-width: 9rem; background: var(--bg); }
.card .n { display: block; font-size: 1.8rem; font-weight: 700; }
.card .l { color: var(--muted); font-size: .85rem; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2rem; }
.charts figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: .6rem; }
.chart-title { font: 600 13px system-ui, sans-serif; fill: var(--fg); }
.chart-label, .chart-count, .chart-empty { font: 11px system-ui, sans-serif; fill: #333; }
.axis { stroke: #888; } .mark-line { stroke: #c0392b; stroke-dasharray: 4 3; }
table.toc { border-collapse: collapse; width: 100%; font-size: .85rem; margin-bottom: 1rem; }
table.toc th, table.toc td { border-bottom: 1px solid var(--line); padding: .2rem .4rem; text-align: left; vertical-align: top; }
table.toc td.num { text-align: right; font-variant-numeric: tabular-nums; }
details.pair { border: 1px solid var(--line); border-radius: 6px; margin: .8rem 0; padding: .4rem .8rem; }
details.pair > summary { cursor: pointer; font-weight: 600; }
.badge { display: inline-block; border-radius: 3px; padding: 0 .4rem; font-size: .75rem; color: #fff;
         background: #7f8c8d; font-weight: 600; vertical-align: 1px; }
.s-exact_duplicate { background: #c0392b; } .s-duplicate { background: #d35400; }
.s-near_duplicate { background: #b7950b; } .s-restored { background: #27ae60; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; margin-top: .5rem; }
.col { min-width: 0; } .col .title { font-weight: 600; margin: .2rem 0; }
.text { font-size: .9rem; max-height: 32rem; overflow: auto; border: 1px solid var(--line); padding: .5rem;
        background: #fff; }
mark { background: var(--mark); color: inherit; padding: 0 1px; }
mark a { color: inherit; text-decoration: none; }
figure.dotplot { margin: .6rem 0 .2rem; } figure.dotplot img { width: 360px; max-width: 100%; height: auto; border: 1px solid var(--line);
        background: #fff; }
@media (max-width: 800px) { .cols { grid-template-columns: 1fr; } }
@media print { details.pair { break-inside: avoid; } .text { max-height: none; overflow: visible; } }
"""


def _status_badge(status: str) -> str:
    return f'<span class="badge s-{_e(status)}">{_e(status.replace("_", " "))}</span>'


def _fmt_score(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def _time(value: str) -> str:
    return value.replace("T", " ")[:19] + " UTC" if value else ""


def _paragraph_starts(text: str, sentences: Sequence[str]) -> set[int]:
    """Indices of the sentences that begin a line of ``text`` (found in order; a sentence not
    found verbatim starts nothing)."""
    starts, pos = set(), 0
    for i, sentence in enumerate(sentences):
        at = text.find(sentence, pos)
        if at < 0:
            continue
        if i and "\n" in text[pos:at]:
            starts.add(i)
        pos = at + len(sentence)
    return starts


def _sentences_html(pid: str, side: str, other_side: str, sentences: Sequence[str],
                    matched: dict[int, tuple[int, float]], text: str = "") -> str:
    parts = []
    breaks = _paragraph_starts(text, sentences) if text else set()
    for i, sentence in enumerate(sentences):
        if i in breaks:
            parts.append("<br>")
        sid = f"{pid}-{side}{i}"
        if i in matched:
            j, score = matched[i]
            parts.append(f'<mark id="{sid}" title="matches sentence {j + 1} of the other page (score {score:.2f})">'
                         f'<a href="#{pid}-{other_side}{j}">{_e(sentence)}</a></mark>')
        else:
            parts.append(f'<span id="{sid}">{_e(sentence)}</span>')
    return " ".join(parts)


def _best_matches(matches: Iterable[Sequence[Any]]) -> tuple[dict[int, tuple[int, float]], dict[int, tuple[int, float]]]:
    """For each matched sentence of either side, its best partner on the other side."""
    a: dict[int, tuple[int, float]] = {}
    b: dict[int, tuple[int, float]] = {}
    for m in matches:
        i, j = int(m[0]), int(m[1])
        s = float(m[2]) if len(m) > 2 else 1.0
        if i not in a or s > a[i][1]:
            a[i] = (j, s)
        if j not in b or s > b[j][1]:
            b[j] = (i, s)
    return a, b


def _plain_sentences(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _pair_html(pair: Pair, pid: str, explain: Callable | None, dotplot_svg: Callable | None) -> str:
    verdict = pair.verdict
    scores = verdict.get("scores") or {}
    state = "" if pair.state in ("dropped", "kept") else " " + _status_badge("restored")
    head = (f'<summary>{_status_badge(pair.status)}{state} {_link(pair.url)} '
            f'<span class="meta">score {_fmt_score(pair.score)}</span></summary>')
    meta = [f"rule <code>{_e(pair.rule)}</code>"]
    if verdict.get("duplicate_of"):
        meta.append(f'copy of {_link(verdict["duplicate_of"])}')
    for key in ("containment", "resemblance", "tdw_cosine", "mrc", "hamming", "chunks"):
        if isinstance(scores.get(key), (int, float)):
            meta.append(f"{key} {scores[key]}")
    if pair.time:
        meta.append(f"dropped {_e(_time(pair.time))}")
    body = [head, f'<p class="meta">{" · ".join(meta)}</p>']
    a_sentences, b_sentences = _plain_sentences(pair.text), []
    match_a: dict[int, tuple[int, float]] = {}
    match_b: dict[int, tuple[int, float]] = {}
    dotplot = ""
    note = pair.note
    if pair.other is not None:
        b_sentences = _plain_sentences(str(pair.other.get("text") or ""))
        if explain is not None:
            try:
                page_a = page_from_item({"url": pair.url, "title": pair.title, "text": pair.text})
                page_b = page_from_item({"url": pair.other.get("url") or verdict.get("duplicate_of"),
                                         "title": pair.other.get("title"), "text": pair.other.get("text")})
                explanation = explain(page_a, page_b)
                a_sentences, b_sentences = list(explanation.sentences_a), list(explanation.sentences_b)
                match_a, match_b = _best_matches(explanation.matches)
                if dotplot_svg is not None:
                    svg = dotplot_svg(explanation)
                    uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
                    dotplot = (f'<figure class="dotplot"><img class="dotplot" src="{uri}" '
                               f'alt="dotplot: sentences of this page against the page it copies">'
                               f'<figcaption>dotplot: a dot for each matched pair of sentences; x: this page, '
                               f'y: the page it copies (a diagonal is a copy)</figcaption></figure>')
            except Exception as exc:  # noqa: BLE001 - one bad pair must not stop the report
                log.warning("explaining %s failed: %s", pair.url, exc, exc_info=True)
                note = (note + " " if note else "") + f"Sentence matching failed ({type(exc).__name__}: {exc})."
    matched_line = (f"{len(match_a)} of {len(a_sentences)} sentences of this page matched; "
                    f"{len(match_b)} of {len(b_sentences)} of the page it copies" if pair.other is not None else "")
    if matched_line:
        body.append(f'<p class="meta">{matched_line}</p>')
    if note:
        body.append(f'<p class="note">{_e(note)}</p>')
    left = (f'<div class="col"><h4>This page ({_e(pair.kind)})</h4><p class="title">{_e(pair.title)}</p>'
            f'<div class="text">{_sentences_html(pid, "a", "b", a_sentences, match_a, pair.text)}</div></div>')
    if pair.other is not None:
        other_url = pair.other.get("url") or verdict.get("duplicate_of") or ""
        right = (f'<div class="col"><h4>The page it copies (from the {_e(pair.other_source)})</h4>'
                 f'<p class="title">{_e(pair.other.get("title") or "")}</p>'
                 f'<p class="meta">{_link(other_url)}</p>'
                 f'<div class="text">'
                 f'{_sentences_html(pid, "b", "a", b_sentences, match_b, str(pair.other.get("text") or ""))}'
                 '</div></div>')
    else:
        right = '<div class="col"><h4>The page it copies</h4><p class="meta">not available</p></div>'
    body.append(f'<div class="cols">{left}{right}</div>')
    if dotplot:
        body.append(dotplot)
    return f'<details class="pair" id="{pid}" open>{"".join(body)}</details>'


def _toc(pairs: Sequence[Pair], prefix: str) -> str:
    rows = []
    for n, p in enumerate(pairs, 1):
        state = " (restored)" if p.state == "restored" else ""
        rows.append(f'<tr><td class="num">{n}</td><td>{_status_badge(p.status)}{_e(state)}</td>'
                    f'<td><a href="#{prefix}-{n}">{_e(p.url)}</a></td><td>{_e(p.rule)}</td>'
                    f'<td class="num">{_fmt_score(p.score)}</td></tr>')
    return ('<table class="toc"><thead><tr><th>#</th><th>status</th><th>page</th><th>rule</th>'
            f'<th>score</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def render(data: ReportData, *, limit: int | None = 200, title: str = "Dedup report",
           progress: Callable[[int, int], None] | None = None,
           explainer: tuple[Callable, Callable] | None = None) -> str:
    """The report's HTML.  ``limit``: pages shown with their texts per section (None: all);
    the summary always counts everything.  ``explainer``: ``(explain, dotplot_svg)``, by default
    those of :mod:`dedup.explain`."""
    if explainer is None:
        from .explain import dotplot_svg, explain
    else:
        explain, dotplot_svg = explainer
    counts = data.counts
    everything = data.dropped + data.flagged
    status_items = Counter()
    for p in data.dropped:
        status_items[f"{p.status} (dropped)" if p.state == "dropped" else f"{p.status} (restored)"] += 1
    for p in data.flagged:
        status_items[f"{p.status} (flagged)"] += 1
    for status, n in data.kept_by_status.items():
        if status not in FLAGGED and status != "restored":  # restored pages are counted from the log
            status_items[f"{status} (kept)"] += n
    rules = Counter(p.rule for p in everything)
    hosts = Counter(host_of(p.url) for p in everything)
    host_items = hosts.most_common(15)
    if len(hosts) > 15:
        host_items.append((f"{len(hosts) - 15} other hosts", sum(n for _, n in hosts.most_common()[15:])))
    scores = [s for s in (p.score for p in everything) if s is not None]
    marks = {k: data.thresholds[k] for k in ("t2", "t1") if k in data.thresholds}
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
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f'<header><h1>{_e(title)}</h1><p class="meta">dropped log <code>{_e(data.log_path)}</code> · '
        f'index <code>{_e(data.index_uri)}</code> · generated {generated}</p></header>',
        '<section id="summary"><h2>Summary</h2><div class="cards">',
    ]
    for key, label in (("dropped", "dropped pages"), ("restored", "restored pages"),
                       ("flagged", "flagged pages (kept near copies)"), ("kept", "pages in the search index")):
        value = counts[key] if not (key == "kept" and data.kept is None) else "–"
        out.append(f'<div class="card"><span class="n" id="n-{key}">{value}</span>'
                   f'<span class="l">{_e(label)}</span></div>')
    out.append("</div>")
    if data.index_note:
        out.append(f'<p class="note" id="index-note">{_e(data.index_note)}</p>')
    if data.log_problems:
        shown = "; ".join(data.log_problems[:10]) + ("; ..." if len(data.log_problems) > 10 else "")
        out.append(f'<p class="note" id="log-note">{len(data.log_problems)} bad lines of the dropped log were '
                   f'skipped: {_e(shown)}</p>')
    out.append('<div class="charts">' + "".join(f"<figure>{c}</figure>" for c in charts) + "</div></section>")

    total = sum(len(s if limit is None else s[:limit]) for s in (data.dropped, data.flagged))
    done = 0
    for key, heading, pairs, empty in (
            ("dropped", "Dropped pages", data.dropped, "No pages were dropped."),
            ("flagged", "Flagged pages", data.flagged,
             data.index_note or "No kept page is flagged as a near copy.")):
        out.append(f'<section id="{key}"><h2>{heading} ({len(pairs)})</h2>')
        if not pairs:
            out.append(f'<p class="note">{_e(empty)}</p></section>')
            continue
        shown = pairs if limit is None else pairs[:limit]
        out.append(_toc(shown, key))
        if len(shown) < len(pairs):
            out.append(f'<p class="note">{len(pairs) - len(shown)} more pages are counted above but not '
                       f'shown (--limit {limit}).</p>')
        for n, pair in enumerate(shown, 1):
            out.append(_pair_html(pair, f"{key}-{n}", explain, dotplot_svg))
            done += 1
            if progress:
                progress(done, total)
        out.append("</section>")
    out.append('<footer><p class="meta">scrapy-dedup report: static HTML, no scripts, no external assets.</p>'
               "</footer></body></html>")
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
