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

__all__ = ["decode_html", "declared_charset"]

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
