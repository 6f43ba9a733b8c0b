"""Word-level difference of two main texts, as rows of HTML for a side-by-side view.

:func:`diff_rows` aligns the words of the kept page (left) with those of a copy (right)
(:class:`difflib.SequenceMatcher` over whitespace-separated words; line breaks are tokens
of their own, so paragraphs survive). It returns rows in text order:

* ``same``: words both texts share, one HTML string for both columns; a run longer than
  ``2 * context + 8`` words shows its first and last ``context`` words around
  ``… 412 identical words …`` (the opening and closing runs keep only the side next to a
  change); the words left out are not in the HTML (a report of many pages would carry
  them all unseen);
* ``change``: what the kept page has there (``<del>``) and what the copy has instead
  (``<ins>``); equal runs shorter than ``absorb`` words between two changes stay inside
  the change row, so a sentence with three edits reads as one row, not five.

Words are HTML-escaped. Texts over ``MAX_AUTOJUNK_OFF`` words in all use difflib's
autojunk heuristic (frequent words are not anchors), which keeps very long pages fast.
"""
from __future__ import annotations

import difflib
import html
from dataclasses import dataclass

__all__ = ["DiffRow", "DiffSummary", "diff_rows", "tokens", "words_html"]

MAX_AUTOJUNK_OFF = 40_000
BREAK = "\n"


@dataclass
class DiffRow:
    kind: str  # "same" or "change"
    left: str  # HTML; for "same" rows the text of both sides
    right: str = ""


@dataclass
class DiffSummary:
    rows: list[DiffRow]
    same_words: int  # words in equal runs
    kept_words: int
    copy_words: int

    @property
    def changed(self) -> bool:
        return any(r.kind == "change" for r in self.rows)


def tokens(text: str) -> list[str]:
    """The words of ``text`` with a :data:`BREAK` token between non-empty lines."""
    out: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if words:
            if out:
                out.append(BREAK)
            out.extend(words)
    return out


def _count(toks: list[str]) -> int:
    return sum(1 for t in toks if t != BREAK)


def words_html(toks: list[str]) -> str:
    """Escaped words joined by spaces, line breaks as ``<br>`` (none at either end)."""
    start, end = 0, len(toks)
    while start < end and toks[start] == BREAK:
        start += 1
    while end > start and toks[end - 1] == BREAK:
        end -= 1
    toks = toks[start:end]
    out: list[str] = []
    for t in toks:
        if t == BREAK:
            out.append("<br>")
        else:
            out.append((" " if out and out[-1] != "<br>" else "") + html.escape(t, quote=False))
    return "".join(out)


def _split_words(toks: list[str], n: int, from_end: bool = False) -> tuple[list[str], list[str]]:
    """``toks`` cut after its first ``n`` words (or before its last ``n``)."""
    seen = 0
    idx = range(len(toks) - 1, -1, -1) if from_end else range(len(toks))
    for k in idx:
        if toks[k] != BREAK:
            seen += 1
            if seen == n:
                return (toks[:k], toks[k:]) if from_end else (toks[: k + 1], toks[k + 1:])
    return ([], toks) if from_end else (toks, [])


def _same_html(toks: list[str], first: bool, last: bool, context: int) -> str:
    n = _count(toks)
    if n <= 2 * context + 8:
        return words_html(toks)
    head, rest = ([], toks) if first else _split_words(toks, context)
    hidden, tail = (rest, []) if last else _split_words(rest, context, from_end=True)
    gap = f'<span class="gap">\u2026 {_count(hidden)} identical words \u2026</span>'
    return " ".join(p for p in (words_html(head), gap, words_html(tail)) if p)


def diff_rows(kept: str, copy: str, *, context: int = 8, absorb: int = 4) -> DiffSummary:
    """The rows of the word-level difference from ``kept`` to ``copy`` (module docstring)."""
    a, b = tokens(kept), tokens(copy)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=len(a) + len(b) > MAX_AUTOJUNK_OFF)
    ops = matcher.get_opcodes()
    rows: list[DiffRow] = []
    left: list[str] = []
    right: list[str] = []
    same = 0

    def flush() -> None:
        if left or right:
            rows.append(DiffRow("change", " ".join(p for p in left if p), " ".join(p for p in right if p)))
            left.clear()
            right.clear()

    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            same += _count(a[i1:i2])
            inner = 0 < k < len(ops) - 1
            if inner and (left or right) and _count(a[i1:i2]) < absorb:
                left.append(words_html(a[i1:i2]))
                right.append(words_html(b[j1:j2]))
                continue
            flush()
            rows.append(DiffRow("same", _same_html(a[i1:i2], k == 0, k == len(ops) - 1, context)))
            continue
        if i2 > i1:
            left.append(f"<del>{words_html(a[i1:i2])}</del>")
        if j2 > j1:
            right.append(f"<ins>{words_html(b[j1:j2])}</ins>")
    flush()
    return DiffSummary(rows, same, _count(a), _count(b))
