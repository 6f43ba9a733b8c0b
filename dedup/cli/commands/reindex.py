"""``dedup reindex``: an existing Elasticsearch corpus through the filter into a new index."""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable

from . import config_of, config_options, progress

__all__ = ["register"]


def log_progress(label: str, every: float) -> Callable[[int, int], None]:
    """A ``show(done, total)`` writing one line to stderr every ``every`` seconds (and at the end),
    for runs without a terminal; the rate counts this run's documents only, so it is right after a
    resume, and is timed from the first decided document: the start-up before it (worker processes
    loading their tables) is not decisions, and a rate over it promised hours."""
    start: dict[str, float] = {}

    def show(n: int, total: int) -> None:
        now = time.monotonic()
        if not start:
            start.update(n=n)
            return
        if "t" not in start:  # the first decision: the clock starts here, the line has no rate yet
            start.update(t=now, n=n, last=now)
            print(f"{label}: {n}/{total} documents", file=sys.stderr, flush=True)
            return
        if now - start["last"] < every and n < total:
            return
        start["last"] = now
        rate = (n - start["n"]) / max(now - start["t"], 1e-9)
        eta = f", ETA {int((total - n) / rate)} s" if rate > 0 and n < total else ""
        print(f"{label}: {n}/{total} documents ({rate:.1f}/s{eta})", file=sys.stderr, flush=True)

    return show


