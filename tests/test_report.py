"""``dedup report``: the static HTML report of a real crawl of the sample site, checked as HTML
and as rendered by headless Chromium (Debian package ``chromium``)."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from dedup import droplog
from dedup.cli import main
from index import open_search

CRAWL = pytest.mark.crawl
FLAGGED = ("near_duplicate", "duplicate")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ("DEDUP_INDEX", "DEDUP_DROPPED_LOG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def crawled(site_url, crawl, tmp_path_factory):
    """A default crawl: exact copies dropped, near copies kept and flagged ``duplicate``."""
    result = crawl(site_url, tmp_path_factory.mktemp("report"))
    assert result.returncode == 0, result.log[-3000:]
    assert result.dropped and any(i["dedup"]["status"] in FLAGGED for i in result.items)
    return result


def report(capsys, log: Path, out: Path, *extra: str) -> tuple[str, str, str]:
    """``dedup report`` in this process: ``(html, stdout, stderr)``; asserts exit code 0."""
    capsys.readouterr()
    code = main(["report", str(log), "-o", str(out), *map(str, extra)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    return out.read_text(encoding="utf-8"), stdout, stderr


class Page(HTMLParser):
    """Ids, tags with attributes, the text of ``#n-*`` cards, and ``<mark>`` texts per pair."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.numbers: dict[str, str] = {}
        self.marks: dict[str, list[str]] = {}
        self.mark_ids: dict[str, list[tuple[str, str]]] = {}  # pair -> (mark id, the id it links to)
        self._pair: str | None = None
        self._number: str | None = None
        self._mark: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            self.ids.append(attrs["id"])
            if attrs["id"].startswith("n-"):
                self._number = attrs["id"][2:]
        if tag == "details":
            self._pair = attrs["id"]
            self.marks[self._pair] = []
            self.mark_ids[self._pair] = []
        if tag == "mark":
            self._mark = []
            self.mark_ids[self._pair].append((attrs["id"], ""))
        if tag == "a" and self._mark is not None:
            self.mark_ids[self._pair][-1] = (self.mark_ids[self._pair][-1][0], attrs["href"])

    def handle_endtag(self, tag):
        if tag == "mark" and self._mark is not None:
            self.marks[self._pair].append("".join(self._mark))
            self._mark = None
        if tag == "span":
            self._number = None

    def handle_data(self, data):
        if self._number:
            self.numbers[self._number] = self.numbers.get(self._number, "") + data
        if self._mark is not None:
            self._mark.append(data)

    def all(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def flagged(crawl) -> list[dict]:
    return [i for i in crawl.items if i["dedup"]["status"] in FLAGGED]


@CRAWL
def test_report_summary_pairs_and_self_containment(crawled, capsys, tmp_path):
    uri = f"local://{crawled.index}"
    html, out, err = report(capsys, crawled.dropped_log, tmp_path / "r" / "report.html", "--index", uri)
    assert not err
    page = Page(html)
    dropped, near = crawled.dropped, flagged(crawled)
    assert page.numbers == {"dropped": str(len(dropped)), "restored": "0", "flagged": str(len(near)),
                            "kept": str(len(crawled.items))}
    assert f"{len(dropped)} dropped, 0 restored, {len(near)} flagged, {len(crawled.items)} in the search index" in out
    assert len(page.ids) == len(set(page.ids)), [i for i, n in Counter(page.ids).items() if n > 1]
    # one pair per dropped and per flagged page, in log / index order, each with highlighted sentences
    pairs = page.all("details")
    assert [p["id"] for p in pairs] == [f"dropped-{n}" for n in range(1, len(dropped) + 1)] + \
        [f"flagged-{n}" for n in range(1, len(near) + 1)]
    for n, d in enumerate(dropped, 1):
        assert f'href="{d["url"]}"'.replace("&", "&amp;") in html
        marks = page.marks[f"dropped-{n}"]
        assert marks and all(m.strip() for m in marks)
        # an exact copy: every sentence is highlighted on both sides
        assert set(marks) >= {line.strip() for line in d["item"]["text"].splitlines()[:1]}
    for n, item in enumerate(near, 1):
        pid = f"flagged-{n}"
        marks = dict(zip((i for i, _ in page.mark_ids[pid]), page.marks[pid]))
        this = [t for i, t in marks.items() if i.startswith(f"{pid}-a")]
        other = [t for i, t in marks.items() if i.startswith(f"{pid}-b")]
        assert this and other and all(t in item["text"] for t in this)
        with open_search(uri, readonly=True) as search:
            original = search.get(item["dedup"]["duplicate_of"])
        assert all(t in original["text"] for t in other)
        # each highlighted sentence links to the sentence it matches on the other side
        for mark_id, href in page.mark_ids[pid]:
            side = "b" if mark_id.startswith(f"{pid}-a") else "a"
            assert href.startswith(f"#{pid}-{side}") and href[1:] in page.ids
    # self-contained: inline CSS, inline SVG charts, dotplots as data: URIs, no scripts or links
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert not re.search(r"url\(", html)
    assert len(page.all("style")) == 1
    charts = [a for t, a in page.tags if t == "svg" and a.get("class") == "chart"]
    assert len(charts) == 4
    images = page.all("img")
    assert len(images) == len(pairs)
    for img in images:
        assert img["src"].startswith("data:image/svg+xml;base64,")
        svg = base64.b64decode(img["src"].split(",", 1)[1]).decode("utf-8")
        assert "<svg" in svg and "</svg>" in svg
    srcs = [a.get("src") or a.get("href") for _, a in page.tags if a.get("src")]
    assert all(s.startswith("data:") for s in srcs)
    assert all(re.match(r"http://|#(dropped|flagged)-", a["href"]) for a in page.all("a"))
    # the charts count what the summary says
    assert f"<title>exact_duplicate (dropped): {len(dropped)}</title>" in html
    for status, n in Counter(i["dedup"]["status"] for i in near).items():
        assert f"<title>{status} (flagged): {n}</title>" in html
    assert f"Containment scores ({len(dropped) + len(near)} pages)" in html


@CRAWL
def test_report_without_an_index_notes_it(crawled, capsys, tmp_path):
    missing = tmp_path / "no-index"
    html, out, err = report(capsys, crawled.dropped_log, tmp_path / "report.html", "--index", f"local://{missing}")
    page = Page(html)
    assert page.numbers["dropped"] == str(len(crawled.dropped)) and page.numbers["flagged"] == "0"
    assert page.numbers["kept"] == "\u2013"
    assert "index-note" in page.ids and "flagged pages are not included" in html
    assert "No search index at" in err
    assert len(page.all("details")) == len(crawled.dropped) and not page.all("img")
    assert html.count("not available") == len(crawled.dropped)
    assert not missing.exists()


@CRAWL
def test_report_counts_restored_pages_limits_and_bad_lines(crawled, capsys, tmp_path):
    shutil.copytree(crawled.index, tmp_path / "index")
    log = tmp_path / "dropped.jsonl"
    log.write_bytes(crawled.dropped_log.read_bytes() + b"{broken\n")
    uri = f"local://{tmp_path / 'index'}"
    restored = crawled.dropped[1]["url"]
    # into a copy of the crawl's index, which the log does not name: deliberate, so forced
    assert [r.outcome for r in droplog.restore(droplog.read_log(log), [restored], uri, force=True)] == ["restored"]
    html, out, err = report(capsys, log, tmp_path / "report.html", "--index", uri, "--limit", "2")
    page = Page(html)
    n = len(crawled.dropped)
    assert page.numbers["dropped"] == str(n - 1) and page.numbers["restored"] == "1"
    assert page.numbers["kept"] == str(len(crawled.items) + 1)
    assert len([p for p in page.all("details") if p["id"].startswith("dropped-")]) == 2
    assert f"{n - 2} more pages are counted above but not shown (--limit 2)" in html
    assert "<title>exact_duplicate (restored): 1</title>" in html
    assert "s-restored" in html  # the restored badge on its pair
    assert f"line {n + 1}: not JSON" in html and "1 bad lines" in err
    # flagged pages come from the index, where the restored page is not "flagged"
    assert page.numbers["flagged"] == str(len(flagged(crawled)))


def test_report_escapes_log_text_and_links_only_http(tmp_path, capsys):
    log = tmp_path / "dropped.jsonl"
    evil = {"url": "javascript:alert(1)", "time": "2026-11-21T09:00:00Z",
            "verdict": {"status": "exact_duplicate", "duplicate_of": "http://a.example/?a=1&b=<2>",
                        "rule": "content_hash", "scores": {}},
            "item": {"url": "javascript:alert(1)", "title": "<script>alert(2)</script>", "text": "a < b & c"}}
    log.write_text(json.dumps(evil) + "\n", encoding="utf-8")
    code = main(["report", str(log), "-o", str(tmp_path / "r.html"), "--index", f"local://{tmp_path / 'none'}"])
    assert code == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script" not in html and "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert 'href="javascript' not in html and "<code>javascript:alert(1)</code>" in html
    assert 'href="http://a.example/?a=1&amp;b=&lt;2&gt;"' in html and "a &lt; b &amp; c" in html


# -- headless Chromium ----------------------------------------------------------------------------
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars"]

# Added to a copy of the report (the report itself has no scripts): after load, write what the
# browser rendered into the DOM, where --dump-dom prints it.
PROBE = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.querySelectorAll("img.dotplot"));
  var marks = document.querySelectorAll("mark");
  var cards = {};
  ["dropped", "restored", "flagged", "kept"].forEach(function (k) {
    cards[k] = document.getElementById("n-" + k).textContent; });
  var charts = Array.prototype.slice.call(document.querySelectorAll("svg.chart"));
  var out = {
    cards: cards,
    images: imgs.length,
    loaded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0; }).length,
    shown: imgs.filter(function (i) { return i.getBoundingClientRect().width > 100; }).length,
    marks: marks.length,
    mark: marks.length ? marks[0].textContent : null,
    markColor: marks.length ? getComputedStyle(marks[0]).backgroundColor : null,
    markShown: marks.length ? marks[0].getBoundingClientRect().height > 0 : false,
    charts: charts.map(function (c) { return Math.round(c.getBoundingClientRect().width); })
  };
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium is not installed (Debian package 'chromium'): the rendering test needs it")


