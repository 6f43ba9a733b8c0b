"""Target 4 (issue 14 item 6): crawl overhead of the add-on in a user's own Scrapy project, dedup on
versus off, and the speed-up of worker processes (item 7).

The site (``sitegen.py``: articles, print copies, tracking-parameter links, syndicated
near-copies, listing pages; ~1,000 URLs, ``--quick`` 150) is generated into a temporary
folder and served from a thread of this process (``crawler.sample_site.serve``).  The crawler is
a project as a user writes one (``userproject.py``, outside this repository's packages): a spider
that yields ``{"url", "html"}`` and follows every link, and the README's
``ADDONS = {"crawler.addon.DedupAddon": 100}``.  Each crawl is a real ``scrapy crawl news``
subprocess from that project's folder, loopback settings (no AutoThrottle, no delay):

* **off**: ``-s ADDONS={}``, the same crawl without dedup;
* **w0**, **w1**, **w2**: the add-on with ``DEDUP_WORKERS`` 0 (everything in the crawl process),
  1 and 2 worker processes; **on** is the default (``auto``), one of these.

Modes alternate over ``--reps`` rounds; the figure is the ratio of the median wall times (process
start to exit, what a user waits for), with the ratios of Scrapy's own ``elapsed_time_seconds``
and of the crawl processes' CPU seconds beside it (workers' CPU included).  The dropped log's mean
bytes per line are reported beside the pages' mean HTML bytes.

``--recrawl``: instead, a crawl's life: each round crawls the site without dedup (**off**), with it into a
fresh index (**first**), and again into that index with nothing changed (**again**, the daily recrawl: every
page's bytes are known, nothing is parsed or written); the figures are the ratios of the median wall and
CPU times (again / first, again / off) and what the index, the dropped log and the feed grew by in the
second crawl.

``--index-uri``: ``local`` (default: ``local://`` in a fresh folder per crawl), an
Elasticsearch URI ``http(s)://HOST:PORT/NAME`` (each crawl gets ``NAME-bench-<mode>-<n>``;
the indices are left in the cluster: delete them afterwards), or ``es-emulator`` (starts
the noida-db emulator of tests/es_server.py, as the test suite does).

Cited by: docs/performance.md ("Today's figures", "Crawling: the add-on's overhead", "A recrawl of an
unchanged site"), docs/crawling.md."""
from __future__ import annotations

import json
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
import userproject

from dedup.workers import default_workers

FIGURES = [
    ("t4.pages", "pages crawled per run", "pages"),
    ("t4.off_s", "crawl wall time, dedup off", "s"),
    ("t4.on_s", "crawl wall time, dedup on (DEDUP_WORKERS=auto)", "s"),
    ("t4.ratio_wall", "wall-time ratio on/off", "x"),
    ("t4.ratio_elapsed", "Scrapy elapsed-time ratio on/off", "x"),
    ("t4.ratio_cpu", "CPU-time ratio on/off", "x"),
    ("t4.dedup_ms_per_page", "added cost per page with dedup on", "ms/page"),
    ("t4.ratio_w0", "wall-time ratio on/off, DEDUP_WORKERS=0 (one process)", "x"),
    ("t4.ratio_w1", "wall-time ratio on/off, DEDUP_WORKERS=1", "x"),
    ("t4.ratio_w2", "wall-time ratio on/off, DEDUP_WORKERS=2", "x"),
    ("t4.speedup_w1_w2", "speed-up of the dedup crawl from 1 to 2 workers (wall w1 / w2)", "x"),
    ("t4.log_line_bytes", "dropped-log bytes per dropped page", "B"),
    ("t4.html_bytes", "HTML bytes per page (for comparison)", "B"),
]
#: the same figures with another backend (``--index-uri`` not ``local``): ``t4es.*``, no goal
ES_FIGURES = common.figures_of(FIGURES, "t4.", "t4es.", "Elasticsearch")
_STAT = re.compile(r"'([\w/.\-]+)': (\d+(?:\.\d+)?)")
WORKERS = {"w0": 0, "w1": 1, "w2": 2}


def stats(log: str) -> dict[str, float]:
    """Numeric Scrapy stats from the final "Dumping Scrapy stats" block of a log."""
    block = log.rsplit("Dumping Scrapy stats:", 1)[-1] if "Dumping Scrapy stats:" in log else ""
    return {k: float(v) for k, v in _STAT.findall(block)}


def index_uri(base: str, folder: Path, mode: str, n: int) -> str:
    if base == "local":
        return f"local://{folder / 'index'}"
    return f"{base.rstrip('/')}-bench-{mode}-{n}"


