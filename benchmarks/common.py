"""What every benchmark script shares: arguments, the machine, timers, RSS, results as JSON.

A script builds a :class:`Results`, adds *figures* (one measured number each, with its unit
and, when the issue sets one, its goal) and *tables* (supporting rows, e.g. a scaling
table), prints them and writes them as JSON for ``benchmarks/run.py`` to merge.  A figure
whose input is missing (no goldset-dev) is recorded with ``skipped`` and a reason instead
of a value, so the JSON always has every figure.

Used by: most scripts here (data paths, the metric, the machine line).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # scripts run as `python benchmarks/x.py` import the project from the tree
    sys.path.insert(0, str(ROOT))
#: where docs/accuracy.md's `dedup evaluate ../shared/data/goldset-dev` finds the Gold Set (never copied here)
GOLDSET = ROOT.parent / "shared" / "data" / "goldset-dev"
PACKAGES = ("numpy", "trafilatura", "lxml", "nltk", "xxhash", "usearch", "scrapy", "twisted", "datasketch",
            "scipy", "elasticsearch")

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda v, g: v <= g, ">=": lambda v, g: v >= g, "<": lambda v, g: v < g, ">": lambda v, g: v > g,
    "==": lambda v, g: v == g,
}


def env() -> dict[str, str]:
    """This environment with NLTK_DATA pointing at the repo's data and no proxies (loopback only)."""
    out = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    out.setdefault("NLTK_DATA", str(ROOT / ".nltk_data"))
    return out


os.environ.setdefault("NLTK_DATA", str(ROOT / ".nltk_data"))


def parser(description: str) -> argparse.ArgumentParser:
    """The arguments every script takes: ``--quick``, ``--json PATH``, ``--seed``."""
    p = argparse.ArgumentParser(description=description.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a small smoke run (seconds, not minutes)")
    p.add_argument("--json", metavar="PATH", help="write the results here as JSON")
    p.add_argument("--seed", type=int, default=7, help="random seed (default 7, as dedup evaluate)")
    return p


def goldset_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--goldset", default=os.environ.get("DEDUP_GOLDSET", str(GOLDSET)),
                   help=f"goldset-dev folder (default {GOLDSET}; $DEDUP_GOLDSET)")


def goldset_missing(folder: str | Path) -> str | None:
    """None when ``folder`` holds goldset-dev, else the message to skip with."""
    path = Path(folder)
    if path.is_dir() and any(path.glob("*/*.htm*")):
        return None
    return (f"goldset-dev not found at {path}: figures on Gold Set pages are skipped "
            "(pass --goldset DIR or set DEDUP_GOLDSET; the pages are never copied into the repository)")


def datasketch_missing() -> str | None:
    """None when datasketch (the peer the benchmarks compare against) imports, else the message to skip with."""
    try:
        import datasketch  # noqa: F401
    except ImportError:
        return "datasketch is not installed: pip install -e '.[bench]' (make bench does)"
    return None


def compared_url(verdict) -> str:
    """The URL of the kept page a verdict's scores compare the page with: ``verdict.nearest`` (``duplicate_of``
    names the root of the copy's group, which is another page when the nearest is itself a copy), else the copy
    named, else the best candidate; '' when none. ``dedup evaluate`` reads the best cluster the same way."""
    return verdict.nearest or verdict.duplicate_of or verdict.scores.get("candidate", "")


def goldset_pages(folder: str | Path, seed: int, limit: int | None = None) -> list[tuple[str, str, bytes]]:
    """``(cluster, url, html bytes)`` in the online metric's order (``dedup evaluate --seed``)."""
    import random

    from dedup.cli.evaluate import load_clusters, page_url

    pages = load_clusters(folder)
    order = list(range(len(pages)))
    random.Random(seed).shuffle(order)
    if limit:
        order = order[:limit]
    return [(pages[i][0], page_url(i), pages[i][1].read_bytes()) for i in order]


# -- the machine ---------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"') + f" (kernel {platform.release()})"
    except OSError:
        pass
    return platform.platform()


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _git() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+uncommitted changes" if dirty else "") if head else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine() -> dict[str, Any]:
    """CPU model, cores, RAM, OS, Python, package versions and the commit measured."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    ram = _meminfo("MemTotal")
    return {
        "cpu": _cpu_model(), "cores": os.cpu_count(), "cores_usable": usable,
        "ram_gib": round(ram / 2**30, 1) if ram else None, "os": _os_name(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": versions, "commit": _git(),
    }


def machine_line(m: dict[str, Any]) -> str:
    pk = ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v)
    return (f"{m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['ram_gib']} GiB RAM, {m['os']}, "
            f"{m['python']}; {pk}; commit {m['commit']}")


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


# -- measuring ----------------------------------------------------------------------------------
def rss() -> dict[str, int]:
    """This process's resident memory in bytes: total, anonymous, file-backed (Linux)."""
    out = {"rss": 0, "anon": 0, "file": 0, "hwm": 0}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            field = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "VmHWM": "hwm"}.get(key)
            if field:
                out[field] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def trim_heap() -> None:
    """Give freed heap memory back to the OS (glibc ``malloc_trim``) so RSS shows what is held."""
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def figures_of(figures: Sequence[tuple[str, str, str]], prefix: str, other: str,
               label: str) -> list[tuple[str, str, str]]:
    """``figures`` (id, name, unit) measured again in another configuration: ids under ``other`` instead
    of ``prefix``, names ending in ``, label``."""
    return [(fid.replace(prefix, other, 1), f"{name}, {label}", unit) for fid, name, unit in figures]


