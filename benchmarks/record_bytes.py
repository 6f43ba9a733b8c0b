"""Bytes per record of real pages: every page of the given folders kept in one embedded index.

    python benchmarks/record_bytes.py ../shared/data/goldset-dev ../shared/data/negatives-dev

Each page is parsed and featurized as a crawl does and added as a record (no check: one record a page,
near copies included; an exact copy of a kept text is refused by the index, as in a crawl), then the index is closed and measured: disk per record (``dedup.sqlite`` and its
indexes + ``signatures.usearch``; the ``-shm`` and search files are not counted), SQLite per record, and
the mean ``data`` blob.
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
    args = ap.parse_args(argv)
    config = DedupConfig()
    fz = Featurizer(weights=config.weights, shingle=config.shingle, sketch=config.sketch)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ix"
        n = 0
        with LocalIndex(path) as ix:
            for folder in args.folders:
                for i, (_, page_path) in enumerate(load_clusters(folder)):
                    page = parse_page(page_path.read_bytes(), f"http://bytes.invalid/{n}", extractor=config.extractor)
                    limit_text(page, config.max_text_chars)
                    try:
                        ix.add(fz(page).to_record(page))
                    except KeyTaken:
                        continue
                    n += 1
        sqlite_bytes = (path / DB_NAME).stat().st_size
        disk = sum(p.stat().st_size for p in path.iterdir() if p.is_file() and not p.name.endswith(("-shm", "-wal"))
                   and p.name != "lock" and not p.name.startswith("search"))
        with sqlite3.connect(path / DB_NAME) as db:
            blob, with_pos = db.execute("SELECT avg(length(data)), sum(hex(substr(data, 1, 3)) = '445233') FROM records").fetchone()
    print(f"{n} records: disk {disk / n:,.0f} B a record, SQLite {sqlite_bytes / n:,.0f} B, mean data blob "
          f"{blob:,.0f} B ({with_pos} with positions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
