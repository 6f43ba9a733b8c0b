"""Chinese and Japanese words in the local search index (:mod:`index.search`).

SQLite's ``unicode61`` tokenizer splits on blanks and punctuation, so a run of Han or kana characters (which
have no blanks between words) is one token: ``台風`` did not find a page holding ``大型の台風十四号``.  Each document's
Han and kana runs are also kept as overlapping character bigrams and the run's last character (``大型 型の の台 台風
風十 十四 四号 号``; a lone character as itself) in table ``cjk``, indexed by FTS5 table ``cjk_fts`` (external
content, kept in step by triggers as ``docs_fts`` is; a document without such characters has no row).  A
query's run becomes the phrase of its bigrams (``空气质量`` -> ``"空气 气质 质量"``: the bigrams in a row, so the
characters in a row), a lone character the tokens it begins (``台*``); every such phrase and every other word
must match.  This is what Elasticsearch's ``cjk`` analyzer does; its ``standard`` analyzer indexes each
character alone.

An index made before this table is filled once, when it is next opened for writing (a crawl, a restore),
from the documents it holds (:func:`backfill`); opened read-only before that, a query's runs are matched
as substrings of title and text (:func:`like_clause`, a scan of the table).
"""
from __future__ import annotations

import logging
import re
import sqlite3

from dedup._scan import has_cjk
from dedup.text import HAN_KANA

__all__ = ["SCHEMA", "grams", "split_query", "backfill", "like_clause", "snippet"]

log = logging.getLogger("index.search")

#: Han and kana, as dedup/_scan.c ``is_cjk`` counts them (Hangul has blanks between words)
_RUN = re.compile(f"[{HAN_KANA}]+")

SCHEMA = """
CREATE TABLE IF NOT EXISTS cjk (id INTEGER PRIMARY KEY, grams TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS cjk_fts USING fts5(grams, content='cjk', content_rowid='id',
                                                      tokenize='unicode61');
CREATE TRIGGER IF NOT EXISTS cjk_ai AFTER INSERT ON cjk BEGIN
    INSERT INTO cjk_fts(rowid, grams) VALUES (new.id, new.grams);
END;
CREATE TRIGGER IF NOT EXISTS cjk_ad AFTER DELETE ON cjk BEGIN
    INSERT INTO cjk_fts(cjk_fts, rowid, grams) VALUES ('delete', old.id, old.grams);
END;
CREATE TRIGGER IF NOT EXISTS cjk_au AFTER UPDATE ON cjk BEGIN
    INSERT INTO cjk_fts(cjk_fts, rowid, grams) VALUES ('delete', old.id, old.grams);
    INSERT INTO cjk_fts(rowid, grams) VALUES (new.id, new.grams);
END;
CREATE TRIGGER IF NOT EXISTS docs_ad_cjk AFTER DELETE ON docs BEGIN
    DELETE FROM cjk WHERE id = old.id;
END;
"""
#: meta key set once every document's bigrams are in ``cjk``
FILLED = "cjk_filled"


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def _tokens(run: str) -> list[str]:
    """What a document's run is indexed as: its bigrams, then its last character alone, which begins no bigram
    (so that a lone character's query, the bigrams it begins, finds it at the end of a run too)."""
    return [run] if len(run) == 1 else [*_bigrams(run), run[-1]]


def _runs(text: str) -> list[str]:
    """The Han and kana runs of ``text``: read by the regex only when the scanner's ``has_cjk`` finds one (6.5 us
    for 5 KB of English text with a curly apostrophe, where the regex took 57)."""
    return _RUN.findall(text) if text and has_cjk(text) else []


def grams(*texts: str) -> str:
    """The tokens of every Han and kana run of ``texts`` (:func:`_tokens`), blank-separated ("" when none)."""
    return " ".join(g for text in texts for run in _runs(text) for g in _tokens(run))