def pct(values: Sequence[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


class Timer:
    """Accumulates named durations (seconds) and counts."""

    def __init__(self) -> None:
        self.total: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.total[name] = self.total.get(name, 0.0) + seconds

    def ms_per(self, name: str, n: int) -> float:
        return self.total.get(name, 0.0) / n * 1e3 if n else float("nan")


# -- results ------------------------------------------------------------------------------------
class Results:
    """The figures and tables of one script, written as JSON (see the module docstring)."""

    def __init__(self, script: str, target: int, title: str, args: argparse.Namespace | None = None) -> None:
        self.data: dict[str, Any] = {
            "script": script, "target": target, "title": title,
            "command": " ".join([Path(sys.executable).name, *sys.argv]) if sys.argv else script,
            "quick": bool(getattr(args, "quick", False)), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "load_start": loadavg(), "figures": [], "tables": [], "notes": [],
        }
        self._t0 = time.perf_counter()

    def figure(self, fid: str, name: str, value: float | int | None, unit: str, *,
               goal: tuple[str, float] | None = None, note: str = "", skipped: str | None = None,
               digits: int = 3) -> dict[str, Any]:
        """Record one figure; ``goal`` is ``(op, number)`` and sets ``met``."""
        if value is not None and not isinstance(value, (int, np.integer)):
            value = float(value)
            value = round(value, digits) if np.isfinite(value) else None
        elif value is not None:
            value = int(value)
        met = None
        if goal is not None and value is not None and not skipped:
            met = bool(_OPS[goal[0]](value, goal[1]))
        fig = {"id": fid, "target": self.data["target"], "name": name, "value": None if skipped else value,
               "unit": unit, "goal": f"{goal[0]} {goal[1]:g}" if goal else None, "met": met, "note": note}
        if skipped:
            fig["skipped"] = skipped
        self.data["figures"].append(fig)
        return fig

    def rename(self, prefix: str, new_prefix: str, suffix: str) -> None:
        """Figures ``prefix*`` become ``new_prefix*`` with ``suffix`` on their names (one script
        run in another configuration, reported beside the first: ids stay unique)."""
        for fig in self.data["figures"]:
            if fig["id"].startswith(prefix):
                fig["id"] = new_prefix + fig["id"][len(prefix):]
                fig["name"] += suffix

    def skip_all(self, ids: Iterable[tuple[str, str, str]], reason: str) -> None:
        """Record figures ``(id, name, unit)`` as skipped for ``reason``."""
        for fid, name, unit in ids:
            self.figure(fid, name, None, unit, skipped=reason)
        self.note(reason)

    def table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], note: str = "") -> None:
        self.data["tables"].append({"name": name, "columns": list(columns), "rows": [list(r) for r in rows],
                                    "note": note})

    def note(self, text: str) -> None:
        self.data["notes"].append(text)

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value

    def finish(self, path: str | None) -> dict[str, Any]:
        self.data["seconds"] = round(time.perf_counter() - self._t0, 1)
        self.data["load_end"] = loadavg()
        print_results(self.data)
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(self.data, indent=1, default=_json_default) + "\n", encoding="utf-8")
        return self.data


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "nan"
        a = abs(value)
        if a >= 1000:
            return f"{value:,.0f}"
        if a >= 100:
            return f"{value:.1f}"
        if a >= 1:
            return f"{value:.2f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in columns]] + [[fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)),
             "  ".join("-" * w for w in widths)]
    for row in cells[1:]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return "\n".join(lines)


def figure_rows(figures: Iterable[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for f in figures:
        met = "skipped" if f.get("skipped") else ("-" if f["met"] is None else ("met" if f["met"] else "MISSED"))
        rows.append([f["target"], f["name"], f["value"], f["unit"], f["goal"] or "", met])
    return rows


def print_results(data: dict[str, Any]) -> None:
    print(f"\n== target {data['target']}: {data['title']} ({data.get('seconds', '?')} s, "
          f"load {data['load_start']:.2f} -> {data.get('load_end', float('nan')):.2f})")
    print(render_table(["target", "figure", "value", "unit", "goal", "status"], figure_rows(data["figures"])))
    for t in data["tables"]:
        print(f"\n{t['name']}" + (f" ({t['note']})" if t.get("note") else ""))
        print(render_table(t["columns"], t["rows"]))
    for n in data["notes"]:
        print(f"note: {n}")
    sys.stdout.flush()
