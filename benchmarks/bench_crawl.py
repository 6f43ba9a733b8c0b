"""Target 4: crawl overhead, ``scrapy crawl site`` over a generated loopback site with dedup on
versus off.

The site (``sitegen.py``: articles, print copies, tracking-parameter links, syndicated
near-copies, listing pages; >= 2,000 URLs, ``--quick`` 150) is generated into a temporary
folder and served from a thread of this process (``crawler.sample_site.serve``).  Each
crawl is a real ``scrapy crawl site`` subprocess from the repository root, loopback
settings (no AutoThrottle, no delay), exporting items with ``-O``:

* **on**: the project's pipelines, ``DedupPipeline`` (300) + ``IndexPipeline`` (800);
* **off**: only ``IndexPipeline``: the same spider still parses every page and extracts its
  main text, and the kept pages still go to the search index; no dedup check.

Modes alternate (off, on, on, off, ...) over ``--reps`` rounds; the figure is the ratio of the
median wall times (process start to exit, what a user waits for), with the ratios of
Scrapy's own ``elapsed_time_seconds`` and of the crawl processes' CPU seconds (less
sensitive to other load on the machine) beside it.

``--index-uri``: ``local`` (default: ``local://`` in a fresh folder per crawl), an
Elasticsearch URI ``http(s)://HOST:PORT/NAME`` (each crawl gets ``NAME-bench-<mode>-<n>``;
the indices are left in the cluster: delete them afterwards), or ``es-emulator`` (starts
the noida-db emulator of tests/es_server.py, as the test suite does).
"""
from __future__ import annotations

import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import sitegen

FIGURES = [
    ("t4.pages", "pages crawled per run", "pages"),
    ("t4.off_s", "crawl wall time, dedup off", "s"),
    ("t4.on_s", "crawl wall time, dedup on", "s"),
    ("t4.ratio_wall", "wall-time ratio on/off", "x"),
    ("t4.ratio_elapsed", "Scrapy elapsed-time ratio on/off", "x"),
    ("t4.ratio_cpu", "CPU-time ratio on/off", "x"),
    ("t4.dedup_ms_per_page", "added cost per page with dedup on", "ms/page"),
]
#: the same figures with another backend (``--index-uri`` not ``local``): ``t4es.*``, no goal
ES_FIGURES = [(fid.replace("t4.", "t4es.", 1), f"{name}, Elasticsearch", unit) for fid, name, unit in FIGURES]
_STAT = re.compile(r"'([\w/.\-]+)': (\d+(?:\.\d+)?)")
SCRAPY = str(Path(sys.executable).with_name("scrapy"))


def stats(log: str) -> dict[str, float]:
    """Numeric Scrapy stats from the final "Dumping Scrapy stats" block of a log."""
    block = log.rsplit("Dumping Scrapy stats:", 1)[-1] if "Dumping Scrapy stats:" in log else ""
    return {k: float(v) for k, v in _STAT.findall(block)}


def index_uri(base: str, folder: Path, mode: str, n: int) -> str:
    if base == "local":
        return f"local://{folder / 'index'}"
    return f"{base.rstrip('/')}-bench-{mode}-{n}"


