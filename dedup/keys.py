"""Exact keys: the content hash and seed 004's title/anchor-count key."""
from __future__ import annotations

import re
import unicodedata

import xxhash

__all__ = ["normalise_text", "normalise_texts", "content_hash", "title_key"]

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


#: ASCII letters and digits to themselves (lowercased), every other byte to a space
_ASCII_WORDS = bytes(c + 32 if 65 <= c <= 90 else c if chr(c).isascii() and chr(c).isalnum() else 32
                     for c in range(256))


def normalise_text(text: str) -> str:
    """NFKC, case-folded, punctuation and whitespace runs folded to one space."""
    if text.isascii():
        # the same for ASCII text (NFKC leaves it as it is, casefold is lower), by a byte table: a
        # tenth of the regex's time on a page's main text
        return " ".join(text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split())
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


#: _ASCII_WORDS with the newline kept: several texts normalised in one translate
_ASCII_LINES = _ASCII_WORDS[:10] + b"\n" + _ASCII_WORDS[11:]


def normalise_texts(texts: list[str]) -> list[str]:
    """``[normalise_text(t) for t in texts]``; texts without newlines, all ASCII, in one translate."""
    joined = "\n".join(texts)
    if not joined.isascii() or joined.count("\n") != len(texts) - 1:
        return [normalise_text(t) for t in texts]
    return [" ".join(part.split()) for part in joined.encode("ascii").translate(_ASCII_LINES).decode("ascii").split("\n")]


def content_hash(text: str) -> str:
    """128-bit xxh3 of the normalised main text, as 32 hex digits ('' for an empty text)."""
    if text.isascii():  # normalise_text's ASCII bytes, hashed without decoding them to a str
        norm = b" ".join(text.encode("ascii").translate(_ASCII_WORDS).split())
        return xxhash.xxh3_128_hexdigest(norm) if norm else ""
    norm = normalise_text(text)
    return xxhash.xxh3_128_hexdigest(norm.encode("utf-8")) if norm else ""


def title_key(title: str, anchor_count: int) -> str:
    """Seed 004's exact-duplicate key: same normalised title and same number of anchors."""
    norm = normalise_text(title)
    return xxhash.xxh3_64_hexdigest(f"{norm}\x00{anchor_count}".encode("utf-8")) if norm else ""