def crawl(project: Path, url: str, folder: Path, mode: str, uri: str, extractor: str | None = None) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "crawl.log"
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={url}",
           "-s", f"DEDUP_INDEX={uri}", "-s", f"DEDUP_DROPPED_LOG={folder / 'dropped.jsonl'}",
           "-s", "LOG_LEVEL=INFO", "-s", f"LOG_FILE={log}"]
    if mode == "off":
        cmd += ["-s", "ADDONS={}"]
    else:
        cmd += ["-s", f"DEDUP_WORKERS={WORKERS[mode]}"]
        if extractor:
            cmd += ["-s", f"DEDUP_EXTRACTOR={extractor}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers are the crawl's children: counted too
    t0 = time.perf_counter()
    env = {**common.env(), "PYTHONPATH": str(common.ROOT)}  # the add-on from this tree, the project from cwd
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    if proc.returncode != 0:
        raise RuntimeError(f"scrapy crawl ({mode}) failed with {proc.returncode}:\n{(text or proc.stderr)[-3000:]}")
    st = stats(text)
    dropped_log = folder / "dropped.jsonl"
    lines = dropped_log.read_bytes().splitlines() if dropped_log.exists() else []
    return {"mode": mode, "wall": wall, "refetched": int(st.get("dedup/refetched", 0)),
            "log_bytes": dropped_log.stat().st_size if dropped_log.exists() else 0, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "elapsed": st.get("elapsed_time_seconds", float("nan")), "responses": int(st.get("response_received_count", 0)),
            "items": int(st.get("item_scraped_count", 0)), "dropped": int(st.get("item_dropped_count", 0)),
            "flagged": int(st.get("dedup/near_duplicate", 0) + st.get("dedup/duplicate", 0)),
            "exact": int(st.get("dedup/exact_duplicate", 0)), "errors": int(st.get("dedup/errors", 0)),
            "indexed": int(st.get("dedup/index/added", 0)),
            "line_bytes": statistics.mean(len(x) + 1 for x in lines) if lines else float("nan")}


def html_bytes(site: Path) -> float:
    pages = [p.stat().st_size for p in site.rglob("*.html")]
    return statistics.mean(pages) if pages else float("nan")


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--pages", type=int, default=None, help="site size in URLs (default 1000; --quick 150)")
    p.add_argument("--reps", type=int, default=None, help="crawls per mode (default 3; --quick 1)")
    p.add_argument("--index-uri", default="local",
                   help="local (default), http(s)://HOST:PORT/NAME or es-emulator")
    p.add_argument("--extractor", default=None, help="DEDUP_EXTRACTOR of the dedup crawls (default: the default's)")
    p.add_argument("--recrawl", action="store_true", help="measure a recrawl of the unchanged site (see above)")
    args = p.parse_args(argv)
    if args.recrawl:
        return recrawl(args)
    pages = args.pages or (150 if args.quick else 1000)
    reps = args.reps or (1 if args.quick else 3)
    res = common.Results("bench_crawl.py", 4, "crawl overhead in a user's project, dedup on vs off, 0-2 workers", args)
    from crawler.sample_site import serve, stop

    tmp = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    emulator = None
    base = args.index_uri
    auto = f"w{min(default_workers(), 2)}"
    try:
        if base == "es-emulator":
            sys.path.insert(0, str(common.ROOT / "tests"))
            from es_server import Emulator  # the test suite's noida-db runner

            emulator = Emulator(tmp / "noida")
            base = emulator.start() + "/bench"
        counts = sitegen.generate(tmp / "site", pages, args.seed)
        page_bytes = html_bytes(tmp / "site")
        project = userproject.write(tmp / "project")
        server, url = serve(directory=tmp / "site")
        runs = []
        modes = ["off", "w0", "w1", "w2"]
        try:
            for r in range(reps):
                for mode in (modes if r % 2 == 0 else modes[::-1]):
                    folder = tmp / f"{mode}-{r}"
                    run = crawl(project, url, folder, mode, index_uri(base, folder, mode, r), args.extractor)
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

    on, off = (lambda k: med(auto, k)), (lambda k: med("off", k))
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

    figure("t4.pages", responses, "pages", goal=(">=", 1000),
           note=f"site: {json.dumps(counts)}; {reps} crawls per mode; user project (url + html items, ADDONS); {backend}")
    figure("t4.off_s", off("wall"), "s")
    figure("t4.on_s", on("wall"), "s", note=f"DEDUP_WORKERS=auto is {auto[1]} on this machine")
    figure("t4.ratio_wall", on("wall") / off("wall"), "x", goal=("<=", 1.5), note=backend)
    figure("t4.ratio_elapsed", on("elapsed") / off("elapsed"), "x",
           note="elapsed_time_seconds: from engine start, without process start-up")
    figure("t4.ratio_cpu", on("cpu") / off("cpu"), "x", note="user+system seconds of the crawl and its workers")
    figure("t4.dedup_ms_per_page", (on("wall") - off("wall")) / max(responses, 1) * 1e3, "ms/page")
    for mode in ("w0", "w1", "w2"):
        figure(f"t4.ratio_{mode}", med(mode, "wall") / off("wall"), "x")
    figure("t4.speedup_w1_w2", med("w1", "wall") / med("w2", "wall"), "x",
           note="2 workers beside the crawl process need 3 cores to show their full effect")
    figure("t4.log_line_bytes", on("line_bytes"), "B", note="title, text, tagged fields, verdict; no HTML")
    figure("t4.html_bytes", page_bytes, "B")
    res.table("crawls", ["mode", "wall s", "elapsed s", "CPU s", "responses", "items", "dropped", "flagged",
                         "indexed", "errors"],
              [[r["mode"], r["wall"], r["elapsed"], r["cpu"], r["responses"], r["items"], r["dropped"], r["flagged"],
                r["indexed"], r["errors"]] for r in runs])
    if local:
        res.note("Elasticsearch: `python benchmarks/bench_crawl.py --index-uri es-emulator` (noida-db; run.py "
                 "does, as crawl_es) or --index-uri http://HOST:PORT/NAME for a real cluster")
    res.finish(args.json)
    return 0


RECRAWL_FIGURES = [
    ("t4r.first_s", "first crawl into a fresh index, wall", "s"),
    ("t4r.again_s", "the same site crawled again unchanged into that index, wall", "s"),
    ("t4r.again_vs_first_wall", "wall-time ratio again / first", "x"),
    ("t4r.again_vs_first_cpu", "CPU-time ratio again / first", "x"),
    ("t4r.again_vs_off_wall", "wall-time ratio again / off (dedup off, fresh)", "x"),
    ("t4r.added_cpu", "dedup's own CPU on the recrawl against the first crawl: (again - off) / (first - off)", "x"),
    ("t4r.refetched_share", "pages of the second crawl known as refetched", "share"),
    ("t4r.log_growth", "dropped-log bytes added by the second crawl, per dropped page of the first", "B"),
]


def recrawl(args) -> int:
    """``--recrawl``: see the module docstring."""
    pages = args.pages or (150 if args.quick else 1000)
    reps = args.reps or (1 if args.quick else 3)
    res = common.Results("bench_crawl.py --recrawl", 4, "a recrawl of an unchanged site against its first crawl", args)
    from crawler.sample_site import serve, stop

    tmp = Path(tempfile.mkdtemp(prefix="bench-recrawl-"))
    mode = f"w{min(default_workers(), 2)}"
    runs: list[dict] = []
    try:
        sitegen.generate(tmp / "site", pages, args.seed)
        project = userproject.write(tmp / "project")
        server, url = serve(directory=tmp / "site")
        try:
            for r in range(reps):
                folder = tmp / f"round-{r}"
                uri = index_uri("local", folder, mode, r)
                off = crawl(project, url, tmp / f"off-{r}", "off", uri)
                first = crawl(project, url, folder, mode, uri, args.extractor)
                first_log = first["log_bytes"]
                again = crawl(project, url, folder, mode, uri, args.extractor)
                again["log_added"] = again["log_bytes"] - first_log
                for name, run in (("off", off), ("first", first), ("again", again)):
                    run["mode"] = name
                    runs.append(run)
                    print(f"  {name} #{r}: {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU, {run['responses']} "
                          f"responses, {run['refetched']} refetched", flush=True)
                shutil.rmtree(folder, ignore_errors=True)
        finally:
            stop(server)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["mode"] == mode)

    names = {fid: (name, unit) for fid, name, unit in RECRAWL_FIGURES}

    def figure(fid: str, value: float, note: str = "") -> None:
        res.figure(fid, names[fid][0], value, names[fid][1], note=note)

    figure("t4r.first_s", med("first", "wall"), note=f"{reps} rounds; user project; embedded index; DEDUP_WORKERS={mode[1]}")
    figure("t4r.again_s", med("again", "wall"))
    figure("t4r.again_vs_first_wall", med("again", "wall") / med("first", "wall"))
    figure("t4r.again_vs_first_cpu", med("again", "cpu") / med("first", "cpu"))
    figure("t4r.again_vs_off_wall", med("again", "wall") / med("off", "wall"),
           note="the floor: Scrapy fetching the same pages without dedup")
    figure("t4r.added_cpu", (med("again", "cpu") - med("off", "cpu")) / max(med("first", "cpu") - med("off", "cpu"), 1e-9),
           note="CPU seconds of the crawl process and its workers beyond Scrapy's own (off)")
    figure("t4r.refetched_share", med("again", "refetched") / max(med("again", "responses"), 1))
    figure("t4r.log_growth", med("again", "log_added") / max(med("first", "exact"), 1),
           note="each dropped page fetched again: its drop line's offset in a batched 'seen' line")
    res.table("crawls", ["mode", "wall s", "CPU s", "responses", "items", "dropped", "refetched", "dropped log B"],
              [[r["mode"], r["wall"], r["cpu"], r["responses"], r["items"], r["dropped"], r["refetched"],
                r["log_bytes"]] for r in runs])
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