def crawl(url: str, folder: Path, mode: str, uri: str) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "crawl.log"
    cmd = [SCRAPY, "crawl", "site", "-a", f"start_url={url}", "-O", str(folder / "items.jsonl"),
           "-s", f"DEDUP_INDEX={uri}", "-s", f"DEDUP_DROPPED_LOG={folder / 'dropped.jsonl'}",
           "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=INFO",
           "-s", f"LOG_FILE={log}"]
    if mode == "off":  # the spider still extracts main text; the search index still gets every page
        cmd += ["-s", 'ITEM_PIPELINES={"crawler.pipelines.IndexPipeline": 800}']
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=common.ROOT, env=common.env(), capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    if proc.returncode != 0:
        raise RuntimeError(f"scrapy crawl ({mode}) failed with {proc.returncode}:\n{(text or proc.stderr)[-3000:]}")
    st = stats(text)
    return {"mode": mode, "wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "elapsed": st.get("elapsed_time_seconds", float("nan")), "responses": int(st.get("response_received_count", 0)),
            "items": int(st.get("item_scraped_count", 0)), "dropped": int(st.get("item_dropped_count", 0)),
            "flagged": int(st.get("dedup/near_duplicate", 0) + st.get("dedup/duplicate", 0)),
            "exact": int(st.get("dedup/exact_duplicate", 0)), "errors": int(st.get("dedup/errors", 0)),
            "indexed": int(st.get("dedup/index/added", 0))}


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--pages", type=int, default=None, help="site size in URLs (default 2000; --quick 150)")
    p.add_argument("--reps", type=int, default=None, help="crawls per mode (default 3; --quick 1)")
    p.add_argument("--index-uri", default="local",
                   help="local (default), http(s)://HOST:PORT/NAME or es-emulator")
    args = p.parse_args(argv)
    pages = args.pages or (150 if args.quick else 2000)
    reps = args.reps or (1 if args.quick else 3)
    res = common.Results("bench_crawl.py", 4, "crawl overhead, dedup on vs off", args)
    from crawler.sample_site import serve, stop

    tmp = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    emulator = None
    base = args.index_uri
    try:
        if base == "es-emulator":
            sys.path.insert(0, str(common.ROOT / "tests"))
            from es_server import Emulator  # the test suite's noida-db runner

            emulator = Emulator(tmp / "noida")
            base = emulator.start() + "/bench"
        counts = sitegen.generate(tmp / "site", pages, args.seed)
        server, url = serve(directory=tmp / "site")
        runs = []
        try:
            for r in range(reps):
                for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
                    folder = tmp / f"{mode}-{r}"
                    run = crawl(url, folder, mode, index_uri(base, folder, mode, r))
                    runs.append(run)
                    print(f"  {mode} #{r}: {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU, "
                          f"{run['responses']} responses", flush=True)
                    shutil.rmtree(folder, ignore_errors=True)
        finally:
            stop(server)
    finally:
        if emulator is not None:
            emulator.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["mode"] == mode)

    on, off = (lambda k: med("on", k)), (lambda k: med("off", k))
    responses = int(on("responses"))
    local = args.index_uri == "local"
    if local:
        backend = "embedded index (local://)"
    elif args.index_uri == "es-emulator":
        backend = ("Elasticsearch API of the noida-db emulator (not Elasticsearch: its timings are not a "
                   "cluster's), dedup and search indices in it")
    else:
        backend = f"Elasticsearch at {args.index_uri}"
    # the embedded index carries the goals; another backend reports the same figures as t4es.*
    ids = dict(zip((f[0] for f in FIGURES), (f[0] for f in (FIGURES if local else ES_FIGURES))))
    names = {fid: name for fid, name, _ in (FIGURES if local else ES_FIGURES)}

    def figure(fid: str, value: float, unit: str, goal=None, note: str = "") -> None:
        res.figure(ids[fid], names[ids[fid]], value, unit, goal=goal if local else None, note=note)

    figure("t4.pages", responses, "pages", goal=(">=", 2000), note=f"site: {counts}; {reps} crawls per mode; {backend}")
    figure("t4.off_s", off("wall"), "s")
    figure("t4.on_s", on("wall"), "s")
    figure("t4.ratio_wall", on("wall") / off("wall"), "x", goal=("<=", 1.3), note=backend)
    figure("t4.ratio_elapsed", on("elapsed") / off("elapsed"), "x",
           note="elapsed_time_seconds: from engine start, without process start-up")
    figure("t4.ratio_cpu", on("cpu") / off("cpu"), "x", note="user+system seconds of the crawl process")
    figure("t4.dedup_ms_per_page", (on("wall") - off("wall")) / max(responses, 1) * 1e3, "ms/page")
    res.table("crawls", ["mode", "wall s", "elapsed s", "CPU s", "responses", "items", "dropped", "flagged",
                         "indexed", "errors"],
              [[r["mode"], r["wall"], r["elapsed"], r["cpu"], r["responses"], r["items"], r["dropped"], r["flagged"],
                r["indexed"], r["errors"]] for r in runs])
    if local:
        res.note("Elasticsearch: `python benchmarks/bench_crawl.py --index-uri es-emulator` (noida-db; run.py "
                 "does, as crawl_es) or --index-uri http://HOST:PORT/NAME for a real cluster")
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
