"""Every verdict of goldset-dev with negatives-dev mixed in, written as JSON lines, or compared with a
file written before a change (issue 14 item 3: faster checks must give the same answers).

The pages (the gold set's and the negatives', in one seeded random order, URLs synthetic as
``dedup evaluate`` makes them) are parsed once and go through a :class:`Deduplicator` over the embedded
local index and over the in-memory index ``dedup evaluate`` uses; each page's ``Verdict.to_dict`` (status,
duplicate_of, rule, every score) is one line. ``--compare FILE`` exits 1 at the first line that differs.
Run it on the code before a change with ``--out``, then on the changed code with ``--compare``.

Cited by: docs/performance.md ("Every speed change is exact"), docs/decision.md,
docs/crawling.md."""
from __future__ import annotations

import json
import pickle
import random
import shutil
import sys
import tempfile
from pathlib import Path

import common


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--negatives", default=str(Path(common.GOLDSET).parent / "negatives-dev"),
                   help="negatives-dev folder, mixed in (skipped when missing)")
    p.add_argument("--out", help="write the verdicts here (JSON lines)")
    p.add_argument("--compare", help="compare with the verdicts of this file")
    p.add_argument("--pages", help="a pickle of the parsed pages: read when it exists, else written")
    p.add_argument("--extractor", default=None, help="the extractor that parses the pages (default: the default's)")
    args = p.parse_args(argv)
    if common.goldset_missing(args.goldset):
        print(common.goldset_missing(args.goldset))
        return 0
    from dedup.cli.evaluate import load_clusters, page_url
    from dedup.deduplicator import Deduplicator
    from dedup.page import parse_page
    from dedup.store import MemoryIndex
    from index.local import LocalIndex

    if args.pages and Path(args.pages).exists():
        pages = pickle.loads(Path(args.pages).read_bytes())
    else:
        paths = [path for _, path in load_clusters(args.goldset)]
        if Path(args.negatives).is_dir():
            paths += [path for _, path in load_clusters(args.negatives)]
        order = list(range(len(paths)))
        random.Random(args.seed).shuffle(order)
        extractor = {"extractor": args.extractor} if args.extractor else {}
        pages = [parse_page(paths[i].read_bytes(), page_url(i), **extractor) for i in order]
        if args.pages:
            Path(args.pages).write_bytes(pickle.dumps(pages))
    if args.quick:
        pages = pages[:100]
    lines = []
    tmp = Path(tempfile.mkdtemp(prefix="verdicts-equal-"))
    try:
        for name, index in (("local", LocalIndex(tmp / "index")), ("memory", MemoryIndex())):
            dedup = Deduplicator(index)
            try:
                for page in pages:
                    lines.append(json.dumps([name, page.url, dedup.process(page).to_dict()], sort_keys=True))
            finally:
                if hasattr(index, "close"):
                    index.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"{len(pages)} pages, {len(lines)} verdicts")
    if args.compare:
        before = Path(args.compare).read_text().splitlines()
        if len(before) != len(lines):
            print(f"{len(before)} verdicts before, {len(lines)} now")
            return 1
        for n, (a, b) in enumerate(zip(before, lines)):
            if a != b:
                print(f"verdict {n} differs:\n  before {a}\n  now    {b}")
                return 1
        print("every verdict identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
