"""Decode HTML bytes to text, surviving wrong charset declarations.

Pages often declare one charset and use another (the Gold Set mixes ISO-8859-1
and UTF-8 and sometimes lies about it). The order below trusts evidence over
declarations:

1. a byte-order mark;
2. strict UTF-8 — bytes that decode as UTF-8 and contain multi-byte sequences are
   UTF-8 in practice whatever the page says (Latin-1 text almost never forms
   valid UTF-8 sequences by accident);
3. the declared charset (HTTP header, then ``<meta>``) if it decodes strictly;
   a declared ISO-8859-1/ASCII is read as windows-1252, as browsers do;
4. windows-1252 when most bytes are ASCII (Latin text: accents are sparse), else charset-normalizer's guess;
5. windows-1252 with replacement characters, so decoding never fails.
"""
from __future__ import annotations

import codecs
import re

__all__ = ["decode_html", "declared_charset", "looks_binary"]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.I)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# what browsers actually use for these labels (WHATWG encoding standard)
_ASCII = bytes(range(0x80))
_ALIASES = {"iso-8859-1": "cp1252", "latin-1": "cp1252", "latin1": "cp1252", "ascii": "cp1252",
            "us-ascii": "cp1252", "iso8859-1": "cp1252", "cp819": "cp1252"}


# WHATWG MIME sniffing's "binary data bytes": control characters no text format uses (not TAB, LF, FF,
# CR, ESC), looked for in its sniffing window (the first 1,445 bytes)
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_BINARY_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_SNIFF = 1445
_BINARY_SHARE = 0.05
# images, documents and archives a server may send as text/html
_MAGIC = (b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"\xff\xd8\xff", b"%PDF-", b"PK\x03\x04", b"\x1f\x8b",
          b"\x00\x00\x01\x00", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c")


def looks_binary(body: bytes | str) -> bool:
    """Whether ``body`` is binary data (an image, an archive) rather than text: it starts with a known
    image, document or archive signature, or at least 5% of its first 1,445 bytes are binary data bytes
    (WHATWG MIME sniffing's set; random bytes have ~10%, a PNG 10-12%, a text page with a few stray
    NULs ~1%; none of the 1,270 goldset-dev, negatives-dev and sample-site pages has one). A UTF-16/32
    byte-order mark makes it text. A str (a body something else decoded, e.g. Scrapy's
    ``response.text``) is checked on its characters."""
    if isinstance(body, str):
        head: bytes | str = body[:_SNIFF]
        found = len(_BINARY_CHARS.findall(head))
    else:
        if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)):  # UTF-32 LE's too
            return False
        if body.startswith(_MAGIC) or body[8:12] == b"WEBP" and body.startswith(b"RIFF"):
            return True
        head = body[:_SNIFF]
        found = len(_BINARY_BYTES.findall(head))
    return bool(head) and found >= _BINARY_SHARE * len(head)


def _normal(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"';").lower()
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return _ALIASES.get(label, _ALIASES.get(name, name))


def declared_charset(body: bytes, content_type: str | None = None) -> str | None:
    """The charset named by the Content-Type header, else by the first ``<meta>`` in 4 KiB."""
    if content_type:
        m = re.search(r"charset\s*=\s*([^\s;]+)", content_type, re.I)
        if m and _normal(m.group(1)):
            return _normal(m.group(1))
    m = _META_CHARSET.search(body[:4096])
    return _normal(m.group(1).decode("ascii", "ignore")) if m else None


def decode_html(body: bytes | str, content_type: str | None = None) -> tuple[str, str]:
    """Return ``(text, encoding_used)`` for an HTML body."""
    if isinstance(body, str):
        return body, "str"
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body.decode(name, "replace"), name
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return text, "utf-8" if not text.isascii() else "ascii"
    declared = declared_charset(body, content_type)
    if declared and declared not in ("utf-8", "utf-8-sig"):
        try:
            return body.decode(declared), declared
        except (UnicodeDecodeError, LookupError):
            pass
    # a mostly-ASCII page with some high bytes is western text in practice;
    # statistical guessing on so little evidence picks exotic code pages
    head = body[:200_000]
    if len(head.translate(None, _ASCII)) <= 0.2 * len(head):
        return body.decode("cp1252", "replace"), "cp1252"
    guess = _guess(body)
    if guess:
        return guess
    return body.decode("cp1252", "replace"), "cp1252"


def _guess(body: bytes) -> tuple[str, str] | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - charset-normalizer is a dependency
        return None
    best = from_bytes(body[:200_000]).best()
    if best is None:
        return None
    try:
        return body.decode(best.encoding), best.encoding
    except (UnicodeDecodeError, LookupError):
        return None
