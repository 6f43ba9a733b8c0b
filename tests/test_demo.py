"""``make demo`` (``python -m crawler.demo``) and :mod:`crawler.urls`: the demo's dropped log is
where every ``dedup`` command looks, and no group keeps a session-id URL."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy import Request

from crawler.urls import SessionIdMiddleware, strip_session_ids
from dedup.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("url, clean", [
    ("http://a.example/a.html;jsessionid=ABC123", "http://a.example/a.html"),
    ("http://a.example/a.html;JSESSIONID=ABC123?x=1#f", "http://a.example/a.html?x=1#f"),
    ("http://a.example/a.html?sid=7f3a&page=2", "http://a.example/a.html?page=2"),
    ("http://a.example/a.html?page=2&PHPSESSID=q&b=", "http://a.example/a.html?page=2&b="),
    ("http://a.example/a.html;v=2?utm_source=n", "http://a.example/a.html;v=2?utm_source=n"),  # not session ids
    ("http://a.example/a%20b.html?q=a+b", "http://a.example/a%20b.html?q=a+b"),  # untouched: same string
])
def test_strip_session_ids(url, clean):
    assert strip_session_ids(url) == clean


def test_middleware_rewrites_requests_and_passes_items():
    mw = SessionIdMiddleware()
    item = {"url": "http://a.example/a.html;jsessionid=X"}
    out = list(mw.process_spider_output(None, [Request("http://a.example/b;jsessionid=X"), item]))
    assert out[0].url == "http://a.example/b" and out[1] is item

    async def start():
        yield Request("http://a.example/?sid=1")

    async def collect():
        return [r async for r in mw.process_start(start())]

    assert [r.url for r in asyncio.run(collect())] == ["http://a.example/"]


@pytest.mark.crawl
def test_demo_log_is_found_by_default_and_no_session_url_is_kept(tmp_path, subprocess_env, capsys, monkeypatch):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "crawler.demo", "--out", str(out)], cwd=ROOT, env=subprocess_env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "index" / "dropped.jsonl").is_file() and not (out / "dropped.jsonl").exists()
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines() if line.strip()]
    dropped = [json.loads(line) for line in (out / "index" / "dropped.jsonl").read_text().splitlines()]
    assert items and dropped
    urls = [i["url"] for i in items] + [d["url"] for d in dropped]
    originals = [i["dedup"]["duplicate_of"] for i in items if i["dedup"].get("duplicate_of")] + \
        [d["verdict"]["duplicate_of"] for d in dropped]
    assert not [u for u in urls + originals if "jsessionid" in u.lower() or "sid=" in u]
    assert f"{len(dropped)} dropped items" in proc.stdout
    # the commands' default lookup (beside --index) finds the demo's log
    for name in ("DEDUP_INDEX", "DEDUP_DROPPED_LOG"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    assert main(["dropped", "list", "--index", f"local://{out / 'index'}", "--json"]) == 0
    assert {e["url"] for e in json.loads(capsys.readouterr().out)} == {d["url"] for d in dropped}
