"""Issue 8, items 1 and 6: hostile pages get a recorded verdict, never a crash or a vanished page;
input limits cut oversized pages before the expensive work and say so in the verdict."""
from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dedup.deduplicator import STATUSES, DedupConfig, Deduplicator
from dedup.page import parse_page
from dedup.store import MemoryIndex
from reliability.bad_pages import bad_pages, write_site

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dedup():
    return Deduplicator(MemoryIndex())


# small big page: the 20 MB one is timed in the crawl test and in README figures
PAGES = bad_pages(big_bytes=6_000_000)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_bad_page_gets_a_verdict(dedup, name):
    body, ctype = PAGES[name]
    page, verdict = dedup.process_html(body, f"http://bad.example/{name}", content_type=ctype)
    assert verdict.status in STATUSES
    assert verdict.kept == (verdict.status not in dedup.config.drop)
    if not page.text.strip():
        assert (verdict.status, verdict.rule) == ("unique", "unextractable")
        # "<extractor>>navigation": the extract was only the page's links (dedup.extractcheck), dropped
        assert verdict.scores["extraction"] in ("empty", "binary", "none", "unparseable") or \
            verdict.scores["extraction"].endswith(">navigation")
    else:
        assert verdict.rule != "unextractable"


@pytest.mark.parametrize("name", ["empty", "whitespace"])
def test_pages_without_text_are_unextractable_and_kept(dedup, name):
    body, ctype = PAGES[name]
    _, first = dedup.process_html(body, f"http://bad.example/{name}/1", content_type=ctype)
    _, second = dedup.process_html(body, f"http://bad.example/{name}/2", content_type=ctype)
    # never an exact duplicate of another empty page on an empty content key: both kept, both said why
    # (a binary or markup-only body has a key of its own, which catches its byte-identical copies:
    # tests/test_exact_copies.py)
    for verdict in (first, second):
        assert (verdict.status, verdict.rule, verdict.kept) == ("unique", "unextractable", True)


@pytest.mark.parametrize("name, script", [("cjk", "港湾橋"), ("arabic", "جسر"), ("cyrillic", "Мост")])
def test_non_latin_scripts_decode_and_dedup(dedup, name, script):
    body, ctype = PAGES[name]
    page, verdict = dedup.process_html(body, f"http://bad.example/{name}", content_type=ctype)
    assert script in page.title + page.text and "\ufffd" not in page.text
    assert verdict.status == "unique"
    _, again = dedup.process_html(body, f"http://mirror.example/{name}", content_type=ctype)
    assert again.status == "exact_duplicate" and again.duplicate_of == f"http://bad.example/{name}"


def test_limits_cut_before_parsing_and_are_recorded(dedup):
    body, _ = PAGES["big"]
    assert len(body) > 5_000_000
    page, verdict = dedup.process_html(body, "http://bad.example/big")
    assert page.truncated["bytes"] == [len(body), 5_000_000]
    assert page.truncated["chars"][1] <= 200_000 < page.truncated["chars"][0]
    assert verdict.scores["truncated"] == page.truncated
    assert len(page.text) <= 200_000  # its cost, with and without the limits: docs/reliability.md#input-limits


def test_limits_are_configurable_and_do_not_split_utf8():
    d = Deduplicator(MemoryIndex(), DedupConfig(max_page_bytes=1001, max_text_chars=1000))
    body = ("<html><body><article><p>" + "é mot " * 2000 + "</p></article></body></html>").encode()
    page, verdict = d.process_html(body, "http://bad.example/utf8")
    assert page.encoding == "utf-8" and page.truncated["bytes"][1] in (1000, 1001)
    assert "\ufffd" not in page.text
    # an item that arrives with text only is cut by Deduplicator.process as well
    from dedup.page import Page
    from dedup.text import split_sentences
    text = "word " * 1000
    v = d.process(Page(url="http://bad.example/item", text=text, sentences=split_sentences(text)))
    assert v.scores["truncated"]["chars"][0] == len(text) and v.scores["truncated"]["chars"][1] <= 1000
    with pytest.raises(ValueError, match="max_page_bytes"):
        DedupConfig(max_page_bytes=0)
    unlimited = parse_page(b"<p>" + b"x " * 10 + b"</p>", "http://a/", max_bytes=None, max_text_chars=None)
    assert unlimited.truncated == {}


