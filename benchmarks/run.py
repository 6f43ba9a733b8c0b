"""``make bench``: run every benchmark, print one table, write it as JSON (and Markdown).

    .venv/bin/python benchmarks/run.py            # the full suite (tens of minutes; see below)
    .venv/bin/python benchmarks/run.py --quick    # a smoke run: every figure, small sizes (~1 min)
    .venv/bin/python benchmarks/run.py --only tables,memory --save

One script per target of issue 7, each also runnable alone (``--help``):

  target 1  bench_pipeline.py    per-page cost by stage on goldset-dev vs trafilatura alone
  target 2  bench_tables.py      permutation tables, 10k-10M fingerprints, vs numpy brute force
  target 3  bench_datasketch.py  against datasketch MinHashLSH: throughput and Gold-Set F1
  issue 14  bench_throughput.py  HTML -> verdict, ours against resiliparse/trafilatura + datasketch (item 5)
  target 4  bench_crawl.py       scrapy crawl of a generated 2,000-page site, dedup on vs off
            (crawl_es: the same into the noida-db Elasticsearch emulator, one crawl per mode)
  target 6  bench_scaling.py     cost per page and per query, 10k-1M documents
  target 5  bench_memory.py      RAM per document and reopen time at 1M documents
            (memory_f16: the same index with vector_dtype="f16", its vector file beside the cache)

Each script runs in its own process (clean RSS; one failing does not stop the others) and
writes JSON; this runner adds the machine (CPU, cores, RAM, OS, Python, package versions,
commit), the command, the machine's load average while it ran, and writes ``--out``
(default ``out/bench.json``, ``out/bench-quick.json`` with ``--quick``) and the same table as
Markdown beside it.  ``--save`` also writes ``benchmarks/results/latest.json`` (committed).

The synthetic 1M-document index of targets 5 and 6 is kept in ``out/bench-cache/`` (about
8.5 GB) and reused by later runs; ``--fresh-cache`` rebuilds it.  Goldset-dev is read from
``../shared/data/goldset-dev`` (``--goldset``); when it is absent, the figures that need it
are reported as skipped.

Cited by: `make bench` (Makefile), docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import common

#: (name, script, target), in running order: scaling grows the synthetic index memory reuses
SCRIPTS = [
    ("tables", "bench_tables.py", 2),
    ("pipeline", "bench_pipeline.py", 1),
    ("datasketch", "bench_datasketch.py", 3),
    ("throughput", "bench_throughput.py", 14),  # issue 14 item 5: HTML -> verdict against two peers
    ("crawl", "bench_crawl.py", 4),
    ("crawl_es", "bench_crawl.py", 4),  # the same crawls into the noida-db Elasticsearch emulator
    ("scaling", "bench_scaling.py", 6),
    ("memory", "bench_memory.py", 5),
    ("memory_f16", "bench_memory.py", 5),  # the same index opened with LocalIndex(vector_dtype="f16")
]
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "latest.json"


def expected_figures() -> dict[str, list[tuple[str, str, str]]]:
    """Every figure id each script reports (quick or full), from the scripts' FIGURES lists."""
    import importlib

    other = {"crawl_es": "ES_FIGURES", "memory_f16": "F16_FIGURES"}  # a script run in a second configuration
    return {name: getattr(importlib.import_module(script[:-3]), other.get(name, "FIGURES"))
            for name, script, _ in SCRIPTS}


