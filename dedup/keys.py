"""Exact keys: the content hash (of the main text, or of the body of a page without one) and seed 004's
title/anchor-count key."""
from __future__ import annotations

import re
import unicodedata

import xxhash

__all__ = ["normalise_text", "normalise_texts", "content_hash", "raw_key", "is_raw_key", "title_key",
           "ascii_words_only", "RAW_KEY_PREFIX"]

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


_SPACE_RUNS = re.compile(rb"  +")
#: ASCII letters and digits to themselves (lowercased), every other byte to a space
_ASCII_WORDS = bytes(c + 32 if 65 <= c <= 90 else c if chr(c).isascii() and chr(c).isalnum() else 32
                     for c in range(256))


def ascii_words_only(text: str) -> bool:
    """Whether no character of ``text`` beyond ASCII is a letter or digit (``[^\\W_]`` is ``str.isalnum``): then
    each such character (a non-breaking space, a dash, a curly quote...) separates words as a space does,
    and ``text`` with them made spaces is ASCII, for the byte-table paths below and ``dedup.text.tokenize``."""
    return not any(c.isalnum() for c in set(_NON_ASCII.findall(text)))


def _folded(text: str) -> str:
    """NFKC, case-folded: what the word pattern runs on."""
    return unicodedata.normalize("NFKC", text).casefold()


def _ascii_folded(folded: str) -> str | None:
    """``folded`` with its non-ASCII characters made spaces when none is a letter or digit (the same words,
    in ASCII), else None."""
    return _NON_ASCII.sub(" ", folded) if ascii_words_only(folded) else None


def normalise_text(text: str) -> str:
    """NFKC, case-folded, punctuation and whitespace runs folded to one space."""
    if not text.isascii():
        folded = _folded(text)
        # the same words either way; the byte table's extra steps pay off from ~120 characters
        text = _ascii_folded(folded) if len(folded) >= 120 else None
        if text is None:
            return _NON_WORD.sub(" ", folded).strip()
    # the same for ASCII text (NFKC leaves it as it is, casefold is lower), by a byte table: a tenth of the
    # regex's time on a page's main text
    return " ".join(text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split())


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
    if not text.isascii():
        folded = _folded(text)
        text = _ascii_folded(folded)
        if text is None:
            norm = _NON_WORD.sub(" ", folded).strip()
            return xxhash.xxh3_128_hexdigest(norm.encode("utf-8")) if norm else ""
    # normalise_text's ASCII bytes, hashed without decoding them to a str; the table leaves spaces between the
    # words, their runs folded by one regex pass (a split and a join made a bytes object a word)
    norm = _SPACE_RUNS.sub(b" ", text.encode("ascii").translate(_ASCII_WORDS)).strip(b" ")
    return xxhash.xxh3_128_hexdigest(norm) if norm else ""


#: what begins the exact key of a page without main text (:func:`raw_key`), so that a record, a verdict or a
#: dropped-log line tells it from a main text's hash, and no main text's hash can equal it
RAW_KEY_PREFIX = "raw:"


def raw_key(body: str | bytes) -> str:
    """The exact key of a page no extractor read any main text from (issue 33): ``raw:`` and the 128-bit xxh3
    of its body, its whitespace runs folded to one space (a str: the decoded page, so the same page in
    another encoding or re-indented gives the same key; bytes: a binary body as it came). '' for an
    empty or blank body: nothing to compare. The body, not the visible text: what such a page shows is
    its navigation, which distinct pages of one site share, and a copy this key finds is dropped."""
    if isinstance(body, str):
        norm = " ".join(body.split()).encode("utf-8", "surrogatepass")
    else:
        norm = body if body.strip() else b""
    return RAW_KEY_PREFIX + xxhash.xxh3_128_hexdigest(norm) if norm else ""


def is_raw_key(key: str) -> bool:
    """Whether an exact key is a raw body's (:func:`raw_key`), not a main text's hash."""
    return key.startswith(RAW_KEY_PREFIX)


def title_key(title: str, anchor_count: int) -> str:
    """Seed 004's exact-duplicate key: same normalised title and same number of anchors."""
    norm = normalise_text(title)
    return xxhash.xxh3_64_hexdigest(f"{norm}\x00{anchor_count}".encode("utf-8")) if norm else ""
