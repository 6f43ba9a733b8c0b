"""Soak: many synthetic pages, half of them copies, through DedupPipeline + IndexPipeline on an
embedded index; samples RSS, open files and threads every N pages.

    NLTK_DATA=.nltk_data .venv/bin/python -m reliability.soak [--pages 20000] [--every 1000] [--out out/soak.json]

Prints a table and writes JSON. "Flat after warm-up": RSS growth from the sample at 25% of the run
to the last sample, per 1,000 pages, under ``--flat-kib`` (default 2,048 KiB per 1,000 pages; the
index itself grows with every kept page, so a small slope is expected).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from scrapy.exceptions import DropItem

from crawler.pipelines import DedupPipeline, IndexPipeline
from dedup.deduplicator import DedupConfig

WORDS = None


def _proc_status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                out[key] = int(value.split()[0])
    out["open_files"] = len(os.listdir("/proc/self/fd"))
    return out


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnoprstuvwy"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(30000)]


def _page(rng: random.Random, words: list[str], n: int) -> str:
    paras = []
    for _ in range(rng.randint(3, 8)):
        sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + "."
                     for _ in range(rng.randint(2, 5))]
        paras.append("<p>" + " ".join(sentences) + "</p>")
    title = " ".join(rng.choice(words) for _ in range(5))
    nav = "".join(f'<a href="/s/{rng.randint(0, 50)}.html">{rng.choice(words)}</a>' for _ in range(8))
    return (f"<html><head><title>{title} {n}</title></head><body><nav>{nav}</nav><article><h1>{title}</h1>"
            + "".join(paras) + "</article><footer>Soak site</footer></body></html>")


def run(pages: int, every: int, workdir: Path, seed: int = 8) -> dict:
    rng = random.Random(seed)
    words = _vocabulary(rng)
    uri = f"local://{workdir / 'index'}"
    dedup = DedupPipeline(index_uri=uri, config=DedupConfig(), dropped_log=workdir / "dropped.jsonl")
    store = IndexPipeline(index_uri=uri, spool=workdir / "spool.jsonl")
    dedup.open_spider()
    store.open_spider()
    statuses: Counter = Counter()
    samples = []
    originals: list[str] = []
    start = time.perf_counter()
    base = _proc_status()
    samples.append({"pages": 0, "seconds": 0.0, "rss_kib": base["VmRSS"], "open_files": base["open_files"],
                    "threads": base["Threads"]})
    try:
        for n in range(1, pages + 1):
            if originals and n % 2 == 0:  # every second page is an exact copy of an earlier one
                html = rng.choice(originals)
            else:
                html = _page(rng, words, n)
                originals.append(html)
                if len(originals) > 2000:
                    originals.pop(0)
            item = {"url": f"http://soak.example/{n}.html", "html": html, "fetched_at": time.time()}
            try:
                item = dedup.process_item(item)
            except DropItem as exc:
                statuses[getattr(getattr(exc, "verdict", None), "status", "dropped")] += 1
            else:
                statuses[item["dedup"]["status"]] += 1
                item.pop("html", None)
                store.process_item(item)
            if n % every == 0:
                s = _proc_status()
                samples.append({"pages": n, "seconds": round(time.perf_counter() - start, 1),
                                "rss_kib": s["VmRSS"], "open_files": s["open_files"], "threads": s["Threads"]})
                print(f"{n:>8} {samples[-1]['seconds']:>8} {s['VmRSS']:>10} {s['open_files']:>6} {s['Threads']:>7}",
                      flush=True)
    finally:
        store.close_spider()
        dedup.close_spider()
    end = _proc_status()
    samples_main = samples[1:] or samples
    warm = samples_main[len(samples_main) // 4] if len(samples_main) > 1 else samples_main[0]
    last = samples_main[-1]
    span = max(1, last["pages"] - warm["pages"])
    slope = (last["rss_kib"] - warm["rss_kib"]) * 1000 / span
    return {"pages": pages, "every": every, "seconds": round(time.perf_counter() - start, 1),
            "statuses": dict(statuses), "samples": samples_main, "start": samples[0],
            "after_close": {"rss_kib": end["VmRSS"], "open_files": end["open_files"], "threads": end["Threads"]},
            "warmup_sample": warm, "rss_slope_kib_per_1000_pages": round(slope, 1),
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--out", default="out/soak.json")
    ap.add_argument("--flat-kib", type=float, default=2048.0,
                    help="largest RSS growth per 1,000 pages after warm-up that counts as flat")
    ap.add_argument("--workdir", default=None, help="index directory (default: a temporary one)")
    args = ap.parse_args(argv)
    if args.pages < 1 or args.every < 1:
        ap.error("--pages and --every must be >= 1")
    print(f"{'pages':>8} {'seconds':>8} {'RSS KiB':>10} {'files':>6} {'threads':>7}", flush=True)
    if args.workdir:
        report = run(args.pages, args.every, Path(args.workdir))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = run(args.pages, args.every, Path(tmp))
    report["flat"] = report["rss_slope_kib_per_1000_pages"] <= args.flat_kib
    report["flat_kib"] = args.flat_kib
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"statuses: {report['statuses']}")
    print(f"RSS after warm-up ({report['warmup_sample']['pages']} pages): {report['warmup_sample']['rss_kib']} KiB; "
          f"at end: {report['samples'][-1]['rss_kib']} KiB; slope {report['rss_slope_kib_per_1000_pages']} KiB "
          f"per 1,000 pages -> {'flat' if report['flat'] else 'GROWING'} (limit {args.flat_kib})")
    print(f"after close: {report['after_close']}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
