"""``dedup report``: a static HTML report of a crawl's dropped and flagged pages."""
from __future__ import annotations

import argparse
import sys

from . import dropped_log, index_uri, progress, require_index

__all__ = ["register"]


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import write_report

    uri = index_uri(args)
    args.log = args.log or args.log_option
    require_index(args)
    args.log, _ = dropped_log(args)
    if args.limit is not None and args.limit < 0:
        raise ValueError(f"--limit must be >= 0 (got {args.limit})")
    result = write_report(args.log, args.output, uri, limit=args.limit or None, title=args.title,
                          progress=progress("report"))
    if result["bad_log_lines"]:
        print(f"dedup: warning: {result['bad_log_lines']} bad lines of {args.log} skipped "
              "(listed in the report; `dedup dropped stats --log ...` names them)", file=sys.stderr)
    if result["index_note"]:
        print(f"dedup: note: {result['index_note']}", file=sys.stderr)
    print(f"wrote {result['path']} ({result['bytes'] / 1024:.0f} KiB): {result['groups']} groups, {result['dropped']} dropped, "
          f"{result['restored']} restored, {result['flagged']} flagged, {result['kept']} in the search index")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser("report", help="static HTML report of a crawl's dropped and flagged pages",
                        description="Write one self-contained HTML file (inline CSS, SVG and script; nothing "
                                    "loaded from elsewhere) of the pages a crawl dropped (from its dropped log) and "
                                    "flagged (from the search index), grouped under the page they copy, with "
                                    "filters and a word-level difference for each near copy.")
    rp.add_argument("log", nargs="?", help="the crawl's dropped log (default: --log, $DEDUP_DROPPED_LOG, else "
                                           "dropped.jsonl beside --index, as the crawl writes it)")
    rp.add_argument("--log", dest="log_option", metavar="LOG", help="the dropped log, as an option (as in the other "
                                                                     "commands)")
    rp.add_argument("-o", "--output", default="report.html", help="HTML file to write (default report.html)")
    rp.add_argument("--index", help="index URI for flagged pages and copied texts "
                                    "(default: $DEDUP_INDEX or local://.dedup)")
    rp.add_argument("--limit", type=int, default=200,
                    help="pages shown with their texts per section (default 200, 0 = all; the others are "
                         "listed, counted and filtered without text)")
    rp.add_argument("--title", default="Dedup report", help="the report's title")
    rp.set_defaults(func=cmd_report)
