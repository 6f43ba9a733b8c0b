"""Hostile and odd pages, as ``{name: (body bytes, content type)}``, for tests and the bad-input site.

Each one must end with a recorded verdict (or a logged error naming the URL), never a crash or
a silently vanished page. ``serve(dir)`` writes them, with an index page linking all, to a folder.
"""
from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

__all__ = ["bad_pages", "write_site"]

_STORY = ("The harbour bridge will close for repairs next spring, the city council said on Monday. "
          "Engineers found corrosion in the main cables during a routine inspection last year. "
          "Commuters will be offered extra ferries and a shuttle bus while the work goes on. ")


def _png(width: int = 64, height: int = 64) -> bytes:
    """A real PNG image (a few flat-coloured rows, as icons and banners are): mostly ASCII-range bytes
    after compression, so a charset guess alone reads it as text."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes([y * 3 % 256, 90, 200]) * width for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _doc(body: str, title: str = "Page", head: str = "") -> str:
    return f"<html><head>{head}<title>{title}</title></head><body><article>{body}</article></body></html>"


def bad_pages(big_bytes: int = 20_000_000) -> dict[str, tuple[bytes, str]]:
    rng = random.Random(8)
    html = "text/html"
    story = "".join(f"<p>{_STORY} Paragraph {i}.</p>" for i in range(6))
    words = [f"w{i}" for i in range(20000)]
    para_count = max(1, big_bytes // 400)
    big = _doc("".join("<p>" + " ".join(rng.choice(words) for _ in range(60)) + ".</p>\n"
                       for _ in range(para_count)), "Big page")
    pages = {
        "malformed": (("<html><head><title>Malformed</head><body><p>" + _STORY + "<div><span><p>unclosed"
                       "<table><tr><td>cell<td>cell2</table></b></i></html></html><<>>&&;;").encode(), html),
        "truncated": (_doc(story, "Truncated").encode()[:700], html),
        "no_charset": (_doc("<p>Café crème, naïve façade, Zürich und Köln. " + _STORY + "</p>", "Latin")
                       .encode("cp1252"), html),
        "wrong_charset": (_doc("<p>Ünïcödé — “quoted” text in UTF-8. " + _STORY + "</p>", "Wrong",
                               '<meta charset="iso-8859-1">').encode("utf-8"), "text/html; charset=shift_jis"),
        "bogus_charset": (_doc("<p>" + _STORY + "</p>", "Bogus").encode(), "text/html; charset=x-no-such-thing"),
        "binary": (bytes(rng.randrange(256) for _ in range(20000)), html),
        "png_as_html": (b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(5000)), html),
        "png_image": (_png(), html),
        "empty": (b"", html),
        "whitespace": (b"   \n\t  ", html),
        "no_main_text": (b"<html><head><title>Nav only</title></head><body><nav><a href='/'>Home</a></nav>"
                         b"<script>var x = 1;</script></body></html>", html),
        "deep_nesting": (("<html><body>" + "<div>" * 50_000 + _STORY + "</div>" * 50_000 + "</body></html>")
                         .encode(), html),
        "cjk": (_doc("<p>" + "東京の港湾橋は来年の春に修理のため閉鎖されると市議会が月曜日に発表した。技術者は昨年の定期点検で主ケーブルに腐食を発見した。" * 5
                     + "</p>", "港湾橋").encode(), "text/html; charset=utf-8"),
        "arabic": (_doc("<p>" + "سيغلق جسر الميناء للإصلاحات في الربيع المقبل، حسبما قال مجلس المدينة يوم الاثنين. " * 6
                        + "</p>", "جسر الميناء", '<meta charset="windows-1256">').encode("cp1256"), html),
        "cyrillic": (_doc("<p>" + "Мост в гавани закроют на ремонт следующей весной, заявил городской совет в понедельник. " * 6
                          + "</p>", "Мост", '<meta charset="koi8-r">').encode("koi8-r"), html),
        "nul_bytes": (_doc("<p>" + _STORY.replace(" ", "\x00 ", 5) + "</p>", "Nul").encode(), html),
        "big": (big.encode(), html),
    }
    return pages


def long_query(chars: int) -> str:
    """A query string of ``chars`` characters (the server ignores it; the crawler keeps it in the URL)."""
    return "?q=" + ("long-" * (chars // 5 + 1))[: chars - 3]


def write_site(root: Path, big_bytes: int = 20_000_000) -> dict[str, str]:
    """Write the bad pages under ``root`` (``NAME.html``) with ``index.html`` linking all of them.

    The server decides content types by extension, so each page's type is not served here; the
    charsets are declared (or not) inside the pages. Returns ``{name: relative path}``.
    """
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (body, _ctype) in bad_pages(big_bytes).items():
        (root / f"{name}.html").write_bytes(body)
        paths[name] = f"{name}.html"
    # Scrapy's URLLENGTH_LIMIT (2083) ignores longer links, with a log line and the stat
    # urllength/request_ignored_count: long_url (1,900 characters) is fetched, too_long_url is not
    (root / "long_url.html").write_text(_doc("<p>A page behind a very long URL. " + _STORY + "</p>", "Long URL"),
                                        encoding="utf-8")
    paths["long_url"] = "long_url.html" + long_query(1900)
    (root / "too_long_url.html").write_text(_doc("<p>Never fetched.</p>", "Too long"), encoding="utf-8")
    paths["too_long_url"] = "too_long_url.html" + long_query(3000)
    links = "".join(f'<li><a href="{p}">{n}</a></li>' for n, p in paths.items())
    (root / "index.html").write_text(_doc(f"<p>Bad input test site. {_STORY}</p><ul>{links}</ul>", "Bad site"),
                                     encoding="utf-8")
    return paths
