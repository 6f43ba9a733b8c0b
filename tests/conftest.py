"""Shared fixtures: the sample site in a subprocess, and real ``scrapy crawl`` runs against it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from crawler.sample_site import load_expected, manifest_key, spawn, terminate

ROOT = Path(__file__).resolve().parents[1]
SCRAPY = str(Path(sys.executable).with_name("scrapy"))

# -- the sample site's ground truth (crawler/sample_site/expected.json) ---------------------------
MANIFEST = load_expected()
GROUPS = MANIFEST["groups"]
EXACT = [g for g in GROUPS if g["kind"] == "exact"]
NEAR = [g for g in GROUPS if g["kind"] == "near"]
SAME_TITLE = [g for g in GROUPS if g["kind"] == "distinct_same_title"]
ALL_PATHS = sorted({p for g in GROUPS for p in g["paths"]} | set(MANIFEST["unique"]))


def by_path(records) -> dict[str, dict]:
    """manifest path -> verdict, from exported items (``dedup``) or dropped-log lines (``verdict``)."""
    out = {}
    for r in records:
        key = manifest_key(r["url"])
        assert key not in out, f"{key} recorded twice"
        out[key] = r.get("dedup") or r.get("verdict")
    return out


def clean_env() -> dict[str, str]:
    """The test process's environment with NLTK_DATA set and no proxies (loopback only)."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["NLTK_DATA"] = str(ROOT / ".nltk_data")
    return env


@pytest.fixture(scope="session")
def site_url():
    """``http://127.0.0.1:PORT/`` of ``python -m crawler.sample_site`` on a free port; stopped by PID."""
    proc, url = spawn(env=clean_env())
    try:
        yield url
    finally:
        terminate(proc)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Crawl:
    """One finished ``scrapy crawl site`` run and its outputs."""

    returncode: int
    log: str
    seconds: float
    index: Path
    dropped_log: Path
    items_path: Path

    @property
    def items(self) -> list[dict[str, Any]]:
        return read_jsonl(self.items_path)

    @property
    def dropped(self) -> list[dict[str, Any]]:
        return read_jsonl(self.dropped_log)


def crawl_command(url: str, out: Path, *settings: str, index: Path | None = None, index_uri: str | None = None,
                  items: str = "items.jsonl", dropped: str = "dropped.jsonl",
                  spider_args: Sequence[str] = ()) -> list[str]:
    """The ``scrapy crawl site`` command line of :func:`run_crawl`."""
    out.mkdir(parents=True, exist_ok=True)
    index = index or out / "index"
    cmd = [SCRAPY, "crawl", "site", "-a", f"start_url={url}",
           "-s", f"DEDUP_INDEX={index_uri or f'local://{index}'}", "-s", f"DEDUP_DROPPED_LOG={out / dropped}",
           "-O", str(out / items),
           "-s", "CONCURRENT_REQUESTS=1", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "DOWNLOAD_DELAY=0",
           "-s", "LOG_LEVEL=INFO"]
    for setting in settings:
        cmd += ["-s", setting]
    for arg in spider_args:
        cmd += ["-a", arg]
    return cmd


def run_crawl(url: str, out: Path, *settings: str, index: Path | None = None, index_uri: str | None = None,
              items: str = "items.jsonl", dropped: str = "dropped.jsonl", spider_args: Sequence[str] = (),
              timeout: float = 120) -> Crawl:
    """``scrapy crawl site`` from the repo root, fast loopback settings; extra ``-s`` pairs in
    ``settings``, extra ``-a`` pairs in ``spider_args``; ``index_uri`` replaces the local index."""
    index = index or out / "index"
    cmd = crawl_command(url, out, *settings, index=index, index_uri=index_uri, items=items, dropped=dropped,
                        spider_args=spider_args)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=timeout)
    return Crawl(proc.returncode, proc.stderr + proc.stdout, time.perf_counter() - start, index,
                 out / dropped, out / items)


@pytest.fixture(scope="session")
def subprocess_env() -> dict[str, str]:
    """:func:`clean_env`, for tests that start their own subprocesses."""
    return clean_env()


@pytest.fixture(scope="session")
def crawl() -> Callable[..., Crawl]:
    """:func:`run_crawl`, for tests that want it as a fixture."""
    return run_crawl


@pytest.fixture(scope="session")
def es_url(tmp_path_factory):
    """Base URL of an Elasticsearch API server: ``$DEDUP_TEST_ES_URL`` (a real cluster), else
    the noida-db emulator started for this session on 127.0.0.1 (see tests/es_server.py)."""
    from es_server import ENV_URL, Emulator

    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL].rstrip("/")
        return
    server = Emulator(tmp_path_factory.mktemp("es") / "data")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def es_index_uri(es_url, request):
    """``es_url/<fresh index name>``; the test's indices are deleted afterwards."""
    import re
    import uuid

    from elasticsearch import Elasticsearch

    name = "t-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:60].strip("-") + "-" + uuid.uuid4().hex[:6]
    yield f"{es_url}/{name}"
    client = Elasticsearch(es_url)
    try:
        for index in (name, f"{name}-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
    finally:
        client.close()
