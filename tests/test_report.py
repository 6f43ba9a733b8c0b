"""``dedup report``: the static HTML report of a real crawl of the sample site, checked as HTML
and as rendered by headless Chromium (Debian package ``chromium``) at desktop and phone widths,
its filters driven through the DevTools protocol (tests/browser.py)."""
from __future__ import annotations

import json
import re
import shutil
import struct
import zlib
from collections import Counter
from html import escape as html_escape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from browser import Browser, chromium_path
from dedup import droplog
from dedup.cli import main
from dedup.cli.restore import restore
from dedup.cli.worddiff import diff_rows, tokens

CRAWL = pytest.mark.crawl
FLAGGED = ("near_duplicate", "duplicate")
ASSETS = Path(__file__).resolve().parents[1] / "dedup" / "data"


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


def report(capsys, log: Path | None, out: Path, *extra: str) -> tuple[str, str, str]:
    """``dedup report`` in this process: ``(html, stdout, stderr)``; asserts exit code 0."""
    capsys.readouterr()
    code = main(["report", *([str(log)] if log else []), "-o", str(out), *map(str, extra)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    return out.read_text(encoding="utf-8"), stdout, stderr


class Page(HTMLParser):
    """Tags with attributes, the text of the ``#n-*`` cards, and per copy (``article.copy``): its
    attributes, classes of the elements inside it, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.numbers: dict[str, str] = {}
        self.copies: list[dict] = []
        self.groups: list[dict] = []
        self._number: str | None = None
        self._copy: dict | None = None
        self._depth = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            self.ids.append(attrs["id"])
            if attrs["id"].startswith("n-"):
                self._number = attrs["id"][2:]
        if tag == "section" and "group" in (attrs.get("class") or "").split():
            self.groups.append({"id": attrs["id"], "copies": []})
        if tag == "article" and "copy" in (attrs.get("class") or "").split():
            self._copy = {"attrs": attrs, "classes": Counter(), "tags": Counter(), "text": []}
            self.copies.append(self._copy)
            self.groups[-1]["copies"].append(self._copy)
            self._depth = 0
        elif self._copy is not None:
            if tag == "a" and "url" not in self._copy:
                self._copy["url"] = attrs["href"]  # the first link of a copy is its own URL
            self._depth += tag not in ("br", "img", "input")
            self._copy["tags"][tag] += 1
            for c in (attrs.get("class") or "").split():
                self._copy["classes"][c] += 1

    def handle_endtag(self, tag):
        if tag == "span":
            self._number = None
        if self._copy is not None:
            if tag == "article" and self._depth == 0:
                self._copy["text"] = "".join(self._copy["text"])
                self._copy = None
            else:
                self._depth -= 1

    def handle_data(self, data):
        if self._number:
            self.numbers[self._number] = self.numbers.get(self._number, "") + data
        if self._copy is not None:
            self._copy["text"].append(data)

    def all(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def kinds(self) -> Counter:
        return Counter(c["attrs"]["data-kind"] for c in self.copies)


def flagged(crawl) -> list[dict]:
    return [i for i in crawl.items if i["dedup"]["status"] in FLAGGED]


# -- the word-level difference --------------------------------------------------------------------
def test_word_diff_collapses_identical_runs_and_marks_changes():
    shared = " ".join(f"w{i}" for i in range(416))
    kept = f"{shared}\nThe mayor said on Monday the bridge would open.\nclosing words here"
    copy = f"{shared}\nThe mayor said on Tuesday that the bridge would open soon.\nclosing words here"
    d = diff_rows(kept, copy)
    assert [r.kind for r in d.rows] == ["same", "change", "same"]
    assert "\u2026 412 identical words \u2026" in d.rows[0].left  # 420 the same, the 8 before the change shown
    assert d.rows[0].left.split("</span>")[1] == " w412 w413 w414 w415<br>The mayor said on"
    assert "w3 " not in d.rows[0].left  # the words left out are not carried
    change = d.rows[1]
    assert change.left == "<del>Monday</del> the bridge would <del>open.</del>"  # a 3-word run stays inside
    assert change.right == "<ins>Tuesday that</ins> the bridge would <ins>open soon.</ins>"
    assert d.rows[2].left == "closing words here"  # no line break at either end of a row
    assert (d.same_words, d.kept_words, d.copy_words) == (426, 428, 430)


def test_word_diff_escapes_and_counts():
    d = diff_rows("a <b> & c", "a <b> & d")
    assert d.rows[0].left == "a &lt;b&gt; &amp;" and d.rows[1].right == "<ins>d</ins>"
    assert tokens("one two\n\n  three\n") == ["one", "two", "\n", "three"]
    assert not diff_rows("same words", "same  words").changed


# -- the HTML ---------------------------------------------------------------------------------------
@CRAWL
def test_report_groups_copies_under_their_kept_page(crawled, capsys, tmp_path):
    uri = f"local://{crawled.index}"
    html, out, err = report(capsys, crawled.dropped_log, tmp_path / "r" / "report.html", "--index", uri)
    assert not err
    page = Page(html)
    dropped, near = crawled.dropped, flagged(crawled)
    kept_pages = {d["verdict"]["duplicate_of"] for d in dropped} | {i["dedup"]["duplicate_of"] for i in near}
    assert page.numbers == {"groups": str(len(kept_pages)), "dropped": str(len(dropped)), "restored": "0",
                            "flagged": str(len(near)), "kept": str(len(crawled.items))}
    assert (f"{len(kept_pages)} groups, {len(dropped)} dropped, 0 restored, {len(near)} flagged, "
            f"{len(crawled.items)} in the search index") in out
    assert len(page.ids) == len(set(page.ids)), [i for i, n in Counter(page.ids).items() if n > 1]
    # the cards count what the list holds
    assert page.kinds() == Counter({"dropped": len(dropped), "flagged": len(near)})
    assert len(page.groups) == len(kept_pages)
    copies_of = {}
    for g in page.groups:
        head = html.split(f'id="{g["id"]}"', 1)[1].split("<article", 1)[0]
        kept = re.search(r'class="kept"><a href="([^"]+)"', head).group(1).replace("&amp;", "&")
        copies_of[kept] = g["copies"]
    assert set(copies_of) == kept_pages
    for d in dropped:  # exact copies: one text and a note, no difference table
        (copy,) = [c for c in copies_of[d["verdict"]["duplicate_of"]] if c["url"] == d["url"]]
        assert copy["attrs"]["data-kind"] == "dropped"
        assert copy["attrs"]["data-status"] == "exact_duplicate" and copy["attrs"]["data-score"] == "1.0000"
        assert "Exact copy: the same" in copy["text"] and not copy["classes"]["diff"]
        assert copy["classes"]["text"] == 1
    for item in near:  # near copies: a word-level difference in one scroll box
        (copy,) = [c for c in copies_of[item["dedup"]["duplicate_of"]] if c["url"] == item["url"]]
        assert copy["attrs"]["data-kind"] == "flagged" and copy["classes"]["diff"] == 1
        assert copy["tags"]["ins"] + copy["tags"]["del"] > 0 and copy["classes"]["same"] > 0
        assert copy["classes"]["l"] == copy["classes"]["r"] > 0    # aligned rows: a left and a right cell each
        assert "identical words" in copy["text"]
        assert copy["tags"]["img"] == 1                              # the sentence dotplot
    # one static file: its own style and script inline, nothing loaded from elsewhere
    assert len(page.all("style")) == 1 and len(page.all("script")) == 1 and not page.all("link")
    assert html.count("<script>") == 1 and ASSETS.joinpath("report.js").read_text() in html
    assert not re.search(r"url\(|@import|https?://(?!127\.0\.0\.1)", html.split("<body>", 1)[0])
    assert all(a["src"].startswith("data:") for a in page.all("img"))
    assert all(not a.get("src") for t, a in page.tags if t != "img")
    assert all(re.match(r"http://127\.0\.0\.1|#", a["href"]) for a in page.all("a"))
    # the filters offer what the pages hold
    assert {a["value"] for a in page.all("option")} >= {"", "exact_duplicate", "content_hash"}
    assert [a["value"] for a in page.all("input", name="kind")] == ["dropped", "restored", "flagged"]
    # the charts count what the summary says
    charts = [a for t, a in page.tags if t == "svg" and a.get("class") == "chart"]
    assert len(charts) == 4
    assert f"<title>exact_duplicate (dropped): {len(dropped)}</title>" in html
    for status, n in Counter(i["dedup"]["status"] for i in near).items():
        assert f"<title>{status} (flagged): {n}</title>" in html
    assert f"Containment scores ({len(dropped) + len(near)} pages)" in html


@CRAWL
def test_report_finds_the_log_beside_the_index(crawled, capsys, tmp_path, monkeypatch):
    """LOG is optional: --log, $DEDUP_DROPPED_LOG, else beside --index, as in every command."""
    shutil.copytree(crawled.index, tmp_path / "index")
    shutil.copy(crawled.dropped_log, tmp_path / "index" / "dropped.jsonl")
    html, out, _ = report(capsys, None, tmp_path / "a.html", "--index", f"local://{tmp_path / 'index'}")
    assert f"{len(crawled.dropped)} dropped" in out and str(tmp_path / "index" / "dropped.jsonl") in html
    monkeypatch.setenv("DEDUP_DROPPED_LOG", str(crawled.dropped_log))
    monkeypatch.setenv("DEDUP_INDEX", f"local://{tmp_path / 'index'}")
    html, out, _ = report(capsys, None, tmp_path / "b.html")
    assert f"{len(crawled.dropped)} dropped" in out and f"<code>{crawled.dropped_log}</code>" in html


@CRAWL
def test_report_without_an_index_notes_it(crawled, capsys, tmp_path):
    missing = tmp_path / "no-index"
    html, out, err = report(capsys, crawled.dropped_log, tmp_path / "report.html", "--index", f"local://{missing}")
    page = Page(html)
    assert page.numbers["dropped"] == str(len(crawled.dropped)) and page.numbers["flagged"] == "0"
    assert page.numbers["kept"] == "\u2013"
    assert "index-note" in page.ids and "flagged pages are not included" in html
    assert "No search index at" in err
    assert page.kinds() == Counter({"dropped": len(crawled.dropped)}) and not page.all("img")
    # the kept pages are not dropped, so only the log's own pages have texts: each copy says so
    assert all("neither the search index nor the dropped log" in c["text"] for c in page.copies)
    assert not missing.exists()


@CRAWL
def test_report_counts_restored_pages_as_the_list_shows_them(crawled, capsys, tmp_path):
    """Issue 18: the summary said 9 dropped while the list held 10: the list counted a restored
    page as dropped. Cards, filters and groups now count the same pages the same way."""
    shutil.copytree(crawled.index, tmp_path / "index")
    log = tmp_path / "dropped.jsonl"
    log.write_bytes(crawled.dropped_log.read_bytes() + b"{broken\n")
    uri = f"local://{tmp_path / 'index'}"
    restored = crawled.dropped[1]["url"]
    # into a copy of the crawl's index, which the log does not name: deliberate, so forced
    assert [r.outcome for r in restore(droplog.read_log(log), [restored], uri, force=True)] == ["restored"]
    html, out, err = report(capsys, log, tmp_path / "report.html", "--index", uri, "--limit", "2")
    page = Page(html)
    n = len(crawled.dropped)
    assert page.numbers["dropped"] == str(n - 1) and page.numbers["restored"] == "1"
    assert page.kinds()["dropped"] == n - 1 and page.kinds()["restored"] == 1
    assert f"({n - 1})" in html.split('value="dropped"', 1)[1][:80]      # the filter's count agrees
    assert page.numbers["kept"] == str(len(crawled.items) + 1)
    (back,) = [c for c in page.copies if c["attrs"]["data-kind"] == "restored"]
    assert back["url"] == restored
    # --limit 2: every page is listed and counted, the first two of the log with their texts
    dropped_copies = [c for c in page.copies if c["attrs"]["data-kind"] != "flagged"]
    assert len(dropped_copies) == n
    assert sum("past --limit" in c["text"] for c in dropped_copies) == n - 2
    assert "<title>exact_duplicate (restored): 1</title>" in html
    assert f"line {n + 1}: not JSON" in html and "1 bad lines" in err
    # flagged pages come from the index, where the restored page is not "flagged"
    assert page.numbers["flagged"] == str(len(flagged(crawled)))


def test_report_leaves_out_a_dropped_page_kept_when_fetched_again(crawled, capsys, tmp_path):
    """A ``kept`` event (a later crawl or reindex --update kept the page): the page is counted where it is now,
    in the index, not among the dropped pages as well."""
    log = tmp_path / "dropped.jsonl"
    again = crawled.dropped[0]["url"]
    event = {"event": "kept", "url": again, "time": "2030-01-01T00:00:00Z", "status": "unique"}
    log.write_bytes(crawled.dropped_log.read_bytes() + (json.dumps(event) + "\n").encode())
    html, _, _ = report(capsys, log, tmp_path / "report.html", "--index", f"local://{crawled.index}")
    page = Page(html)
    assert page.numbers["dropped"] == str(len(crawled.dropped) - 1)
    assert again not in {c["url"] for c in page.copies if c["attrs"]["data-kind"] != "flagged"}


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
    assert html.count("<script") == 1 and "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert 'href="javascript' not in html and "<code>javascript:alert(1)</code>" in html
    assert 'href="http://a.example/?a=1&amp;b=&lt;2&gt;"' in html and "a &lt; b &amp; c" in html
    assert 'data-host=""' in html  # a URL without a host


# -- headless Chromium --------------------------------------------------------------------------------
def colour_count(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 6) -> int:
    return int((np.abs(pixels[..., :3].astype(np.int16) - np.array(rgb)) <= tolerance).all(-1).sum())


VISIBLE = """(function () {
  var c = Array.prototype.filter.call(document.querySelectorAll("article.copy"), function (a) {
    return a.offsetParent !== null; });
  return {pages: c.length, kinds: c.map(function (a) { return a.dataset.kind; }),
          statuses: c.map(function (a) { return a.dataset.status; }),
          groups: Array.prototype.filter.call(document.querySelectorAll("section.group"), function (g) {
            return !g.hidden; }).length,
          shown: document.getElementById("shown").textContent, hash: location.hash,
          none: !document.getElementById("none").hidden};
})()"""

LAYOUT = """(function () {
  var rows = [];
  Array.prototype.forEach.call(document.querySelectorAll(".diff .l"), function (l) {
    var r = l.nextElementSibling;
    rows.push([Math.round(l.getBoundingClientRect().top), Math.round(r.getBoundingClientRect().top)]);
  });
  var diff = document.querySelector(".diff");
  var imgs = Array.prototype.slice.call(document.querySelectorAll("img.dotplot"));
  return {width: innerWidth, scroll: document.documentElement.scrollWidth, rows: rows,
          diffScrolls: diff ? getComputedStyle(diff).overflowY : null,
          diffColumns: diff ? getComputedStyle(diff).gridTemplateColumns.split(" ").length : 0,
          loaded: imgs.filter(function (i) { return i.naturalWidth > 0; }).length, images: imgs.length,
          wide: Array.prototype.filter.call(document.querySelectorAll("body *"), function (e) {
            return e.getBoundingClientRect().right > innerWidth + 1 && e.offsetParent !== null &&
                   !e.closest(".diff, .text"); }).map(function (e) { return e.tagName + "." + e.className; })};
})()"""


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium'): the rendering tests need it")
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def rendered(crawled, tmp_path_factory):
    out = tmp_path_factory.mktemp("rendered") / "report.html"
    assert main(["report", str(crawled.dropped_log), "-o", str(out), "--index", f"local://{crawled.index}"]) == 0
    return out


@CRAWL
@pytest.mark.parametrize("width, height", [(1280, 1000), (400, 860)])
def test_report_lays_out_at_desktop_and_phone_widths(crawled, rendered, browser, tmp_path, width, height):
    browser.open(rendered.as_uri(), width=width, height=height, mobile=width < 500)
    layout = browser.eval(LAYOUT)
    assert layout["width"] == width
    assert layout["scroll"] <= width and not layout["wide"], layout  # no horizontal overflow
    assert layout["images"] == len(flagged(crawled)) and layout["loaded"] == layout["images"]
    assert layout["diffScrolls"] == "auto"  # both sides in one scroll box: they scroll together
    if width > 640:
        assert layout["diffColumns"] == 2 and layout["rows"]
        assert all(left == right for left, right in layout["rows"]), layout["rows"]  # aligned side by side
    else:
        assert layout["diffColumns"] == 1  # stacked on a phone
    shot = browser.screenshot(tmp_path / f"report-{width}.png")
    pixels = png_pixels(shot)
    assert pixels.shape[:2] == (height, width)
    full = png_pixels(browser.screenshot(tmp_path / f"report-{width}-full.png", full_page=True))
    assert full.shape[1] == width
    assert colour_count(full, (0xC0, 0x39, 0x2B)) > 300  # exact_duplicate bar and badges
    assert colour_count(full, (0x4C, 0x78, 0xA8)) > 300  # rule/host bars and histogram
    assert colour_count(full, (0xD6, 0xF5, 0xDC)) > 300  # <ins> background of the word difference
    assert colour_count(full, (0xFF, 0xE1, 0xDE)) > 300  # <del> background


@CRAWL
def test_report_filters_change_what_is_shown(crawled, rendered, browser):
    dropped, near = crawled.dropped, flagged(crawled)
    total = len(dropped) + len(near)
    browser.open(rendered.as_uri(), width=1280, height=900)
    seen = browser.eval(VISIBLE)
    assert seen["pages"] == total and f"Showing {total} of {total} pages" in seen["shown"]
    # a filter set in the address (a shared link)
    browser.open(rendered.as_uri() + "#kind=flagged", width=1280, height=900)
    seen = browser.eval(VISIBLE)
    assert seen["kinds"] == ["flagged"] * len(near)
    assert seen["groups"] == len({i["dedup"]["duplicate_of"] for i in near})
    assert browser.eval('document.querySelector("input[value=dropped]").checked') is False
    # driven through the form: status, then a score range, then words; the address follows
    browser.eval('document.getElementById("reset").click()')
    assert browser.eval(VISIBLE)["pages"] == total and browser.eval("location.hash") == ""
    browser.eval("""(function () { var s = document.querySelector("select[name=status]");
        s.value = "exact_duplicate"; s.dispatchEvent(new Event("change", {bubbles: true})); })()""")
    seen = browser.eval(VISIBLE)
    assert set(seen["statuses"]) == {"exact_duplicate"} and seen["pages"] == len(dropped)
    assert seen["hash"] == "#status=exact_duplicate"
    browser.eval("""(function () { var i = document.querySelector("input[name=max]");
        i.value = "0.99"; i.dispatchEvent(new Event("input", {bubbles: true})); })()""")
    seen = browser.eval(VISIBLE)
    assert seen["pages"] == 0 and seen["none"] and "Showing 0 of" in seen["shown"]  # content_hash scores 1.0
    browser.eval('document.getElementById("reset").click()')
    printed = [d for d in dropped if "/print/" in d["url"]]
    browser.eval("""(function () { var i = document.querySelector("input[name=q]");
        i.value = "PRINT version"; i.dispatchEvent(new Event("input", {bubbles: true})); })()""")
    seen = browser.eval(VISIBLE)
    assert 0 < seen["pages"] <= len(printed) + len(near) and seen["hash"] == "#q=PRINT+version"
    # the browser's back/forward (a hash change) applies the filter too
    browser.eval("""new Promise(function (done) {  // resolved after the report's own hashchange handler
        window.addEventListener("hashchange", function () { setTimeout(done, 0); }, {once: true});
        location.hash = "kind=dropped&rule=content_hash"; })""")
    seen = browser.eval(VISIBLE)
    assert seen["kinds"] == ["dropped"] * len(dropped)
    assert browser.eval('document.querySelector("select[name=rule]").value') == "content_hash"




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




# -- issue 30 ---------------------------------------------------------------------------------------------
@CRAWL
def test_report_says_what_decides_and_embeds_only_what_it_shows(crawled, capsys, tmp_path):
    """Items 6 and 7: the histogram marked t2 = 0.4 while the calibrated decision flagged pages below it, and no
    page said what separates a duplicate from a near_duplicate; the report embedded what it does not show
    (hover titles inside dotplot images, every hidden identical word, base64)."""
    from dedup.verdicts import reason

    html, out, err = report(capsys, crawled.dropped_log, tmp_path / "report.html", "--index",
                            f"local://{crawled.index}")
    assert "t1=0.8" in html and "t2=0.4" not in html and "calibrated decision" in html
    assert "near_duplicate: any other copy" in html  # the legend
    for item in flagged(crawled):
        assert html_escape(reason(item["dedup"], why_copy=False)) in html
    assert "base64," not in html and '<details class="gap">' not in html
    assert "identical words" in html
    for uri in re.findall(r'src="(data:image/svg\+xml,[^"]+)"', html):
        assert uri.count("%3Ctitle") == 1  # its own title; no hover titles on dots, an <img> never shows them
    assert len(html.encode("utf-8")) < 90_000, len(html.encode("utf-8"))  # 130 KiB before


@CRAWL
@pytest.mark.parametrize("width", [1280, 400])
def test_a_link_to_a_group_shows_its_heading_below_the_sticky_filters(crawled, rendered, browser, tmp_path, width):
    """Item 7: the sticky filter bar covered a group's heading when a link jumped to it."""
    groups = Page(rendered.read_text(encoding="utf-8")).groups
    target = groups[len(groups) // 2]["id"]
    browser.open(rendered.as_uri() + "#" + target, width=width, height=700, mobile=width < 500)
    where = browser.eval("""(function () {
        var f = document.getElementById("filters").getBoundingClientRect();
        var h = document.querySelector("#%s .group-head").getBoundingClientRect();
        return {bar: f.bottom, head: h.top, y: window.scrollY,
                sticky: getComputedStyle(document.getElementById("filters")).position === "sticky"}; })()""" % target)
    browser.screenshot(tmp_path / f"jump-{width}.png")
    assert where["y"] > 0, where
    assert where["sticky"] is (width >= 900)
    assert where["head"] >= (where["bar"] if where["sticky"] else 0) - 1, where
    assert browser.eval(f'document.querySelector("#{target} a.anchor").getAttribute("href")') == f"#{target}"