class LoadSampler(threading.Thread):
    """Samples the 1-minute load average every few seconds while the benchmarks run."""

    def __init__(self, every: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.every, self.samples, self._stop_event = every, [], threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.samples.append(common.loadavg())
            self._stop_event.wait(self.every)

    def stop(self) -> dict[str, float]:
        self._stop_event.set()
        s = [x for x in self.samples if x == x] or [float("nan")]
        return {"mean": round(sum(s) / len(s), 2), "max": max(s), "min": min(s), "samples": len(s)}


def f16_cache(cache: Path) -> Path:
    """A folder beside the synthetic index for its f16 vector file, sharing its records (a symlink
    to its SQLite file), so neither configuration's vector file rebuilds the other's."""
    folder = cache.with_name(cache.name + "-f16")
    folder.mkdir(parents=True, exist_ok=True)
    if (cache / "dedup.sqlite").exists() and not (folder / "dedup.sqlite").exists():
        (folder / "dedup.sqlite").symlink_to((cache / "dedup.sqlite").resolve())
        for name in ("synthetic.json",):
            if (cache / name).exists():
                (folder / name).write_bytes((cache / name).read_bytes())
    return folder


def run_script(name: str, script: str, args: argparse.Namespace, tmp: Path, outputs: dict[str, Path]) -> dict:
    out = tmp / f"{name}.json"
    cmd = [sys.executable, str(HERE / script), "--json", str(out), "--seed", str(args.seed)]
    if args.quick:
        cmd.append("--quick")
    if name in ("pipeline", "datasketch", "throughput", "scaling"):
        cmd += ["--goldset", args.goldset]
    if name == "crawl":
        cmd += ["--index-uri", args.index_uri]
    if name == "crawl_es":  # one crawl per mode: each is a few minutes through the emulator
        cmd += ["--index-uri", "es-emulator", "--reps", "1"]
    if name in ("scaling", "memory"):  # the default's vectors, also in a cache an older version made with f16
        cmd += ["--cache", str(args.cache), "--vector-dtype", "i8"]
    if name == "memory_f16":
        cmd += ["--cache", str(f16_cache(Path(args.cache))), "--vector-dtype", "f16"]
    if name == "scaling" and "tables" in outputs and outputs["tables"].exists():
        cmd += ["--tables-json", str(outputs["tables"])]
    print(f"\n### {name}: {shlex.join([Path(cmd[0]).name, *cmd[1:]])}", flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=common.ROOT, env=common.env(), timeout=args.timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    outputs[name] = out
    if code == 0 and out.exists():
        return json.loads(out.read_text())
    return {"script": script, "error": f"exit status {code} after {time.perf_counter() - t0:.0f} s", "figures": []}


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [f"Measured {report['date']} on {common.machine_line(m)}.",
             f"Load average while running: mean {report['load']['mean']}, max {report['load']['max']} "
             f"({m['cores']} cores).",
             f"Command: `{report['command']}` ({report['seconds']:.0f} s).", "",
             "| target | figure | value | unit | goal | status |", "|---|---|---|---|---|---|"]
    for row in common.figure_rows(report["figures"]):
        lines.append("| " + " | ".join(common.fmt(v) if not isinstance(v, str) else v for v in row) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every figure")
    p.add_argument("--only", default="", help="comma-separated: " + ",".join(n for n, _, _ in SCRIPTS))
    p.add_argument("--out", default=None, help="JSON output (default out/bench.json; --quick out/bench-quick.json)")
    p.add_argument("--save", action="store_true", help=f"also write {RESULTS.relative_to(common.ROOT)}")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--goldset", default=str(common.GOLDSET))
    p.add_argument("--index-uri", default="local", help="crawl benchmark backend (see bench_crawl.py)")
    p.add_argument("--cache", default=None, help="synthetic index cache (default out/bench-cache/synthetic-seed7; "
                                                 "--quick: a temporary folder)")
    p.add_argument("--fresh-cache", action="store_true", help="rebuild the synthetic index cache")
    p.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per script")
    args = p.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - {n for n, _, _ in SCRIPTS}
    if unknown:
        p.error(f"--only: unknown {sorted(unknown)}; valid: {', '.join(n for n, _, _ in SCRIPTS)}")
    out = Path(args.out or common.ROOT / "out" / ("bench-quick.json" if args.quick else "bench.json"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-run-"))
    if args.cache is None:
        args.cache = tmp / "cache" if args.quick else common.ROOT / "out" / "bench-cache" / f"synthetic-seed{args.seed}"
    if args.fresh_cache:
        import shutil

        shutil.rmtree(args.cache, ignore_errors=True)
    command = shlex.join(["python", "benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])])
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "command": command,
                              "machine": common.machine(), "quick": args.quick, "scripts": {}, "figures": []}
    print(f"Machine: {common.machine_line(report['machine'])}\nCommand: {command}", flush=True)
    sampler = LoadSampler()
    sampler.start()
    t0 = time.perf_counter()
    outputs: dict[str, Path] = {}
    expected = expected_figures()
    try:
        for name, script, target in SCRIPTS:
            if only and name not in only:
                continue
            data = run_script(name, script, args, tmp, outputs)
            have = {f["id"] for f in data.get("figures", [])}
            for fid, fname, unit in expected[name]:  # a failed script still lists its figures
                if fid not in have:
                    data.setdefault("figures", []).append(
                        {"id": fid, "target": target, "name": fname, "value": None, "unit": unit, "goal": None,
                         "met": None, "note": "", "skipped": data.get("error", "not reported")})
            report["scripts"][name] = data
            report["figures"] += data["figures"]
    finally:
        report["load"] = sampler.stop()
        report["seconds"] = round(time.perf_counter() - t0, 1)
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    figs = report["figures"]
    report["summary"] = {
        "met": [f["id"] for f in figs if f["met"] is True], "missed": [f["id"] for f in figs if f["met"] is False],
        "skipped": [f["id"] for f in figs if f.get("skipped")],
        "errors": {n: d["error"] for n, d in report["scripts"].items() if d.get("error")},
    }
    figs.sort(key=lambda f: f["target"])
    print("\n" + "=" * 100)
    print(f"Benchmarks, {report['date']}: {common.machine_line(report['machine'])}")
    print(f"Load average while running: mean {report['load']['mean']}, max {report['load']['max']}")
    print(f"Command: {command} ({report['seconds']:.0f} s)\n")
    print(common.render_table(["target", "figure", "value", "unit", "goal", "status"], common.figure_rows(figs)))
    s = report["summary"]
    print(f"\n{len(s['met'])} goals met, {len(s['missed'])} missed, {len(s['skipped'])} figures skipped"
          + (f"; errors: {s['errors']}" if s["errors"] else ""))
    if args.quick:
        print("quick run: sizes far below the issue's (40 pages, 100k fingerprints, 3k documents, a 150-page "
              "site); its goals are judged on the full run")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1, default=common._json_default) + "\n"
    out.write_text(text, encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    if args.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
        print(f"wrote {RESULTS}")
    return 1 if s["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
