"""``local://PATH``: the search index of kept pages, ``PATH/search.sqlite`` (SQLite FTS5).

Table ``docs`` holds one row per URL (``url`` unique; adding a URL again replaces its
row): title, text, fetched_at, the dedup verdict as JSON (plus its ``status`` and
``duplicate_of`` as columns), and ``flags``, the JSON of any other fields of the document.
Its explicit ``id INTEGER PRIMARY KEY`` is the rowid of ``docs_fts``, an external-content
FTS5 table over title and text kept in sync by triggers (the text is stored once; an
explicit rowid survives VACUUM, an implicit one does not).  Tokenizer: ``porter unicode61
remove_diacritics 2`` (case and accent folding, English stemming: "ferries" finds "ferry").

Chinese and Japanese words (no blanks between them) are found through their character bigrams, kept in
tables ``cjk``/``cjk_fts`` beside (:mod:`index.search_cjk`).

Queries: user text is never passed to FTS5 as syntax.  Every word becomes a quoted FTS5
string (so quotes, ``-``, ``:``, ``*``, parentheses, ``AND``/``OR``/``NOT``/``NEAR`` are
plain words or separators), a trailing ``*`` on a word is kept as a prefix search, and the
words are ANDed; when that finds nothing and there were several words, any word may match
(OR).  Ranking: bm25 with the title weighted 4 times the text; ``score`` is ``-bm25``
(higher is better).

WAL mode, ``synchronous=NORMAL``, a commit per :meth:`LocalSearch.add`: a process crash
loses nothing that was added (see :mod:`index.local`).  Several processes may open it
(SQLite's own locking serialises writers); ``readonly=True`` opens an existing index for
reading only, as ``dedup search`` does.
"""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterator

from . import search_cjk
from .base import verdict_of

__all__ = ["LocalSearch", "fts_query", "require_fts5"]

DB_NAME = "search.sqlite"
SCHEMA_VERSION = 1
MAX_TERMS = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    fetched_at REAL NOT NULL,
    status TEXT,
    duplicate_of TEXT,
    dedup TEXT NOT NULL,
    flags TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_status ON docs(status);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    title, text, content='docs', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS docs_ai AFTER INSERT ON docs BEGIN
    INSERT INTO docs_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TRIGGER IF NOT EXISTS docs_ad AFTER DELETE ON docs BEGIN
    INSERT INTO docs_fts(docs_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
END;
CREATE TRIGGER IF NOT EXISTS docs_au AFTER UPDATE ON docs BEGIN
    INSERT INTO docs_fts(docs_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
    INSERT INTO docs_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
"""

_CORE = ("url", "title", "text", "fetched_at", "dedup")
_DOC_COLUMNS = "d.url, d.title, d.text, d.fetched_at, d.dedup, d.flags"
_WORD = re.compile(r"(\w+)(\*?)")

def require_fts5() -> None:
    """Raise RuntimeError when this Python's sqlite3 module was built without FTS5 (a probe in
    memory, ~0.2 ms CPU: each LocalSearch asks once, when it opens)."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)")
    except sqlite3.OperationalError as exc:
        raise RuntimeError(
            f"this Python's sqlite3 module (SQLite {sqlite3.sqlite_version}) has no FTS5 full-text "
            f"search ({exc}); the local search index needs it: use a Python built against an SQLite "
            "with FTS5 (most are, e.g. python.org and Debian builds), or an Elasticsearch search index"
        ) from None
    finally:
        probe.close()


def fts_query(text: str, operator: str = "AND") -> str:
    """A safe FTS5 query for user ``text``: quoted words joined by ``operator`` ("" if none)."""
    terms = []
    for word, star in _WORD.findall(text)[:MAX_TERMS]:
        # \w also matches "_", which unicode61 treats as a separator: inside quotes that
        # is a phrase, still valid
        terms.append(f'"{word}"' + ("*" if star else ""))
    return f" {operator} ".join(terms)


