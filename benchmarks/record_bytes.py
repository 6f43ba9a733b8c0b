"""Bytes per record of real pages: every page of the given folders kept in one embedded index.

    python benchmarks/record_bytes.py ../shared/data/goldset-dev ../shared/data/negatives-dev

Each page is parsed and featurized as a crawl does and added as a record (no check: one record a page,
near copies included; an exact copy of a kept text is refused by the index, as in a crawl), then the index is closed and measured: disk per record (``dedup.sqlite`` and its
indexes + ``signatures.usearch``; the ``-shm`` and search files are not counted), SQLite per record, and
the mean ``data`` blob; then where the bytes go: each SQLite table and index (its pages, from the
``dbstat`` virtual table: the rows' payload and the pages' unused bytes), SQLite's fixed pages (schema,
``meta``, statistics: a few pages whatever the size, a noticeable share of a small index's bytes, none of a
large one's), the mean of each column, and each vector file.  ``--keep DIR`` builds the index in DIR (kept).

Cited by: docs/performance.md ("Bytes per record"), docs/accuracy.md.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from dedup.cli.evaluate import load_clusters
    from dedup.deduplicator import DedupConfig
    from dedup.features import Featurizer
    from dedup.page import limit_text, parse_page
    from dedup.store import KeyTaken
    from index.local import DB_NAME, LocalIndex

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="folders of <cluster>/<page>.htm")
    ap.add_argument("--keep", help="build the index in this folder and keep it (default: a temporary one)")
    ap.add_argument("--url-prefix", default="http://bytes.invalid/",
                    help="the records' URLs are this + a number (default %(default)s)")
    args = ap.parse_args(argv)
    config = DedupConfig()
    fz = Featurizer(weights=config.weights, shingle=config.shingle, sketch=config.sketch)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "ix"
        n = 0
        with LocalIndex(path) as ix:
            for folder in args.folders:
                for i, (_, page_path) in enumerate(load_clusters(folder)):
                    page = parse_page(page_path.read_bytes(), f"{args.url_prefix}{n}", extractor=config.extractor)
                    limit_text(page, config.max_text_chars)
                    try:
                        ix.add(fz(page).to_record(page))
                    except KeyTaken:
                        continue
                    n += 1
        sqlite_bytes = (path / DB_NAME).stat().st_size
        disk = sum(p.stat().st_size for p in path.iterdir() if p.is_file() and not p.name.endswith(("-shm", "-wal"))
                   and p.name != "lock" and not p.name.startswith("search"))
        db = sqlite3.connect(path / DB_NAME)
        try:
            blob, = db.execute("SELECT avg(length(data)) FROM records").fetchone()
            formats = dict(db.execute("SELECT substr(data, 1, 3), count(*) FROM records GROUP BY 1"))
            parts = db.execute("SELECT name, count(*), sum(pgsize), sum(payload), sum(unused) FROM dbstat "
                               "GROUP BY name ORDER BY 3 DESC").fetchall()
            names = [r[1] for r in db.execute("PRAGMA table_info(records)") if r[2].upper() in ("TEXT", "BLOB", "")]
            means = db.execute("SELECT " + ", ".join(f"avg(coalesce(length({c}), 0))" for c in names)
                               + " FROM records").fetchone()
        finally:
            db.close()
        files = {p.name: p.stat().st_size for p in sorted(path.iterdir()) if p.is_file()}
    fixed = sum(used for name, _, used, _, _ in parts if name.startswith(("sqlite_", "meta")))  # not a record's
    print(f"{n} records: disk {disk / n:,.0f} B a record ({(disk - fixed) / n:,.0f} B without SQLite's fixed pages), "
          f"SQLite {sqlite_bytes / n:,.0f} B ({(sqlite_bytes - fixed) / n:,.0f} B), mean data blob {blob:,.0f} B "
          f"({', '.join(f'{k.decode()}: {v}' for k, v in sorted(formats.items()))})")
    print("SQLite, B a record: table or index | pages | bytes | payload | unused")
    for name, pages, used, payload, unused in parts:
        print(f"  {name:26s} {pages:7,d} {used / n:8.1f} {payload / n:8.1f} {unused / n:7.1f}")
    print("columns, mean bytes: " + ", ".join(f"{c} {m:.1f}" for c, m in zip(names, means)))
    print("files, B a record: " + ", ".join(f"{k} {v / n:.1f}" for k, v in files.items()
                                               if not k.endswith(("-shm", "-wal")) and k != "lock"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