# -- property-based: random and mutated HTML through HTML -> verdict ----------------------------------------
_TAGS = ["p", "div", "span", "b", "a", "title", "h1", "table", "td", "script", "style", "article", "meta", "!--"]
_fragment = st.one_of(
    st.text(max_size=40),
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(["&amp;", "&#0;", "&#xD800;", "<![CDATA[", "<?xml version='1.0' encoding='x'?>",
                     '<meta charset="utf-16">', "\x00", "\ufeff", "<html", ">", '"', "<<"]),
)
_seed = PAGES["malformed"][0] + PAGES["cyrillic"][0][:300]


_example = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(pieces=st.lists(_fragment, max_size=30), raw=st.binary(max_size=200), cut=st.integers(0, len(_seed)),
       as_bytes=st.booleans(), ctype=st.sampled_from([None, "text/html", "text/html; charset=utf-16",
                                                      "text/html; charset=koi8-r", "text/html; charset=nope"]))
def test_fuzz_html_to_verdict(dedup, pieces, raw, cut, as_bytes, ctype):
    html = "".join(pieces)
    body = (html.encode("utf-8", "surrogatepass") + raw + _seed[:cut]) if as_bytes else html
    # a URL each: one URL holds one record, and a page fetched again at a URL is a refetch or an update
    page, verdict = dedup.process_html(body, f"http://fuzz.example/p{next(_example)}", content_type=ctype)
    assert verdict.status in STATUSES
    assert isinstance(page.text, str)
    if not page.text.strip():
        # the same body again (one index for every example): an exact copy, caught by its raw key
        assert verdict.rule == "unextractable" or (verdict.rule == "content_hash" and page.raw_key)


