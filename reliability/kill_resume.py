"""Kill a JOBDIR crawl with SIGKILL at random points, run the same command again, and check that
every page of the site ends in the index or the dropped log exactly once.

    NLTK_DATA=.nltk_data .venv/bin/python -m reliability.kill_resume [--pages 1000] [--kills 3] [--seed 1]
                                                                     [--out out/kill_resume.json]

The crawl is a *user's* project, written to a temporary folder: its own spider (a dict item with
the raw HTML, links followed with ``response.follow``) and ``ADDONS = {"crawler.addon.DedupAddon":
100}``, nothing else of this repository. The site is ``benchmarks/sitegen.py``'s news site of
``--pages`` pages (articles, print copies, tracking-parameter links, syndicated near copies),
served on loopback. Each kill comes when a random number of further pages has been decided, plus a
random 0-300 ms, with 8 requests in flight; after the last kill the command runs to its end.

Checks (exit status 1 when one fails): the last run exits 0 with finish reason ``finished``; every
URL the site links to is in the index or in the dropped log, and exactly once in all; every
resumed run logged how many requests it recovered. Prints a summary and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parents[1]

SPIDER = '''
import scrapy


class PagesSpider(scrapy.Spider):
    """A user's spider: raw HTML in a dict item, every same-site link followed."""

    name = "pages"

    def __init__(self, start_url, **kwargs):
        super().__init__(**kwargs)
        self.start_url = start_url

    async def start(self):
        yield scrapy.Request(self.start_url)

    def parse(self, response):
        yield {"url": response.url, "html": response.text}
        for href in response.css("a::attr(href)").getall():
            if response.urljoin(href).startswith(self.start_url):
                yield response.follow(href, callback=self.parse)
