"""Issue 15 item 5: other Scrapy commands keep working while a crawl holds the embedded index
(a user's project with the add-on; the index has a single writer), and their exit status agrees
with what they print."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, clean_env
from crawler.addon import decides_nothing, scrapy_command
from reliability.kill_resume import crawl_command, write_project

CONTRACT_SPIDER = '''
import scrapy


class CheckedSpider(scrapy.Spider):
    name = "checked"

    def parse(self, response):
        """@url {url}
        @returns items 1 1
        @scrapes url html
        """
        yield {{"url": response.url, "html": response.text}}
'''


@pytest.mark.parametrize("argv, command, nothing", [
    (["/venv/bin/python", "/venv/bin/scrapy", "shell", "http://a/"], "shell", True),
    (["python", "-m", "scrapy", "check", "site", "-s", "X=1"], "check", True),
    (["python", "-m", "scrapy", "crawl", "site"], "crawl", False),
    (["scrapy", "parse", "--pipelines", "http://a/"], "parse", False),
    (["scrapy", "list"], "list", True),
    (["python", "-m", "pytest"], None, False),
])
def test_which_commands_get_the_dedup_pipelines(argv, command, nothing):
    assert scrapy_command(argv) == command
    assert decides_nothing(argv) is nothing


@pytest.mark.crawl
def test_shell_check_and_list_work_while_a_crawl_holds_the_index(site_url, tmp_path):
    project = write_project(tmp_path / "project")
    (project / "userproj" / "spiders" / "checked.py").write_text(CONTRACT_SPIDER.format(url=site_url))
    out = tmp_path / "crawl"
    cmd, env = crawl_command(project, site_url, out)
    cmd += ["-s", "DOWNLOAD_DELAY=0.5", "-s", "CONCURRENT_REQUESTS=1"]
    crawl = subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    index = ["-s", f"DEDUP_INDEX=local://{out / 'index'}"]
    try:
        deadline = time.monotonic() + 60
        while not (out / "index" / "lock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert crawl.poll() is None and (out / "index" / "lock").exists()

        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "scrapy", *args, *index], cwd=project, env=env,
                                  capture_output=True, text=True, timeout=120)

        listed = run("list")
        assert listed.returncode == 0 and listed.stdout.split() == ["checked", "pages"], listed.stderr[-2000:]
        checked = run("check", "checked")
        assert "OK" in checked.stderr and checked.returncode == 0, checked.stderr[-2000:]
        shell = run("shell", site_url, "-c", "(response.status, len(response.css('a')))")
        assert shell.returncode == 0 and shell.stdout.startswith("(200, "), shell.stderr[-2000:]
        assert "in use by another process" not in checked.stderr + shell.stderr
        assert crawl.poll() is None  # the crawl was not disturbed
    finally:
        crawl.kill()
        crawl.communicate(timeout=30)