def cmd_reindex(args: argparse.Namespace) -> int:
    from index.elastic import IndexUnavailable
    from index.elastic.reindex import Reindex
    from index.elastic.reindex_slices import merge

    try:
        es_options = json.loads(args.es_options) if args.es_options else {}
    except ValueError as exc:
        raise ValueError(f"--es-options is not a JSON object: {exc}") from None
    show = progress("reindex", unit="doc") or log_progress("reindex", args.progress_every)
    job = Reindex(args.source, args.dest, url_field=args.url_field, text_field=args.text_field or None,
                  html_field=args.html_field, title_field=args.title_field or None, time_field=args.time_field,
                  keep=args.keep, config=config_of(args), dropped_log=args.dropped_log,
                  checkpoint=args.checkpoint, work_dir=args.work_dir, batch_size=args.batch_size,
                  read_size=args.read_size, workers=args.workers, slices=args.slices, slice_id=args.slice,
                  merge=args.merge,
                  dry_run=args.dry_run, force=args.force, alias=args.alias, update=args.update, es_options=es_options,
                  progress=show)
    try:
        if args.check:
            return _check(job, args)
        report = merge(job) if job.merging else job.run()  # the final pass builds on the reindex
    except IndexUnavailable as exc:
        print(f"dedup: error: {exc}", file=sys.stderr)
        if job.work_dir.exists() and not args.check:
            print(f"dedup: every decision made so far is kept in {job.work_dir}; run the same command again to "
                  "continue", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: what a SIGKILL leaves is resumable, and so is this
        kept = (f"every decision made so far is kept in {job.work_dir}; run the same command again to continue"
                if job.work_dir.exists() and not (args.check or args.dry_run) else "nothing was kept")
        print(f"dedup: reindex interrupted; {kept}", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return 0
    what = "would keep" if report.dry_run else "kept"
    print(f"{report.processed} documents in {report.seconds} s"
          + (f" (resumed after {report.resumed_from})" if report.resumed_from else "")
          + f": {what} {report.kept} ({report.flagged} flagged), dropped {report.dropped}, errors {report.errors}")
    for status, n in sorted(report.statuses.items()):
        print(f"  {status:<16} {n}")
    if report.unchanged or report.updated or report.added:
        print(f"update: {report.unchanged} unchanged, {report.updated} changed and decided again, "
              f"{report.added} added" + (f", {report.gone} decided before and no longer in the source (left in "
                                         "the destination, counted above)" if report.gone else ""))
    if report.decided_again:
        print(f"update: {report.decided_again} unchanged decided again, the page their verdict named having changed "
              "or gone")
    print(f"{report.requests} requests to Elasticsearch")
    if job.merging:
        print(f"final pass: {report.handed_over} decided from the query features the slices handed over, "
              f"{report.reparsed} parsed again; {report.changed} verdicts changed (copies across slices)")
    if report.dry_run:
        print("dry run: nothing was written")
    else:
        print(f"dropped log: {args.dropped_log}")
        if report.alias:
            print(f"alias {report.alias} -> {args.dest}")
    return 0


def _check(job, args: argparse.Namespace) -> int:
    report = job.check()
    if args.json:
        print(json.dumps(report, indent=1))
        return 0 if report["ok"] and report.get("groups_ok", True) else 1
    print(f"{report['destination']}: {report['decided']} decisions ({report['kept']} kept, {report['dropped']} "
          f"dropped, {report['unsent']} not yet written)")
    for key, ids in report.items():
        if isinstance(ids, list) and ids:
            print(f"  {key.replace('_', ' ')}: {len(ids)} ({', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''})")
    if report["ok"]:
        print("in step" + (f"; {report['unsent']} decisions not yet written: run the same reindex command "
                           "again to send them" if report["unsent"] else ""))
        if report.get("groups_ok", True):
            return 0
        print("GROUPS: the flagged documents listed name a page that is not kept, or one itself flagged (their "
              "verdicts were made before that page changed); `dedup dropped show`/`explain` on them compare with "
              "what that page holds now")
        return 1
    print("OUT OF STEP: the documents listed disagree with the decisions in the work folder (e.g. writes the "
          "server acknowledged and lost, or documents changed by hand). Nothing here repairs a destination: "
          "reindex SOURCE into a new destination (with its own --dropped-log and work folder) and point your "
          "alias at it (--alias)")
    return 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reindex", help="run an existing Elasticsearch index through the filter into a new one",
                       description="Read SOURCE (any mapping) through a point in time in keep-rule order, decide "
                                   "every document against a local working state, write the kept ones with their "
                                   "verdicts to DEST in bulk (DEST-dedup holds the dedup records) and log the "
                                   "dropped ones. Killed at any moment, the same command continues.")
    p.add_argument("source", help="source index URI, e.g. http://127.0.0.1:9200/corpus")
    p.add_argument("dest", help="destination index URI, e.g. http://127.0.0.1:9200/corpus-dedup-v1")
    p.add_argument("--url-field", default="url", help="sortable URL field (default url; url.keyword for text)")
    p.add_argument("--text-field", default="text", help="main-text field (default text; '' for none)")
    p.add_argument("--html-field", help="raw-HTML field, parsed and extracted (preferred over --text-field)")
    p.add_argument("--title-field", default="title", help="title field (default title, when the mapping has one); "
                                                          "a document with HTML is read with its <title>, as a crawl "
                                                          "reads a page")
    p.add_argument("--time-field", help="time field for oldest/newest (default fetched_at, else the source's only "
                                        "date field)")
    p.add_argument("--keep", default="oldest", help="keep rule: oldest (default), newest, field:NAME[:asc|desc]")
    p.add_argument("--dropped-log", default="dropped.jsonl", help="dropped-page log (default dropped.jsonl)")
    p.add_argument("--checkpoint", help="checkpoint summary (default reindex-DEST.checkpoint.json beside the log)")
    p.add_argument("--work-dir", help="local working state (default reindex-DEST.work beside the checkpoint)")
    p.add_argument("--batch-size", type=int, default=500, help="documents per bulk write (default 500)")
    p.add_argument("--read-size", type=int, default=1000, help="documents per point-in-time read (default 1000)")
    p.add_argument("--workers", type=int, default=0,
                   help="worker processes parsing pages and computing features while this one decides, as the "
                        "crawl's DEDUP_WORKERS (default 0: this process parses too)")
    p.add_argument("--slices", type=int, default=1,
                   help="split the source into N slices (sliced point in time) decided by N processes, on one "
                        "or several machines; then run --merge once (default 1)")
    p.add_argument("--slice", type=int, help="with --slices N: the slice this process decides, 0 <= I < N")
    p.add_argument("--merge", action="store_true",
                   help="with --slices N: the final pass, once every slice is finished (one copy per exact group "
                        "across slices, near copies across slices flagged)")
    p.add_argument("--dry-run", action="store_true", help="decide everything in a temporary folder, write nothing")
    p.add_argument("--force", action="store_true", help="write into a destination another run (or no reindex) filled")
    p.add_argument("--update", action="store_true",
                   help="after a finished run: read the source again and bring DEST up to date (unchanged documents "
                        "skipped, added ones decided, changed ones decided again as updates of their own record); "
                        "on no work folder, a first run")
    p.add_argument("--check", action="store_true",
                   help="compare DEST, DEST-dedup and the dropped log with the work folder; exit 1 when out of step")
    p.add_argument("--alias", help="at the end, point this alias at DEST (removing it from other indices)")
    p.add_argument("--es-options", help="JSON object of connection options (api_key, ca_certs, retry_seconds...)")
    p.add_argument("--progress-every", type=float, default=30.0,
                   help="seconds between progress lines when stderr is no terminal (default 30)")
    config_options(p, per="document")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_reindex)
