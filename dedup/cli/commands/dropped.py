"""``dedup dropped list | stats | show | restore``: inspect the dropped-page log and undo drops.

The logic lives in :mod:`dedup.droplog`; this module parses arguments and prints.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
from typing import Any

from index import default_dropped_log, open_search

from ...droplog import STATES
from ...verdicts import legend, reason
from . import cut as _cut
from . import index_uri, progress, require_index, rounded

__all__ = ["register"]

MAX_WARNINGS = 20


# -- shared helpers --------------------------------------------------------------------------------
def log_path(args: argparse.Namespace) -> str:
    """``--log``, else ``$DEDUP_DROPPED_LOG``, else the crawl's default beside ``--index``."""
    if getattr(args, "log", None):
        return args.log
    if os.environ.get("DEDUP_DROPPED_LOG"):
        return os.environ["DEDUP_DROPPED_LOG"]
    return default_dropped_log(index_uri(args))


def load(args: argparse.Namespace):
    """The folded log; its bad lines are reported on stderr (first :data:`MAX_WARNINGS`)."""
    from ...droplog import read_log

    require_index(args)
    log = read_log(log_path(args))
    warn_problems(log)
    return log


def warn_problems(log) -> None:
    for problem in log.problems[:MAX_WARNINGS]:
        print(f"dedup: warning: {log.path} {problem}; skipped", file=sys.stderr)
    if len(log.problems) > MAX_WARNINGS:
        print(f"dedup: warning: {log.path}: {len(log.problems) - MAX_WARNINGS} more bad lines skipped",
              file=sys.stderr)


def open_search_readonly(uri: str):
    return open_search(uri, readonly=True)  # never creates an index


def make_filter(args: argparse.Namespace):
    from ..summary import Filter, parse_when

    if getattr(args, "restored", False):
        states: tuple[str, ...] = ("restored",)
    elif getattr(args, "all", False):
        states = STATES  # restored, and kept again by a later crawl or reindex --update
    else:
        states = ("dropped",)
    for name in ("min_score", "max_score"):
        value = getattr(args, name)
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"--{name.replace('_', '-')} must be in [0, 1] (got {value})")
    return Filter(rules=_split(args.rule), statuses=_split(args.status), hosts=_split(args.host),
                  min_score=args.min_score, max_score=args.max_score,
                  since=parse_when(args.since) if args.since else None,
                  until=parse_when(args.until, end=True) if args.until else None, states=states)


def _split(values: list[str] | None) -> tuple[str, ...]:
    """Repeated options and comma-separated values, flattened."""
    out: list[str] = []
    for value in values or ():
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _time(value: str) -> str:
    return value.replace("T", " ")[:19] if value else "-"


# -- list ------------------------------------------------------------------------------------------
def _hidden_counts(log, flt) -> dict[str, int]:
    """The entries the default filter (dropped pages only) leaves out, by state (none with another filter)."""
    if flt.states != ("dropped",):
        return {}
    counts = {state: sum(1 for e in log.entries if e.state == state) for state in ("restored", "kept")}
    return {state: n for state, n in counts.items() if n}


def _hidden(log, flt) -> str:
    """:func:`_hidden_counts` in words ("" when nothing)."""
    return " and ".join(f"{n} {'restored' if state == 'restored' else 'kept again'}"
                        for state, n in _hidden_counts(log, flt).items())