'''

SETTINGS = '''
BOT_NAME = "userproj"
SPIDER_MODULES = ["userproj.spiders"]
ADDONS = {"crawler.addon.DedupAddon": 100}
ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 8
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = False
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
'''


def write_project(folder: Path) -> Path:
    """A minimal Scrapy project of a user, with the add-on; returns its folder."""
    (folder / "userproj" / "spiders").mkdir(parents=True, exist_ok=True)
    (folder / "scrapy.cfg").write_text("[settings]\ndefault = userproj.settings\n")
    (folder / "userproj" / "__init__.py").write_text("")
    (folder / "userproj" / "settings.py").write_text(SETTINGS)
    (folder / "userproj" / "spiders" / "__init__.py").write_text("")
    (folder / "userproj" / "spiders" / "pages.py").write_text(SPIDER)
    return folder


def site_urls(site: Path, base: str) -> set[str]:
    """Every URL of the site a complete crawl reaches: the start page and every same-site link."""
    urls = {base}
    for path in site.rglob("*.html"):
        page = base + path.relative_to(site).as_posix()
        for href in re.findall(r'href="([^"#]*)"', path.read_text(encoding="utf-8")):
            url = urljoin(page, href.replace("&amp;", "&"))
            if url.startswith(base):
                urls.add(url)
    return urls


def count_decided(index: Path, dropped: Path) -> int:
    n = 0
    db = index / "dedup.sqlite"
    if db.exists():
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
            try:
                n += con.execute("SELECT count(*) FROM records").fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:
            pass
    if dropped.exists():
        n += dropped.read_bytes().count(b"\n")
    return n


def crawl_command(project: Path, start_url: str, out: Path) -> tuple[list[str], dict[str, str]]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"start_url={start_url}",
           "-s", f"JOBDIR={out / 'job'}", "-s", f"DEDUP_INDEX=local://{out / 'index'}",
           "-s", f"DEDUP_DROPPED_LOG={out / 'dropped.jsonl'}"]
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("NLTK_DATA", str(ROOT / ".nltk_data"))
    env["SCRAPY_SETTINGS_MODULE"] = "userproj.settings"
    return cmd, env


def _recovered(log: str) -> int | None:
    """Requests the run recovered: its stats, or (a killed run dumps none) its journal log line."""
    found = re.findall(r"'dedup/journal/recovered': (\d+)", log) or re.findall(
        r"Request journal .*: (\d+) undecided request\(s\) of the previous run scheduled again", log)
    return int(found[-1]) if found else None


def kill_and_resume(start_url: str, urls: set[str], out: Path, *, kills: int, seed: int,
                    timeout: float = 900) -> dict[str, Any]:
    """Run the crawl, SIGKILL it ``kills`` times at random points, finish it, check the outputs."""
    from index.local import LocalIndex

    rng = random.Random(seed)
    project = write_project(out / "project")
    cmd, env = crawl_command(project, start_url, out)
    index, dropped = out / "index", out / "dropped.jsonl"
    runs: list[dict[str, Any]] = []
    # each kill comes after a random share of what is left, so kills spread over the whole crawl
    for _ in range(kills):
        before = count_decided(index, dropped)
        target = before + max(1, int(rng.uniform(0.05, 0.5) * max(1, len(urls) - before)))
        log_path = out / f"run{len(runs) + 1}.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(cmd, cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and count_decided(index, dropped) < target and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0, 0.3))
            ended = proc.poll() is not None
            if not ended:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        text = log_path.read_text()
        runs.append({"killed": not ended, "decided_at_kill": count_decided(index, dropped),
                     "recovered": _recovered(text), "returncode": proc.returncode})
        if ended:
            break
    log_path = out / f"run{len(runs) + 1}.log"
    with log_path.open("w") as log:
        proc = subprocess.run(cmd, cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    text = log_path.read_text()
    finish = re.findall(r"'finish_reason': '([^']+)'", text)
    runs.append({"killed": False, "recovered": _recovered(text),
                 "returncode": proc.returncode, "finish_reason": finish[-1] if finish else None})

    with LocalIndex(index) as ix:
        kept = Counter(r.url for r in ix.iter_records())
    dropped_urls = Counter(json.loads(line)["url"] for line in dropped.read_text().splitlines() if line.strip())
    both = kept + dropped_urls
    missing = sorted(urls - set(both))
    twice = sorted(u for u, n in both.items() if n > 1)
    foreign = sorted(set(both) - urls)
    problems = []
    if proc.returncode != 0 or runs[-1]["finish_reason"] != "finished":
        problems.append(f"last run: exit {proc.returncode}, finish reason {runs[-1]['finish_reason']}")
    if missing:
        problems.append(f"{len(missing)} page(s) in neither the index nor the dropped log, e.g. {missing[:3]}")
    if twice:
        problems.append(f"{len(twice)} page(s) recorded more than once, e.g. {twice[:3]}")
    if foreign:
        problems.append(f"{len(foreign)} URL(s) not of the site, e.g. {foreign[:3]}")
    for i, run in enumerate(runs[1:], 2):
        if runs[i - 2]["killed"] and run["recovered"] is None:
            problems.append(f"run {i} follows a kill but its stats do not say how many requests it recovered")
    return {"pages": len(urls), "kills": sum(r["killed"] for r in runs), "runs": runs, "kept": sum(kept.values()),
            "dropped": sum(dropped_urls.values()), "missing": len(missing), "recorded_twice": len(twice),
            "problems": problems, "ok": not problems}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=1000, help="pages of the generated site (default 1000)")
    ap.add_argument("--kills", type=int, default=3, help="SIGKILLs before the last run (default 3)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the kill points (default 1)")
    ap.add_argument("--out", type=Path, default=None, help="write the report as JSON here")
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import sitegen  # noqa: E402 - benchmarks/ is not a package

    from crawler.sample_site import serve, stop

    with tempfile.TemporaryDirectory(prefix="kill-resume-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        sitegen.generate(work / "site", args.pages, seed=7)
        server, base = serve(directory=work / "site")
        try:
            start = time.perf_counter()
            report = kill_and_resume(base, site_urls(work / "site", base), work / "crawl", kills=args.kills,
                                     seed=args.seed)
            report["seconds"] = round(time.perf_counter() - start, 1)
        finally:
            stop(server)
    for i, run in enumerate(report["runs"], 1):
        print(f"run {i}: {'killed' if run['killed'] else 'ran to its end'}"
              f"{', decided so far ' + str(run['decided_at_kill']) if run['killed'] else ''}"
              f", recovered {run['recovered']}, exit {run['returncode']}")
    print(f"{report['pages']} pages, {report['kills']} kills: {report['kept']} in the index, {report['dropped']} "
          f"in the dropped log, {report['missing']} missing, {report['recorded_twice']} recorded twice "
          f"({report['seconds']} s)")
    for problem in report["problems"]:
        print("FAIL:", problem)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