# -- crawl level: a loopback site of bad pages, crawled by the real `scrapy crawl site` ------------------
def _serve(root: Path, env) -> tuple[subprocess.Popen, str]:
    code = ("import http.server, functools, sys\n"
            "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
            "h.func.log_message = lambda *a: None\n"
            "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n"
            "print(f'serving http://127.0.0.1:{s.server_address[1]}/', flush=True)\n"
            "s.serve_forever()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline().strip()
    assert line.startswith("serving "), line
    return proc, line.split(" ", 1)[1]


@pytest.mark.crawl
def test_crawl_of_bad_pages_records_every_page(tmp_path, crawl, subprocess_env):
    from crawler.sample_site import terminate

    paths = write_site(tmp_path / "site")
    proc, url = _serve(tmp_path / "site", subprocess_env)
    try:
        result = crawl(url, tmp_path / "out", timeout=120)
    finally:
        terminate(proc)
    assert result.returncode == 0, result.log[-3000:]
    assert "'finish_reason': 'finished'" in result.log
    assert "dedup/errors" not in result.log and "Traceback" not in result.log
    recorded = {}
    for item in result.items:
        recorded.setdefault(item["url"], []).append(item["dedup"])
    for line in result.dropped:
        recorded.setdefault(line["url"], []).append(line["verdict"])
    assert all(len(v) == 1 for v in recorded.values()), {u: len(v) for u, v in recorded.items() if len(v) > 1}
    expected = {url + p for n, p in paths.items() if n != "too_long_url"} | {url}
    assert set(recorded) == expected, (expected ^ set(recorded))
    # the one link Scrapy refuses (URL longer than URLLENGTH_LIMIT, 2083) is logged and counted
    assert "'urllength/request_ignored_count': 1" in result.log
    verdicts = {u[len(url):].split(".html")[0]: v[0] for u, v in recorded.items()}
    for name in ("empty", "whitespace", "binary", "png_as_html", "png_image"):
        assert (verdicts[name]["status"], verdicts[name]["rule"]) == ("unique", "unextractable"), name
    original, kept = verdicts["big"]["scores"]["truncated"]["bytes"]
    assert original > 19_000_000 and kept == 5_000_000
    assert result.seconds < 60


@pytest.mark.crawl
def test_the_readme_spider_gets_the_same_pages_from_bad_input(tmp_path, subprocess_env):
    """The README's user spider hands over ``response.text`` (decoded by Scrapy, not by dedup) and
    runs with JOBDIR: every bad page still ends with one verdict, binary and empty bodies as
    ``unextractable``, a charset-less windows-1252 page decoded as dedup decodes its bytes."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import userproject
    from crawler.sample_site import terminate
    from conftest import read_jsonl

    paths = write_site(tmp_path / "site", big_bytes=6_000_000)
    project = userproject.write(tmp_path / "project")
    proc, url = _serve(tmp_path / "site", subprocess_env)
    try:
        run = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={url}",
                              "-s", f"DEDUP_INDEX=local://{tmp_path / 'index'}", "-s", f"JOBDIR={tmp_path / 'job'}",
                              "-s", "LOG_LEVEL=INFO", "-O", str(tmp_path / "items.jsonl")], cwd=project,
                             env={**subprocess_env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                             timeout=300)
    finally:
        terminate(proc)
    log = run.stderr
    assert run.returncode == 0, log[-3000:]
    assert "'finish_reason': 'finished'" in log and "dedup/errors" not in log and "Traceback" not in log
    recorded = {}
    for item in read_jsonl(tmp_path / "items.jsonl"):
        recorded.setdefault(item["url"], []).append((item["dedup"], item["title"], item["text"]))
    for line in read_jsonl(tmp_path / "index" / "dropped.jsonl"):
        recorded.setdefault(line["url"], []).append((line["verdict"], line["item"]["title"], line["item"]["text"]))
    assert all(len(v) == 1 for v in recorded.values()), {u: len(v) for u, v in recorded.items() if len(v) > 1}
    assert set(recorded) == {url + p for n, p in paths.items() if n != "too_long_url"} | {url}
    got = {u[len(url):].split(".html")[0]: v[0] for u, v in recorded.items()}
    for name in ("empty", "whitespace", "binary", "png_as_html", "png_image"):
        verdict = got[name][0]
        assert (verdict["status"], verdict["rule"]) == ("unique", "unextractable"), (name, verdict)
        assert verdict["scores"]["extraction"] in ("empty", "binary", "none", "unparseable"), (name, verdict)
    assert got["empty"][0]["scores"]["extraction"] == "empty"
    assert "Café crème, naïve façade, Zürich und Köln" in got["no_charset"][2]
    assert got["big"][0]["scores"]["truncated"]["bytes"] == [len(bad_pages(6_000_000)["big"][0]), 5_000_000]


def test_limit_settings_are_parsed_and_validated():
    from crawler.config import read_settings

    c = read_settings({}).config
    assert (c.max_page_bytes, c.max_text_chars) == (5_000_000, 200_000)
    c = read_settings({"DEDUP_MAX_PAGE_BYTES": "1048576", "DEDUP_MAX_TEXT_CHARS": "None"}).config
    assert (c.max_page_bytes, c.max_text_chars) == (1_048_576, None)
    with pytest.raises(ValueError, match="DEDUP_MAX_PAGE_BYTES must be an integer >= 1024, got '10'"):
        read_settings({"DEDUP_MAX_PAGE_BYTES": "10"})
    with pytest.raises(ValueError, match="DEDUP_MAX_TEXT_CHARS"):
        read_settings({"DEDUP_MAX_TEXT_CHARS": "lots"})
