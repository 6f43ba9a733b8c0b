"""The shipped sample site: server behaviour, link graph and ground-truth manifest.

No Scrapy here: the site is served by ``crawler.sample_site.serve`` on a free
loopback port and fetched with urllib.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest

ROOT = Path(__file__).resolve().parents[1]

from crawler import sample_site  # noqa: E402
from crawler.sample_site import build  # noqa: E402
from dedup.indexmarks import unindexed  # noqa: E402

MANIFEST = sample_site.load_expected()
GROUPS = MANIFEST["groups"]
ALL_PATHS = [p for g in GROUPS for p in g["paths"]] + MANIFEST["unique"]
EXACT = [g for g in GROUPS if g["kind"] == "exact"]
NEAR = [g for g in GROUPS if g["kind"] == "near"]
SAME_TITLE = [g for g in GROUPS if g["kind"] == "distinct_same_title"]
VARIANTS = [p for p in ALL_PATHS if "?" in p or ";" in p]

# No proxies, even if the environment sets http_proxy.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def site():
    server, url = sample_site.serve()
    try:
        yield url
    finally:
        sample_site.stop(server)


def fetch(base: str, path: str) -> tuple[int, str, bytes]:
    with OPENER.open(urljoin(base, path), timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read()


def fetch_status(base: str, path: str) -> int:
    try:
        with OPENER.open(urljoin(base, path), timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        err.close()
        return err.code


def main_element(body: bytes, *, marked: bool = False):
    """The page's story element; without the parts it marks as not for indexing unless ``marked``
    (the mirror's appeal: dedup.indexmarks)."""
    doc = lxml.html.fromstring(body if marked else unindexed(body.decode("utf-8")))
    for xp in ("//article", "//main", "//div[@id='main']"):
        found = doc.xpath(xp)
        if found:
            assert len(found) == 1, xp
            return found[0]
    raise AssertionError("no <article>/<main> element")


def main_text(body: bytes) -> str:
    return main_element(body).text_content()


def shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def containment(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / min(len(sa), len(sb))


def bare(path: str) -> str:
    return path.split("?", 1)[0].split(";", 1)[0]


# ---------------------------------------------------------------- manifest

def test_manifest_lists_every_url_once():
    assert len(ALL_PATHS) == len(set(ALL_PATHS))
    assert MANIFEST["start"] == "/" and "/" in MANIFEST["unique"]
    assert {g["kind"] for g in GROUPS} == {"exact", "near", "distinct_same_title"}
    for g in GROUPS:
        assert len(g["paths"]) >= 2, g["name"]
        if "canonical" in g:
            assert g["canonical"] in g["paths"]
            assert set(g["copies"]) == set(g["paths"])
    for p in ALL_PATHS:
        assert p.startswith("/") and "://" not in p
        assert (sample_site.PAGES_DIR / build.file_for(p)).is_file(), p


def test_manifest_covers_the_requested_copy_types():
    kinds = [k for g in GROUPS for k in g.get("copies", {}).values()]
    for kind, at_least in [("tracking_params", 1), ("session_id_path_param", 1),
                           ("session_id_query", 1), ("print_version", 1), ("mirror", 2),
                           ("edited", 2), ("syndicated", 2)]:
        assert kinds.count(kind) >= at_least, kind
    assert sum(len(g["paths"]) for g in SAME_TITLE) >= 4
    articles = {p for p in ALL_PATHS if p.startswith("/articles/") and p == bare(p)}
    assert len(articles - {p for g in NEAR for p, k in g["copies"].items() if k == "edited"}) == 8


def test_pages_and_manifest_are_generated_from_source():
    assert build.check() == [], "run: python -m crawler.sample_site.build"


# ---------------------------------------------------------------- server

@pytest.mark.parametrize("path", ALL_PATHS)
def test_every_manifest_path_is_served_as_utf8_html(site, path):
    status, ctype, body = fetch(site, path)
    assert status == 200
    assert ctype == "text/html; charset=utf-8"
    text = body.decode("utf-8")
    assert text.startswith("<!DOCTYPE html>")
    doc = lxml.html.fromstring(body)
    assert doc.findtext(".//title").strip()
    assert doc.xpath("//meta[@name='description']/@content")[0].strip()
    assert doc.xpath("//meta[@name='keywords']/@content")[0].strip()
    assert doc.xpath("//h1")


@pytest.mark.parametrize("path", VARIANTS)
def test_url_variants_serve_the_same_file(site, path):
    assert fetch(site, path)[2] == fetch(site, bare(path))[2]


def test_variant_handling_is_generic(site):
    path = "/articles/robotics-team.html"
    base = fetch(site, path)[2]
    assert fetch(site, path + "?utm_campaign=x&sid=1#frag")[2] == base
    assert fetch(site, path + ";JSESSIONID=zzz")[2] == base
    assert fetch(site, "/;jsessionid=q1")[2] == fetch(site, "/")[2]


@pytest.mark.parametrize("path", [
    "/missing.html", "/articles/", "/articles", "/print/", "/articles/robotics-team.html/",
    "/articles/robotics-team.html;other=1", "/../pyproject.toml", "/%2e%2e/pyproject.toml",
])
def test_everything_else_is_404(site, path):
    assert fetch_status(site, path) == 404


def test_serve_binds_loopback_and_logs_nothing(capfd):
    server, url = sample_site.serve()
    try:
        assert urlsplit(url).hostname == "127.0.0.1" and urlsplit(url).port
        fetch(url, "/")
        fetch_status(url, "/nope.html")
    finally:
        sample_site.stop(server)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_manifest_key():
    key = sample_site.manifest_key
    assert key("http://127.0.0.1:8123/") == "/"
    assert key("http://127.0.0.1:8123") == "/"
    assert key("http://127.0.0.1:1/a.html;jsessionid=ABC123") == "/a.html;jsessionid=ABC123"
    assert key("http://127.0.0.1:1/a.html?utm_source=n&utm_medium=e#x") == "/a.html?utm_source=n&utm_medium=e"


def test_command_line_prints_one_line_and_stops_on_sigterm():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawler.sample_site", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
    )
    try:
        line = proc.stdout.readline()
        assert re.fullmatch(r"serving http://127\.0\.0\.1:\d+/\n", line), line
        url = line.split()[1]
        assert fetch(url, "/")[0] == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out == "" and err == ""


def test_command_line_refuses_non_loopback_host():
    proc = subprocess.run(
        [sys.executable, "-m", "crawler.sample_site", "--host", "0.0.0.0"],
        capture_output=True, text=True, cwd=ROOT, timeout=30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 and "loopback" in proc.stderr


# ---------------------------------------------------------------- link graph

def crawl(base: str, max_depth: int) -> dict[str, int]:
    """BFS over <a href> from "/", same host only; manifest key -> depth."""
    host = urlsplit(base).netloc
    seen = {"/": 0}
    queue = deque(["/"])
    while queue:
        path = queue.popleft()
        if seen[path] >= max_depth:
            continue
        status, _, body = fetch(base, path)
        assert status == 200, path
        page_url = urljoin(base, path)
        for href in lxml.html.fromstring(body).xpath("//a/@href"):
            url = urljoin(page_url, href)
            if urlsplit(url).netloc != host:
                continue
            key = sample_site.manifest_key(url.split("#", 1)[0])
            if key not in seen:
                seen[key] = seen[path] + 1
                queue.append(key)
    return seen


def test_all_links_are_relative():
    for f in sample_site.PAGES_DIR.rglob("*.html"):
        for href in lxml.html.fromstring(f.read_bytes()).xpath("//a/@href"):
            assert href.startswith("/") and not href.startswith("//"), (f, href)


def test_crawl_from_root_finds_exactly_the_manifest(site):
    found = crawl(site, MANIFEST["max_depth"])
    assert set(ALL_PATHS) - set(found) == set(), "unreachable within depth"
    assert set(found) - set(ALL_PATHS) == set(), "crawlable but missing from manifest"
    # nothing is linked that would 404
    for path in found:
        assert fetch_status(site, path) == 200, path


# ---------------------------------------------------------------- duplicates

@pytest.mark.parametrize("group", EXACT, ids=lambda g: g["name"])
def test_exact_group_members_have_identical_article_text(site, group):
    bodies = {p: fetch(site, p)[2] for p in group["paths"]}
    texts = {p: main_text(b) for p, b in bodies.items()}
    assert len(set(texts.values())) == 1, group["name"]
    # the whole <article> element is byte-identical, not just its text
    markup = {lxml.html.tostring(main_element(b)) for b in bodies.values()}
    assert len(markup) == 1
    # but the pages around it are not all the same file
    files = {build.file_for(p) for p in group["paths"]}
    assert len(files) >= 2


def test_the_mirror_marks_an_appeal_that_would_make_its_copies_inexact(site):
    # the crawl tests' exact mirror copies hold only when the marked part is left out, as the crawl does
    mirrored = [p for g in EXACT for p in g["paths"] if p.startswith("/mirror/")]
    assert mirrored
    for path in mirrored:
        body = fetch(site, path)[2]
        assert b"<!--googleoff: index-->" in body
        whole, cut = (main_element(body, marked=m).text_content() for m in (True, False))
        assert "small donation" in whole and "small donation" not in cut


@pytest.mark.parametrize("group", NEAR, ids=lambda g: g["name"])
def test_near_group_members_differ_but_overlap(site, group):
    texts = {p: main_text(fetch(site, p)[2]) for p in group["paths"]}
    assert len(set(texts.values())) == len(texts), "near copies must not be exact"
    for a, b in itertools.combinations(group["paths"], 2):
        assert containment(texts[a], texts[b]) >= 0.70, (a, b)


@pytest.mark.parametrize("group", SAME_TITLE, ids=lambda g: g["name"])
def test_same_title_pages_are_distinct(site, group):
    pages = {p: lxml.html.fromstring(fetch(site, p)[2]) for p in group["paths"]}
    titles = {doc.findtext(".//title") for doc in pages.values()}
    assert titles == {group["title"]}
    anchor_counts = {len(doc.xpath("//a[@href]")) for doc in pages.values()}
    assert len(anchor_counts) == 1, "same title and same number of links"
    texts = {p: main_element(lxml.html.tostring(doc)).text_content() for p, doc in pages.items()}
    for a, b in itertools.combinations(group["paths"], 2):
        assert containment(texts[a], texts[b]) < 0.5, (a, b)


def test_distinct_articles_are_really_different(site):
    originals = {p: main_text(fetch(site, p)[2]) for p in ALL_PATHS
                 if p.startswith("/articles/") and p == bare(p)
                 and not any(p in g["paths"][1:] for g in NEAR)}
    assert len(originals) == 8
    for a, b in itertools.combinations(originals, 2):
        assert containment(originals[a], originals[b]) < 0.05, (a, b)
    for p, text in originals.items():
        body_words = len(" ".join(x.text_content() for x in
                                  main_element(fetch(site, p)[2]).xpath(".//p[not(@class)]")).split())
        assert 250 <= body_words <= 600, (p, body_words)


def test_exact_groups_extract_identically_with_trafilatura(site):
    trafilatura = pytest.importorskip("trafilatura")
    for group in EXACT:
        # the marked parts left out first, as dedup.page does before any extractor reads a page
        out = {trafilatura.extract(unindexed(fetch(site, p)[2].decode("utf-8"))) for p in group["paths"]}
        assert len(out) == 1 and None not in out, group["name"]
    for group in NEAR + SAME_TITLE:
        out = [trafilatura.extract(fetch(site, p)[2].decode("utf-8")) for p in group["paths"]]
        assert None not in out and len(set(out)) == len(out), group["name"]
