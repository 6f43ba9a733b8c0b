"""``benchmarks/run.py --quick``: one command produces every figure of issue 7, as JSON.

Timings are not asserted (they depend on the machine and its load); what is asserted is that
every figure each benchmark script declares is in the JSON with a number, or is skipped with
the reason (goldset-dev absent), and that the machine and the command are recorded.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT, clean_env

pytestmark = pytest.mark.crawl  # the crawl benchmark runs two real scrapy crawls over loopback

BENCH = ROOT / "benchmarks"


def declared_figures() -> dict[str, list[str]]:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return {name: [fid for fid, _, _ in figs] for name, figs in module.expected_figures().items()}
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--out", str(out)], cwd=ROOT,
                          env=clean_env(), capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert out.with_suffix(".md").exists()
    return json.loads(out.read_text())


def test_every_declared_figure_is_reported(report):
    declared = declared_figures()
    assert set(declared) == set(report["scripts"]) == {"tables", "pipeline", "datasketch", "throughput", "crawl",
                                                       "crawl_es", "scaling", "memory", "memory_f16"}
    ids = [f["id"] for f in report["figures"]]
    assert len(ids) == len(set(ids)), "a figure id is reported twice"
    for script, wanted in declared.items():
        got = {f["id"]: f for f in report["scripts"][script]["figures"]}
        assert set(wanted) <= set(got), (script, sorted(set(wanted) - set(got)))
        for fid in wanted:
            fig = got[fid]
            if fig.get("skipped"):  # only ever for want of goldset-dev, never an error
                assert "goldset-dev not found" in fig["skipped"], (fid, fig["skipped"])
            else:
                assert isinstance(fig["value"], (int, float)), (fid, fig)
                assert fig["unit"] and fig["name"]
                if fig["goal"]:
                    assert isinstance(fig["met"], bool), fid


def test_machine_command_and_summary_recorded(report):
    m = report["machine"]
    for key in ("cpu", "cores", "ram_gib", "os", "python", "packages", "commit"):
        assert m[key], key
    assert m["packages"]["numpy"] and m["packages"]["trafilatura"]
    assert "benchmarks/run.py --quick" in report["command"]
    assert report["load"]["samples"] >= 1
    assert not report["summary"]["errors"]
    met, missed = set(report["summary"]["met"]), set(report["summary"]["missed"])
    assert met | missed == {f["id"] for f in report["figures"] if f["met"] is not None}


def test_goldset_figures_are_skipped_with_a_message_when_absent(tmp_path):
    out = tmp_path / "pipeline.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_pipeline.py"), "--quick", "--goldset",
                           str(tmp_path / "nowhere"), "--json", str(out)], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["figures"] and all("goldset-dev not found" in f["skipped"] for f in data["figures"])
    assert all(f["value"] is None for f in data["figures"])
