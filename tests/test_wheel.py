"""Issue 15 item 6: installed like any package. The built wheel, installed into a fresh virtualenv
outside the repository (no ``make setup``, no NLTK_DATA, no PYTHONPATH), crawls the sample site
with a user's project and decides every page as this checkout does. Issue 30 item 8: the README's recipe
for a user's own project (install, ``scrapy startproject``, the ADDONS line, a spider, the crawl, an
inspection command) runs as written in a fresh virtualenv.

Runs in CI (``CI=true``, as ``.ci/run`` sets) or with ``DEDUP_TEST_WHEEL=1``: it builds the wheel and
installs its dependencies from PyPI (fast with pip's cache)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import ROOT, clean_env, read_jsonl
from reliability.kill_resume import write_project
from test_docs import FENCE, OWN_PROJECT, README, _section

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


def fresh_venv(folder: Path) -> tuple[Path, dict[str, str]]:
    """A new virtualenv in ``folder`` (pip upgraded) and an environment without this checkout's traces."""
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    env = {k: v for k, v in clean_env().items() if k not in ("NLTK_DATA", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, env=env,
                   timeout=600)
    return python, env


def test_the_wheel_in_a_fresh_venv_crawls_the_sample_site_as_this_checkout(site_url, tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
                   check=True, timeout=600, env=clean_env())
    (wheel,) = wheels.glob("scrapy_dedup-*.whl")
    fresh = tmp_path / "venv"
    python, env = fresh_venv(fresh)
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


def test_the_readmes_own_project_recipe_works_as_written(site_url, tmp_path):
    """The README's blocks under OWN_PROJECT, run in order in a fresh virtualenv (activated, as the user's
    project environment is): the first shell block from an empty folder, ``CHECKOUT`` being this repository;
    the spider written where the README says; the last block in the project, ``example.org`` being the
    sample site on 127.0.0.1."""
    text = README.read_text(encoding="utf-8")
    start, end = _section(text, OWN_PROJECT)
    install, spider, crawl = (m.group(2) for m in FENCE.finditer(text, start, end))
    assert "news/spiders/pages.py" in text[start:end]
    fresh = tmp_path / "venv"
    _, env = fresh_venv(fresh)
    env.update(VIRTUAL_ENV=str(fresh), PATH=f"{fresh / 'bin'}{os.pathsep}{env['PATH']}", HOME=str(tmp_path))
    work = tmp_path / "work"
    work.mkdir()

    def bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=1800)
        assert proc.returncode == 0, f"{script}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return proc

    bash(install.replace("CHECKOUT", shlex.quote(str(ROOT))), work)
    project = work / "news"
    settings = (project / "news" / "settings.py").read_text(encoding="utf-8")
    assert 'ADDONS = {"crawler.addon.DedupAddon": 100}' in settings and "ADDONS = {}" not in settings
    (project / "news" / "spiders" / "pages.py").write_text(
        spider.replace("https://example.org/", site_url).replace('"example.org"', '"127.0.0.1"'), encoding="utf-8")
    where = bash("python -c 'import crawler, scrapy; print(crawler.__file__)'", project).stdout
    assert str(fresh) in where and str(ROOT) not in where, where
    out = bash(crawl, project)
    items = read_jsonl(project / "items.jsonl")
    assert len(items) > 20 and all(set(i) == {"url", "title", "text", "dedup"} for i in items), items[:1]
    assert "exact_duplicate" in out.stdout and (project / ".dedup" / "dropped.jsonl").exists(), out.stdout
