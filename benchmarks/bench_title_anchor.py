"""Issue 20: how many pages seed 004's title + anchor-count rule decides, and that it drops none wrongly.

On goldset-dev (the online metric, seed 7) and on edited copies of each cluster's first page (a
paragraph added, removed, or cut in half; a seeded choice of paragraph): the verdicts by (status, rule),
and how many edited copies were dropped without an exact text match (the content hash). Usage:

    python benchmarks/bench_title_anchor.py [GOLDSET_DIR]   (default: $DEDUP_GOLDSET or ../shared/data/goldset-dev)

Cited by: docs/decision.md."""
from __future__ import annotations

import argparse
import collections
import os
import random
import re

from dedup.deduplicator import DedupConfig, Deduplicator
from dedup.cli.evaluate import evaluate, load_clusters
from dedup.page import parse_page
from dedup.store import MemoryIndex

_PARA = re.compile(rb"(<p[ >].*?</p>)", re.S | re.I)
_ADDED = b"<p>" + b"An added paragraph says the council will meet again next week to review it. " * 2 + b"</p>"


def edits(html: bytes, rng: random.Random) -> dict[str, bytes]:
    """Three edited copies of ``html`` (one paragraph of >= 200 bytes, not the first or last)."""
    paras = [m for m in _PARA.finditer(html) if len(m.group(1)) > 200]
    if len(paras) < 3:
        return {}
    m = paras[rng.randrange(1, len(paras) - 1)]
    start, end = m.span()
    para = m.group(1)
    return {"add": html[:end] + _ADDED + html[end:], "remove": html[:start] + html[end:],
            "truncate": html[:start] + para[: len(para) // 2] + b"</p>" + html[end:]}


def main(folder: str) -> None:
    report = evaluate(folder)
    rules = collections.Counter((o.verdict.status, o.verdict.rule) for o in report.outcomes)
    print("goldset-dev verdicts by (status, rule):")
    for (status, rule), n in sorted(rules.items()):
        print(f"  {status:16} {rule:18} {n}")
    rng = random.Random(3)
    dedup = Deduplicator(MemoryIndex(), DedupConfig())
    seen: set[str] = set()
    counts: collections.Counter = collections.Counter()
    wrong = 0
    for cluster, path in load_clusters(folder):
        if cluster in seen:
            continue
        seen.add(cluster)
        html = path.read_bytes()
        dedup.process(parse_page(html, f"http://orig.invalid/{cluster}"))
        for kind, edited in edits(html, rng).items():
            v = dedup.process(parse_page(edited, f"http://edit.invalid/{cluster}/{kind}"))
            counts[(kind, v.status, v.rule)] += 1
            wrong += v.status == "exact_duplicate" and v.rule != "content_hash"
    print(f"edited copies ({sum(counts.values())}) by (edit, status, rule):")
    for (kind, status, rule), n in sorted(counts.items()):
        print(f"  {kind:9} {status:16} {rule:18} {n}")
    print(f"edited copies dropped without an exact text match: {wrong}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=os.environ.get("DEDUP_GOLDSET", "../shared/data/goldset-dev"),
                        help="the Gold Set folder (default: $DEDUP_GOLDSET or ../shared/data/goldset-dev)")
    main(parser.parse_args().folder)