def split_query(text: str) -> tuple[str, list[str]]:
    """``(rest, phrases)``: ``text`` with its Han and kana runs taken out, and those runs as FTS5 queries
    of ``cjk_fts`` (quoted phrases of bigrams; a lone character as the prefix of the bigrams it begins)."""
    phrases = [f'"{run}"*' if len(run) == 1 else '"' + " ".join(_bigrams(run)) + '"' for run in _RUN.findall(text)]
    return _RUN.sub(" ", text), phrases


def upsert(db: sqlite3.Connection, doc_id: int, title: str, text: str) -> None:
    """Keep ``cjk`` in step with document ``doc_id`` (in the caller's transaction)."""
    found = grams(title, text)
    if found:
        _put(db, doc_id, found)
    else:
        db.execute("DELETE FROM cjk WHERE id = ?", (doc_id,))


def _put(db: sqlite3.Connection, doc_id: int, found: str) -> None:
    # an update, not a replace, when the row exists: a replace's delete would not reach cjk_fts's trigger
    db.execute("INSERT INTO cjk(id, grams) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET grams = excluded.grams",
               (doc_id, found))


def backfill(db: sqlite3.Connection, batch: int = 1000) -> int:
    """Fill ``cjk`` from every document, once (an index made before it); returns how many documents have
    bigrams. Each document's text is read and scanned for Han and kana (``has_cjk``): 1.2 s a 100,000 documents
    of 5 KB (``benchmarks/bench_search_backfill.py``); the log says when it starts."""
    if db.execute("SELECT 1 FROM meta WHERE key = ?", (FILLED,)).fetchone():
        return 0
    docs = db.execute("SELECT count(*) FROM docs").fetchone()[0]
    if docs:
        log.info("Search index %s: indexing the Chinese and Japanese words of its %d documents, once (an index "
                 "made before a version that does)", db.execute("PRAGMA database_list").fetchone()[2], docs)
    n, last = 0, 0
    while True:
        rows = db.execute("SELECT id, title, text FROM docs WHERE id > ? ORDER BY id LIMIT ?", (last, batch)).fetchall()
        if not rows:
            break
        with db:
            for doc_id, title, text in rows:
                found = grams(title, text)
                if found:
                    _put(db, doc_id, found)  # a row of a backfill cut short, or a new one
                    n += 1
        last = rows[-1][0]
    with db:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (FILLED,))
    return n


def filled(db: sqlite3.Connection) -> bool:
    """Whether ``cjk`` holds every document's bigrams (else queries fall back to :func:`like_clause`)."""
    try:
        return db.execute("SELECT 1 FROM meta WHERE key = ?", (FILLED,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False


def like_clause(text: str, operator: str = "AND") -> tuple[str, list[str]]:
    """A SQL condition on ``d`` (docs) and its parameters: every Han and kana run of ``text`` (any, with
    ``operator`` OR) a substring of the title or the text (a scan: an index not yet filled, opened read-only)."""
    runs = _runs(text)
    clause = "(" + f" {operator} ".join("(instr(d.title, ?) > 0 OR instr(d.text, ?) > 0)" for _ in runs) + ")"
    return clause, [r for run in runs for r in (run, run)]


def snippet(text: str, query: str, tokens: int, highlight: tuple[str, str]) -> str:
    """A few dozen characters of ``text`` around the first Han or kana run of ``query`` it holds, each such
    run marked with ``highlight`` (FTS5's ``snippet()`` cannot mark what ``docs_fts`` did not index)."""
    runs = sorted(set(_RUN.findall(query)), key=len, reverse=True)
    at = min((i for i in (text.find(r) for r in runs) if i >= 0), default=0)
    width = 4 * tokens
    start, end = max(0, at - width // 3), min(len(text), at + width)
    piece = " ".join(text[start:end].split())
    if runs:
        piece = re.sub("|".join(map(re.escape, runs)), lambda m: f"{highlight[0]}{m.group(0)}{highlight[1]}", piece)
    return ("…" if start else "") + piece + ("…" if end < len(text) else "")