class LocalSearch:
    """A :class:`~index.base.SearchIndex` in ``PATH/search.sqlite`` (see the module docstring)."""

    def __init__(self, path: str | Path, *, readonly: bool = False, synchronous: str = "NORMAL",
                 snippet_tokens: int = 16, highlight: tuple[str, str] = ("[", "]")) -> None:
        require_fts5()
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA (got {synchronous!r})")
        self.path = Path(path)
        self.readonly = readonly
        self.snippet_tokens = int(snippet_tokens)
        self.highlight = highlight
        file = self.path / DB_NAME
        self._db: sqlite3.Connection | None = None
        if readonly:
            if not file.exists():
                raise FileNotFoundError(f"no search index at {file}")
            db = sqlite3.connect(f"{file.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(file, check_same_thread=False)
        self._db = db
        try:
            db.execute("PRAGMA busy_timeout=5000")
            if not readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f"PRAGMA synchronous={synchronous.upper()}")
                with db:
                    db.executescript(_SCHEMA + search_cjk.SCHEMA)
                    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                               (str(SCHEMA_VERSION),))
                search_cjk.backfill(db)
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None or int(row[0]) > SCHEMA_VERSION:
                raise RuntimeError(f"{file} has schema version {row and row[0]}, this program knows "
                                   f"{SCHEMA_VERSION}: upgrade scrapy-dedup to open it")
        except BaseException:
            self.close()
            raise

    # -- SearchIndex -------------------------------------------------------------------------------
    def add(self, doc: dict[str, Any]) -> None:
        """Store ``doc`` (replacing the one with the same url); committed when this returns."""
        dedup = verdict_of(doc)
        url = doc["url"]
        flags = {k: v for k, v in doc.items() if k not in _CORE}
        db = self._writable()
        with db:
            doc_id = db.execute(
                "INSERT INTO docs(url, title, text, fetched_at, status, duplicate_of, dedup, flags) "
                "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(url) DO UPDATE SET title=excluded.title, "
                "text=excluded.text, fetched_at=excluded.fetched_at, status=excluded.status, "
                "duplicate_of=excluded.duplicate_of, dedup=excluded.dedup, flags=excluded.flags RETURNING id",
                (url, doc.get("title") or "", doc.get("text") or "", float(doc.get("fetched_at") or 0.0),
                 dedup.get("status"), dedup.get("duplicate_of"),
                 json.dumps(dedup, ensure_ascii=False, default=str),
                 json.dumps(flags, ensure_ascii=False, default=str))).fetchone()[0]
            search_cjk.upsert(db, doc_id, doc.get("title") or "", doc.get("text") or "")

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Best matches first: the stored documents plus ``snippet``, ``status``,
        ``duplicate_of`` and ``score``.  Any user text is safe (see the module docstring)."""
        if limit <= 0:
            return []
        db = self._open()
        rest, phrases = search_cjk.split_query(query)
        if phrases:
            hits = self._run_cjk(db, query, fts_query(rest), phrases, limit)
            if hits or len(phrases) + len(_WORD.findall(rest)) < 2:
                return hits
            # any word may match, as below: the runs' matches and the other words' (each list ranked)
            anyword = self._run_cjk(db, query, "", phrases, limit, "OR")
            if fts_query(rest):
                seen = {h["url"] for h in anyword}
                anyword += [h for h in self._run(db, fts_query(rest, "OR"), limit) if h["url"] not in seen]
            return anyword[:limit]
        match = fts_query(query)
        if not match:
            return []
        hits = self._run(db, match, limit)
        if not hits and " AND " in match:
            hits = self._run(db, fts_query(query, "OR"), limit)
        return hits

    def _run(self, db: sqlite3.Connection, match: str, limit: int) -> list[dict[str, Any]]:
        start, end = self.highlight
        rows = db.execute(
            f"SELECT {_DOC_COLUMNS}, snippet(docs_fts, 1, ?, ?, '…', ?), bm25(docs_fts, 4.0, 1.0) AS rank "
            "FROM docs_fts JOIN docs AS d ON d.id = docs_fts.rowid WHERE docs_fts MATCH ? "
            "ORDER BY rank LIMIT ?",
            (start, end, self.snippet_tokens, match, int(limit))).fetchall()
        return [_hit(row[:6], row[6], row[7]) for row in rows]

    def _run_cjk(self, db: sqlite3.Connection, query: str, match: str, phrases: list[str],
                 limit: int, operator: str = "AND") -> list[dict[str, Any]]:
        """A query holding Chinese or Japanese words: each as a phrase of bigrams of ``cjk_fts`` (a substring
        scan on an index not yet filled: :mod:`index.search_cjk`), joined by ``operator``, and every other
        word (``match``) too."""
        rest = " AND d.id IN (SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?)" if match else ""
        if search_cjk.filled(db):
            sql = (f"SELECT {_DOC_COLUMNS}, bm25(cjk_fts) AS rank FROM cjk_fts JOIN docs AS d "
                   f"ON d.id = cjk_fts.rowid WHERE cjk_fts MATCH ?{rest} ORDER BY rank LIMIT ?")
            params: list[Any] = [f" {operator} ".join(phrases)]
        else:
            clause, params = search_cjk.like_clause(query, operator)
            sql = f"SELECT {_DOC_COLUMNS}, 0.0 FROM docs AS d WHERE {clause}{rest} ORDER BY d.fetched_at DESC LIMIT ?"
        rows = db.execute(sql, [*params, *([match] if match else []), int(limit)]).fetchall()
        # FTS5's snippet() cannot mark what docs_fts did not index: the runs are marked in the text here
        return [_hit(row[:6], search_cjk.snippet(row[2], query, self.snippet_tokens, self.highlight), row[6])
                for row in rows]

    def get(self, url: str) -> dict[str, Any] | None:
        row = self._open().execute(f"SELECT {_DOC_COLUMNS} FROM docs AS d WHERE url = ?", (url,)).fetchone()
        return _doc(row) if row else None

    def remove(self, url: str) -> bool:
        db = self._writable()
        with db:
            return db.execute("DELETE FROM docs WHERE url = ?", (url,)).rowcount > 0

    def count(self) -> int:
        return self._open().execute("SELECT count(*) FROM docs").fetchone()[0]

    def __len__(self) -> int:
        return self.count()

    def iter_docs(self, batch: int = 500) -> Iterator[dict[str, Any]]:
        """Every document, in insertion order (``batch`` at a time; no cursor held between)."""
        last = 0
        while True:
            rows = self._open().execute(
                f"SELECT d.id, {_DOC_COLUMNS} FROM docs AS d WHERE d.id > ? ORDER BY d.id LIMIT ?",
                (last, batch)).fetchall()
            if not rows:
                return
            for row in rows:
                yield _doc(row[1:])
            last = rows[-1][0]

    def flush(self) -> None:
        """Nothing is pending (every add commits); kept for the interface."""
        self._open()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> "LocalSearch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._db is None else f"{self.count()} docs"
        return f"LocalSearch({str(self.path)!r}, {state})"

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            raise ValueError(f"the search index {self.path} is closed")
        return self._db

    def _writable(self) -> sqlite3.Connection:
        db = self._open()
        if self.readonly:
            raise ValueError(f"the search index {self.path} was opened read-only")
        return db


def _hit(row: tuple, snippet: str, rank: float) -> dict[str, Any]:
    """A search hit: the document of ``row`` (:data:`_DOC_COLUMNS`) with its ``snippet``, the verdict's
    ``status`` and ``duplicate_of``, and ``score`` (``-rank``: higher is better)."""
    doc = _doc(row)
    dedup = doc.get("dedup") or {}
    doc.update(snippet=snippet, status=dedup.get("status"), duplicate_of=dedup.get("duplicate_of"), score=-float(rank))
    return doc


def _doc(row: tuple) -> dict[str, Any]:
    url, title, text, fetched_at, dedup, flags = row
    doc: dict[str, Any] = {"url": url, "title": title, "text": text, "fetched_at": fetched_at,
                           "dedup": json.loads(dedup)}
    doc.update(json.loads(flags))
    return doc
