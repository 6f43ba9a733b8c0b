"""Issue 15 item 6: installed like any package. The built wheel, installed into a fresh virtualenv
outside the repository (no ``make setup``, no NLTK_DATA, no PYTHONPATH), crawls the sample site
with a user's project and decides every page as this checkout does.

Runs in CI (``CI=true``, as ``.ci/run`` sets) or with ``DEDUP_TEST_WHEEL=1``: it builds the wheel and
installs its dependencies from PyPI (fast with pip's cache)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import ROOT, clean_env
from reliability.kill_resume import write_project

pytestmark = pytest.mark.skipif(
    os.environ.get("CI", "").lower() != "true" and os.environ.get("DEDUP_TEST_WHEEL") != "1",
    reason="builds and installs the wheel from PyPI: runs in CI or with DEDUP_TEST_WHEEL=1")


def _crawl(python: Path, project: Path, site_url: str, out: Path, env: dict[str, str]) -> dict[str, str]:
    proc = subprocess.run([str(python), "-m", "scrapy", "crawl", "pages", "-a", f"start_url={site_url}",
                           "-s", f"DEDUP_INDEX=local://{out / 'index'}", "-s", f"DEDUP_DROPPED_LOG={out / 'dropped.jsonl'}",
                           "-s", "CONCURRENT_REQUESTS=1", "-O", str(out / "items.jsonl")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "make setup" not in proc.stderr and "not found" not in proc.stderr, proc.stderr[-3000:]
    verdicts = {}
    for name, key in (("items.jsonl", "dedup"), ("dropped.jsonl", "verdict")):
        for line in (out / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            verdicts[row["url"]] = (row[key]["status"], row[key]["duplicate_of"])
    return verdicts


def test_the_wheel_in_a_fresh_venv_crawls_the_sample_site_as_this_checkout(site_url, tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
                   check=True, timeout=600, env=clean_env())
    (wheel,) = wheels.glob("scrapy_dedup-*.whl")
    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(fresh)
    python = fresh / "bin" / "python"
    env = {k: v for k, v in clean_env().items() if k not in ("NLTK_DATA", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, env=env,
                   timeout=600)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, env=env, timeout=1200)

    project = write_project(tmp_path / "project")
    env["SCRAPY_SETTINGS_MODULE"] = "userproj.settings"
    env["PYTHONPATH"] = str(project)  # the user's project only; the package comes from the venv
    env["HOME"] = str(tmp_path)  # no ~/nltk_data
    where = subprocess.run([str(python), "-c", "import dedup, crawler; print(dedup.__file__, crawler.__file__)"],
                           cwd=project, env=env, capture_output=True, text=True, check=True).stdout
    assert str(fresh) in where and str(ROOT) not in where, where
    installed = _crawl(python, project, site_url, tmp_path / "installed", env)

    here_env = clean_env()
    here_env["SCRAPY_SETTINGS_MODULE"] = "userproj.settings"
    here_env["PYTHONPATH"] = os.pathsep.join([str(project), str(ROOT)])
    checkout = _crawl(Path(sys.executable), project, site_url, tmp_path / "checkout", here_env)
    assert len(installed) > 30
    assert installed == checkout