def cmd_list(args: argparse.Namespace) -> int:
    log = load(args)
    flt = make_filter(args)
    entries = flt.apply(log.entries)
    hidden = _hidden(log, flt)
    if args.limit is not None:
        entries = entries[-args.limit:] if args.limit > 0 else []
    if args.json:
        print(json.dumps([e.to_dict(verdict=args.verdicts) for e in entries], indent=1, ensure_ascii=False))
        return 0
    if not entries:
        print(f"no dropped pages match in {log.path}" + (f" ({hidden}; --all shows them)" if hidden else ""))
        return 0
    show_state = flt.states != ("dropped",)
    head = (f"{'state':<9}" if show_state else "") + f"{'time (UTC)':<20}{'status':<16}{'rule':<16}{'score':>5}  url"
    print(head)
    indent = len(head) - 3
    for e in entries:
        state = f"{e.state:<9}" if show_state else ""
        # the URL whole, however wide the terminal: it is what `show`, `explain` and `restore` take
        print(f"{state}{_time(e.time):<20}{_cut(e.status, 15):<16}{_cut(e.rule, 15):<16}{_score(e.score):>5}  {e.url}")
        extra = f"copy of {e.duplicate_of}" if e.duplicate_of else ""
        if e.drops > 1:
            extra += f" (dropped {e.drops} times)"
        if e.seen:
            times = f"{e.seen} time{'s' if e.seen != 1 else ''}"
            extra += f" (fetched again unchanged {times} since, last {_time(e.seen_at or '')})"
        if e.state == "restored":
            extra += f" (restored {_time(e.restored_at or '')})"
        elif e.state == "kept":
            extra += " (kept when fetched again)"
        if extra.strip():
            print(f"{'':<{indent}}{extra.strip()}")
    tail = f"{len(entries)} {'pages' if len(entries) != 1 else 'page'}"
    if hidden:
        tail += f"; {hidden} not shown (--all shows them)"
    print(tail)
    return 0


# -- stats -----------------------------------------------------------------------------------------
def cmd_stats(args: argparse.Namespace) -> int:
    from ..summary import summarize, text_histogram

    log = load(args)
    flt = make_filter(args)
    entries = flt.apply(log.entries)
    if args.bins < 1:
        raise ValueError(f"--bins must be >= 1 (got {args.bins})")
    if args.score_floor is not None and not 0.0 <= args.score_floor < 1.0:
        raise ValueError(f"--score-floor must be in [0, 1) (got {args.score_floor})")
    summary = summarize(entries, bins=args.bins, lo=args.score_floor)
    summary.update(log=str(log.path), lines=log.lines, events=log.events, bad_lines=len(log.problems),
                   restored_hidden=sum(_hidden_counts(log, flt).values()))
    if args.json:
        print(json.dumps(summary, indent=1, ensure_ascii=False))
        return 0
    what = "dropped" if flt.states == ("dropped",) else "/".join(flt.states)
    print(f"{log.path}: {summary['pages']} {what} pages (dropped {summary['drops']} times)"
          + (f", {summary['restored_hidden']} restored or kept again not counted (--all counts them)"
             if summary["restored_hidden"] else "")
          + (f", {summary['bad_lines']} bad lines skipped" if summary["bad_lines"] else ""))
    if summary["first"]:
        print(f"dropped between {_time(summary['first'])} and {_time(summary['last'])} UTC")
    sections = [("state", "by_state")] if flt.states != ("dropped",) else []
    sections += [("status", "by_status"), ("rule", "by_rule"), ("host", "by_host")]
    width = max((len(k) for _, key in sections for k in summary[key]), default=0)
    for title, key in sections:
        counts = summary[key]
        if not counts:
            continue
        print(f"\nby {title}:")
        for name, n in counts.items():
            print(f"  {name:<{width}}  {n:>6}")
    s = summary["score"]
    print(f"\ncontainment score (word-5-gram overlap over the smaller page; content_hash drops count as 1.0): "
          f"{s['scored']} scored" + (f", {s['unscored']} without a score" if s["unscored"] else ""))
    if s["scored"]:
        print(f"  min {s['min']:.4f}  mean {s['mean']:.4f}  max {s['max']:.4f}")
        bins = [(b["low"], b["high"], b["count"]) for b in s["histogram"]]
        if s["min"] == s["max"]:  # one value: ten bins would draw one bar and nine empty ones
            print(f"  every score is {s['min']:.2f}")
        else:
            for line in text_histogram(bins):
                print("  " + line)
    return 0


# -- show ------------------------------------------------------------------------------------------
def copied_page(uri: str, url: str | None, log) -> tuple[dict[str, Any] | None, str, str | None]:
    """``(page, source, note)`` of the page a dropped page copies: the search index first, then the log."""
    if not url:
        return None, "", "the verdict names no page it copies"
    note = None
    try:
        search = open_search_readonly(uri)
    except FileNotFoundError as exc:
        search, note = None, f"no search index ({exc})"
    except Exception as exc:  # noqa: BLE001 - any backend failure falls back to the log
        search, note = None, f"search index {uri} unavailable ({type(exc).__name__}: {exc})"
    if search is not None:
        try:
            doc = search.get(url)
        except Exception as exc:  # noqa: BLE001
            doc, note = None, f"search index {uri} failed ({type(exc).__name__}: {exc})"
        finally:
            search.close()
        if doc is not None:
            return doc, f"search index {uri}", None
        note = note or f"not in the search index {uri}"
    item = log.find_item(url)
    if item is not None:
        return item, f"dropped log {log.path}", note
    return None, "", (note + "; not in the dropped log either") if note else "not in the dropped log"