def run_browser(*args: str, profile: Path, timeout: float = 120) -> str:
    """Start the browser in its own process group, return its stdout; killed by PID in any case."""
    proc = subprocess.Popen([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err[-2000:]
        return out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group we created for this browser (pid == pgid)
            proc.wait()


def png_pixels(path: Path) -> np.ndarray:
    """The ``(height, width, channels)`` pixels of an 8-bit RGB(A) non-interlaced PNG (what
    Chromium writes), decoded with zlib: rows filtered None/Sub/Up in numpy, Average/Paeth by byte."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data[pos + 8:pos + 8 + length])
        elif kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    ch = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, width * ch + 1)
    out = np.zeros((height, width * ch), dtype=np.uint8)
    prev = np.zeros(width * ch, dtype=np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:
            cur = (np.cumsum(line.reshape(width, ch).astype(np.int64), axis=0) % 256).astype(np.uint8).reshape(-1)
        elif kind == 2:
            cur = line + prev
        else:
            row, up = bytearray(line.tobytes()), prev.tobytes()
            for x in range(width * ch):
                a = row[x - ch] if x >= ch else 0
                b = up[x]
                if kind == 3:
                    row[x] = (row[x] + ((a + b) >> 1)) & 255
                else:
                    c = up[x - ch] if x >= ch else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            cur = np.frombuffer(bytes(row), dtype=np.uint8)
        out[y] = cur
        prev = cur
    return out.reshape(height, width, ch)


def colour_count(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 6) -> int:
    return int((np.abs(pixels[..., :3].astype(np.int16) - np.array(rgb)) <= tolerance).all(-1).sum())


@CRAWL
def test_report_renders_in_headless_chromium(crawled, capsys, tmp_path):
    chromium()  # skips when absent, before any work
    html, _, _ = report(capsys, crawled.dropped_log, tmp_path / "report.html", "--index", f"local://{crawled.index}")
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = run_browser("--window-size=1280,2000", "--dump-dom", probed.as_uri(), profile=tmp_path / "profile1")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                       .replace("&amp;", "&"))
    dropped, near = crawled.dropped, flagged(crawled)
    assert probe["cards"] == {"dropped": str(len(dropped)), "restored": "0", "flagged": str(len(near)),
                              "kept": str(len(crawled.items))}
    # every dotplot image decoded (an SVG that fails to parse has naturalWidth 0) and is laid out
    assert probe["images"] == len(dropped) + len(near)
    assert probe["loaded"] == probe["images"] and probe["shown"] == probe["images"]
    # highlighted sentences: the first is the first line of the first dropped page, painted yellow
    assert probe["marks"] > len(dropped) + len(near)
    assert probe["mark"] == dropped[0]["item"]["text"].splitlines()[0].strip()
    assert probe["markColor"] == "rgb(255, 224, 102)" and probe["markShown"]
    assert len(probe["charts"]) == 4 and min(probe["charts"]) >= 400

    # and pixels: a screenshot of the unmodified report shows the highlight and the chart bars
    shot = tmp_path / "report.png"
    run_browser("--window-size=1280,1800", f"--screenshot={shot}", (tmp_path / "report.html").as_uri(),
                profile=tmp_path / "profile2")
    pixels = png_pixels(shot)
    assert pixels.shape[:2] == (1800, 1280)
    assert colour_count(pixels, (0xFF, 0xE0, 0x66)) > 5000  # <mark> background
    assert colour_count(pixels, (0xC0, 0x39, 0x2B)) > 500  # exact_duplicate bar and badges
    assert colour_count(pixels, (0x4C, 0x78, 0xA8)) > 500  # rule/host bars and histogram
