"""``dedup search``: full-text search over the kept pages of a search index."""
from __future__ import annotations

import argparse
import json
import sys

from index import open_search

from . import cut, index_uri

__all__ = ["register"]


def cmd_search(args: argparse.Namespace) -> int:
    import shutil

    from index.elastic import IndexUnavailable  # the client is imported only when a cluster is opened

    uri = index_uri(args)
    # on a cluster: the time a request may take and the budget for trying again, both --timeout
    cluster = {} if uri.lower().startswith("local:") else {"request_timeout": args.timeout, "retry_seconds": args.timeout}
    try:
        search = open_search(uri, readonly=True, **cluster)
        try:
            hits = search.search(args.query, limit=args.limit)
        finally:
            search.close()
    except IndexUnavailable as exc:
        print(f"dedup: error: {exc}; no answer within --timeout {args.timeout:g} s: try fewer words or a longer "
              "--timeout", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([{k: h.get(k) for k in ("url", "title", "snippet", "status", "duplicate_of",
                                                  "score", "fetched_at")} for h in hits],
                         indent=1, ensure_ascii=False))
        return 0
    if not hits:
        print(f"no results for {args.query!r} in {uri}")
        return 0
    width = shutil.get_terminal_size((100, 20)).columns

    print(f"{'status':<15} {'url':<50} title")
    for h in hits:
        status = h.get("status") or "-"
        print(f"{status:<15} {cut(h['url'], 50):<50} {cut(h.get('title', ''), max(width - 67, 20))}")
        if h.get("duplicate_of"):
            print(f"{'':<15} duplicate of {cut(h['duplicate_of'], width - 29)}")
        if h.get("snippet"):
            print(f"{'':<15} {cut(h['snippet'], max(width - 16, 40))}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    se = sub.add_parser("search", help="full-text search over the kept pages of a search index")
    se.add_argument("query", help="words to find (plain text: quotes, -, :, * are not operators; word* is a prefix)")
    se.add_argument("--index", help="search index URI (default: $DEDUP_INDEX or local://.dedup)")
    se.add_argument("--limit", type=int, default=10, help="hits shown (default 10)")
    se.add_argument("--timeout", type=float, default=30.0,
                    help="seconds a search of an Elasticsearch index may take, retries included (default 30)")
    se.add_argument("--json", action="store_true", help="print a JSON list of hits")
    se.set_defaults(func=cmd_search)