def cmd_show(args: argparse.Namespace) -> int:
    log = load(args)
    entry = log.get(args.url)
    uri = index_uri(args)
    if entry is None:
        kept = _kept(uri, args.url)
        if kept is not None:
            return _show_kept(args, uri, kept)
        near = [u for u in spellings(args.url) if log.get(u) is not None or _kept(uri, u) is not None]
        near += [u for u in _like(args.url, [e.url for e in log.entries]) if u not in near]
        hint = ("; did you mean: " + ", ".join(near)) if near else ""
        print(f"dedup: error: {args.url} is not in the dropped log {log.path} nor kept in {uri}{hint}",
              file=sys.stderr)
        return 2
    if entry.state == "kept":  # dropped once, kept when fetched again: what it is now comes first
        kept = _kept(uri, args.url)
        if kept is not None:
            return _show_kept(args, uri, kept, dropped_before=entry)
    item = log.item(entry)
    other, source, note = copied_page(uri, entry.nearest, log)  # the page it was matched with
    if args.json:
        print(json.dumps({
            "entry": entry.to_dict(), "verdict": entry.verdict,
            "page": {k: item.get(k) for k in ("url", "title", "text", "fetched_at")},
            "copies": None if other is None else {k: other.get(k) for k in ("url", "title", "text", "fetched_at")},
            "copies_source": source or None, "copies_note": note,
        }, indent=1, ensure_ascii=False))
        return 0
    width = min(shutil.get_terminal_size((100, 20)).columns, 120)
    v = entry.verdict
    print(f"url        {entry.url}")
    state = entry.state + (f" at {_time(entry.restored_at or '')}" if entry.state == "restored" else "")
    print(f"state      {state} (log line {entry.line}"
          + (f", its verdict now line {entry.verdict_line}" if entry.verdict_line else "")
          + (f", dropped {entry.drops} times)" if entry.drops > 1 else ")"))
    print(f"dropped    {_time(entry.time)} UTC")
    print(f"verdict    {entry.status} by rule {entry.rule}; copy of {entry.duplicate_of or '-'}"
          + (f" (matched with {entry.nearest}, itself a copy of it)" if entry.nearest != entry.duplicate_of else ""))
    if entry.seen:
        print(f"seen again {entry.seen} time(s) unchanged since, last at {_time(entry.seen_at or '')} UTC")
    if reason(v):
        print(f"why        {reason(v)}")
    scores = {k: val for k, val in (v.get("scores") or {}).items() if k != "pruned_by" or val}
    if scores:
        print("scores     " + _cut(", ".join(f"{k} {json.dumps(val)}" for k, val in scores.items()), 2000))
    print(f"score      containment {_score(entry.score)}" + (" (content_hash: same normalised text)"
                                                          if entry.rule == "content_hash" else ""))
    why = scores.get("decision")
    if isinstance(why, dict) and why.get("signals"):  # the calibrated decision (dedup.decision)
        print(f"decided by {(v.get('thresholds') or {}).get('decision', 'the decision')}: p {why.get('p')}"
              f" (copy from p {why.get('threshold', '-')}); " + ", ".join(why["signals"]))
    if v.get("thresholds"):
        print("thresholds " + ", ".join(f"{k} {json.dumps(val)}" for k, val in rounded(v["thresholds"]).items()))
        print(f"statuses   {legend(v['thresholds'])}")
    print(f"algorithm  {v.get('algorithm', '-')}  reference {v.get('reference', '-')}  candidates {v.get('candidates', '-')}")
    _print_page(f"dropped page (from the log, line {entry.line})", item, width)
    if other is not None:
        _print_page(f"the page it was matched with (from the {source})" + (f"; {note}" if note else ""), other, width)
    else:
        print(f"\n== the page it was matched with: {entry.nearest or '-'}\n({note})")
    return 0


