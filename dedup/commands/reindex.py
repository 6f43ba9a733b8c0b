"""``dedup reindex``: an existing Elasticsearch corpus through the filter into a new index."""
from __future__ import annotations

import argparse
import json

from . import progress

__all__ = ["register"]


def cmd_reindex(args: argparse.Namespace) -> int:
    from index.elastic.reindex import Reindex  # lazy: dedup's modules do not import index

    from ..deduplicator import DedupConfig

    overrides = {k: getattr(args, k) for k in ("t1", "t2", "knn") if getattr(args, k) is not None}
    es_options = json.loads(args.es_options) if args.es_options else {}
    job = Reindex(args.source, args.dest, url_field=args.url_field, text_field=args.text_field or None,
                  html_field=args.html_field, title_field=args.title_field or None, time_field=args.time_field,
                  keep=args.keep, config=DedupConfig(**overrides), dropped_log=args.dropped_log,
                  checkpoint=args.checkpoint, batch_size=args.batch_size, dry_run=args.dry_run, alias=args.alias,
                  es_options=es_options, progress=progress("reindex"))
    report = job.run()
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return 0
    what = "would keep" if report.dry_run else "kept"
    print(f"{report.processed} documents in {report.seconds} s"
          + (f" (resumed after {report.resumed_from})" if report.resumed_from else "")
          + f": {what} {report.kept} ({report.flagged} flagged), dropped {report.dropped}, errors {report.errors}")
    for status, n in sorted(report.statuses.items()):
        print(f"  {status:<16} {n}")
    if report.dry_run:
        print("dry run: nothing was written")
    else:
        print(f"dropped log: {args.dropped_log}")
        if report.alias:
            print(f"alias {report.alias} -> {args.dest}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reindex", help="run an existing Elasticsearch index through the filter into a new one",
                       description="Read SOURCE (any mapping) through a point in time in keep-rule order, decide "
                                   "every document, write the kept ones with their verdicts to DEST (DEST-dedup "
                                   "holds the dedup records) and log the dropped ones. Resumes from its checkpoint.")
    p.add_argument("source", help="source index URI, e.g. http://127.0.0.1:9200/corpus")
    p.add_argument("dest", help="destination index URI, e.g. http://127.0.0.1:9200/corpus-dedup-v1")
    p.add_argument("--url-field", default="url", help="sortable URL field (default url; url.keyword for text)")
    p.add_argument("--text-field", default="text", help="main-text field (default text; '' for none)")
    p.add_argument("--html-field", help="raw-HTML field, parsed and extracted (preferred over --text-field)")
    p.add_argument("--title-field", default="title", help="title field (default title)")
    p.add_argument("--time-field", default="fetched_at", help="time field for oldest/newest (default fetched_at)")
    p.add_argument("--keep", default="oldest", help="keep rule: oldest (default), newest, field:NAME[:asc|desc]")
    p.add_argument("--dropped-log", default="dropped.jsonl", help="dropped-page log (default dropped.jsonl)")
    p.add_argument("--checkpoint", help="checkpoint file (default reindex-DEST.checkpoint.json beside the log)")
    p.add_argument("--batch-size", type=int, default=500, help="documents per batch and checkpoint (default 500)")
    p.add_argument("--dry-run", action="store_true", help="decide everything in memory, report, write nothing")
    p.add_argument("--alias", help="at the end, point this alias at DEST (removing it from other indices)")
    p.add_argument("--es-options", help="JSON object of connection options (api_key, ca_certs, retry_seconds...)")
    p.add_argument("--t1", type=float, help="duplicate threshold (containment)")
    p.add_argument("--t2", type=float, help="near-duplicate threshold (containment)")
    p.add_argument("--knn", type=int, help="nearest signatures fetched per document")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_reindex)
