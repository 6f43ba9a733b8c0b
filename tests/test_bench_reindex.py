"""``benchmarks/bench_reindex.py --quick``: the cluster's CPU told apart into the emulator's saves and its work.

noida-db writes its whole store again after writes, in a thread named ``autosave``; that CPU grows with a
row's wall time times the store's size, so the rows report it apart from the work on the requests. Timings
are not asserted, only that the split is there, adds up, and finds the thread.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, clean_env

DATA = ROOT.parent / "shared" / "data" / "goldset-dev"


@pytest.mark.skipif(not DATA.is_dir(), reason="goldset-dev not found (the corpus is made from its pages)")
def test_cluster_cpu_is_split_into_saves_and_work(tmp_path):
    out = tmp_path / "reindex.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_reindex.py"), "--quick", "--runs",
                           "plain,dedup", "--json", str(out)], cwd=ROOT, env=clean_env(), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = next(t for t in json.loads(out.read_text())["tables"] if t["name"] == "runs")
    rows = {r[0]: dict(zip(table["columns"], r)) for r in table["rows"]}
    assert set(rows) == {"plain", "dedup"}
    for row in rows.values():
        assert 0 <= row["cluster_save_s"] <= row["cluster_cpu_s"] + 0.05
        assert row["cluster_work_s"] == pytest.approx(row["cluster_cpu_s"] - row["cluster_save_s"], abs=0.15)
    assert rows["plain"]["work_vs_plain"] == 1.0 and rows["dedup"]["work_vs_plain"] > 0
    # 300 documents of ~65 KB make a store the thread takes ticks of CPU to write: it was found
    assert sum(r["cluster_save_s"] for r in rows.values()) > 0


@pytest.mark.skipif(not DATA.is_dir(), reason="goldset-dev not found (the corpus is made from its pages)")
def test_updates_day_after_day_stay_in_step_and_settle(tmp_path):
    """``benchmarks/bench_update.py --quick``: two days of edits (kept pages with copies rewritten among them),
    each followed by ``--update``: the copies are decided again after the read, ``--check`` finds the destination
    in step each day, and an update after a day without edits decides nothing again."""
    out = tmp_path / "update.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_update.py"), "--quick", "--json", str(out)],
                          cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = next(t for t in json.loads(out.read_text())["tables"] if t["name"] == "days")
    days = [dict(zip(table["columns"], r)) for r in table["rows"]]
    assert [d["day"] for d in days] == [0, 1, 2, 3] and all(d["in_step"] for d in days), days
    assert all(d["edited"] > 0 and d["decided_again"] > 0 for d in days[1:3]), days
    assert days[3]["edited"] == 0 and days[3]["changed"] == 0 and days[3]["decided_again"] == 0, days