def _like(url: str, urls: list[str]) -> list[str]:
    """Logged URLs a mistyped ``url`` may mean: the same but for the scheme, a trailing slash or the fragment,
    else close in spelling; URLs of the same site alone share a long prefix, which is no likeness."""
    import difflib

    def bare(u: str) -> str:
        return u.split("#", 1)[0].split("://", 1)[-1].rstrip("/")

    same = [u for u in urls if bare(u) == bare(url)]
    return same[:5] or difflib.get_close_matches(url, urls, n=3, cutoff=0.95)


def spellings(url: str) -> list[str]:
    """Other spellings of ``url`` that name the same page or that a user may mean: the scheme and host in lower
    case, no fragment, the path's trailing slash added or left out (a site's root without its ``/``)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    if not parts.scheme or not parts.netloc:
        return []
    path = parts.path or "/"
    paths = [path, path.rstrip("/") or "/", path if path.endswith("/") else path + "/"]
    out = []
    for p in paths:
        for spelt in (urlunsplit((parts.scheme.lower(), parts.netloc.lower(), p, parts.query, "")),
                      urlunsplit((parts.scheme.lower(), parts.netloc.lower(), "" if p == "/" else p, parts.query, ""))):
            if spelt != url and spelt not in out:
                out.append(spelt)
    return out


def _kept(uri: str, url: str) -> dict[str, Any] | None:
    """The search index's document of ``url`` (a kept page), or None (no such page, or no index to ask)."""
    try:
        search = open_search_readonly(uri)
    except Exception:  # noqa: BLE001 - no search index, or a backend that fails: the page is not known kept
        return None
    try:
        return search.get(url)
    except Exception:  # noqa: BLE001
        return None
    finally:
        search.close()


def _show_kept(args: argparse.Namespace, uri: str, doc: dict[str, Any], dropped_before: Any = None) -> int:
    """``dropped show`` of a page that is kept: its verdict (flagged or not, a copy of what, and why); with
    ``dropped_before`` (its log entry, state ``kept``), the drop a later crawl or update undid, after it."""
    v = doc.get("dedup") or {}
    if args.json:
        print(json.dumps({"url": doc.get("url"), "state": "kept", "index": uri, "verdict": v,
                          "page": {k: doc.get(k) for k in ("url", "title", "text", "fetched_at")},
                          **({"dropped_before": dropped_before.to_dict()} if dropped_before is not None else {})},
                         indent=1, ensure_ascii=False))
        return 0
    status = v.get("status", "-")
    nearest = v.get("nearest") or v.get("duplicate_of")
    print(f"{doc.get('url')} {'is' if dropped_before is not None else 'was not dropped: it is'} kept in {uri}, "
          + (f"flagged {status} of {v.get('duplicate_of')}" if v.get("duplicate_of") else f"as {status}")
          + (f" (matched with {nearest}, itself a copy of it)" if nearest != v.get("duplicate_of") else ""))
    if dropped_before is not None:
        e = dropped_before
        print(f"before     dropped {_time(e.time)} UTC as {e.status} of {e.duplicate_of or '-'} by rule {e.rule} "
              f"(log line {e.line}); kept since, decided again when its text changed or the page it copied did")
    if reason(v):
        print(f"why        {reason(v)}")
    if v.get("thresholds") and v.get("duplicate_of"):
        print(f"statuses   {legend(v['thresholds'])}")
    if v.get("duplicate_of"):
        print(f"compare    dedup explain {doc.get('url')} --index {uri}")
    return 0


def _print_page(label: str, page: dict[str, Any], width: int) -> None:
    print(f"\n== {label}\n   {page.get('url')}")
    print(f"title: {page.get('title') or '-'}\n")
    for para in str(page.get("text") or "").splitlines():
        if para.strip():
            print(textwrap.fill(para.strip(), width=width))


# -- restore ---------------------------------------------------------------------------------------
def cmd_restore(args: argparse.Namespace) -> int:
    from ..restore import restore

    urls = list(args.urls)
    if urls == ["-"]:
        urls = [line.strip() for line in sys.stdin if line.strip()]
    if not urls:
        raise ValueError("no URLs to restore")
    weights: Any = args.weights
    if weights.lstrip().startswith("{"):
        try:
            weights = json.loads(weights)
        except ValueError as exc:
            raise ValueError(f"--weights is neither a preset nor a JSON object: {exc}") from None
    log = load(args)
    uri = index_uri(args)
    try:
        results = restore(log, urls, uri, weights=weights, force=args.force, progress=progress("restore"))
    except (RuntimeError, OSError) as exc:  # e.g. IndexLocked (a crawl is writing the index), a read-only log
        print(f"dedup: error: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if r.outcome in ("not_found", "refused", "error")]
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1, ensure_ascii=False))
    else:
        for r in results:
            stream = sys.stderr if r in failed else sys.stdout
            print(("dedup: error: " if r in failed else "") + r.message, file=stream)
        from ...droplog import index_identity

        done = sum(1 for r in results if r.outcome == "restored")
        print(f"{done} restored into {index_identity(uri)}; {len(results) - done - len(failed)} already restored; "
              f"{len(failed)} failed")
    return 1 if failed else 0


# -- parser ----------------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log", help="dropped log (default: $DEDUP_DROPPED_LOG, else dropped.jsonl beside --index, "
                                 "as the crawl writes it)")
    p.add_argument("--index", help="index URI (default: $DEDUP_INDEX or local://.dedup)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _filters(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("filters (all must hold; repeat an option or give a comma list for alternatives)")
    g.add_argument("--rule", action="append", help="verdict rule: content_hash, title_anchor, containment>=t1, ...")
    g.add_argument("--status", action="append", help="verdict status: exact_duplicate, duplicate, near_duplicate")
    g.add_argument("--host", action="append", help="host or host:port of the dropped URL (a domain matches its subdomains)")
    g.add_argument("--min-score", type=float, help="lowest containment score (word-5-gram overlap over the smaller "
                                                   "page, 0..1; content_hash drops count as 1.0)")
    g.add_argument("--max-score", type=float, help="highest containment score")
    g.add_argument("--since", help="dropped at or after this ISO date/date-time (UTC unless a zone is given)")
    g.add_argument("--until", help="dropped at or before this ISO date/date-time (a date includes the whole day)")
    s = g.add_mutually_exclusive_group()
    s.add_argument("--all", action="store_true",
                   help="include restored pages and pages kept when fetched again (with their state)")
    s.add_argument("--restored", action="store_true", help="only restored pages")


def register(sub: argparse._SubParsersAction) -> None:
    dr = sub.add_parser("dropped", help="inspect the dropped-page log: list, stats, show, restore",
                        description="Inspect the dropped-page log of a crawl and restore pages from it.")
    cmds = dr.add_subparsers(dest="dropped_command", required=True, metavar="ACTION")

    ls = cmds.add_parser("list", help="dropped pages, oldest first (restored or kept again: hidden unless --all)")
    _common(ls)
    _filters(ls)
    ls.add_argument("--limit", type=int, help="only the last N matching pages")
    ls.add_argument("--verdicts", action="store_true", help="with --json: include the full verdicts")
    ls.set_defaults(func=cmd_list)

    st = cmds.add_parser("stats", help="counts by status, rule and host, and the score histogram")
    _common(st)
    _filters(st)
    st.add_argument("--bins", type=int, default=10, help="histogram bins (default 10) over [--score-floor, 1]")
    st.add_argument("--score-floor", type=float, help="where the histogram starts (default: the tenth below the "
                                                       "lowest score, at most 0.9)")
    st.set_defaults(func=cmd_stats)

    sh = cmds.add_parser("show", help="a dropped page's verdict and text, beside the page it copies")
    sh.add_argument("url", help="the dropped URL, exactly as logged")
    _common(sh)
    sh.set_defaults(func=cmd_show)

    rs = cmds.add_parser("restore", help="put dropped pages back into the dedup and search indexes")
    rs.add_argument("urls", nargs="+", metavar="URL", help="dropped URLs, exactly as logged ('-' reads them from stdin)")
    _common(rs)
    rs.add_argument("--weights", default="tdw", help="TDW weights the crawl used (preset or JSON mapping; default tdw)")
    rs.add_argument("--force", action="store_true",
                    help="restore into --index even when the pages were dropped from another index, creating it "
                         "when missing (without it such restores are refused and the pages stay restorable)")
    rs.set_defaults(func=cmd_restore)
