"""What filling the CJK bigram tables of a local search index made before them costs (index/search_cjk.py
``backfill``, once, on the index's first writable open: the next crawl's start).

    python benchmarks/bench_search_backfill.py 100000            # ASCII texts
    python benchmarks/bench_search_backfill.py 100000 --nonascii # each text holds a curly apostrophe

Writes N documents of ~5 KB of English words into a new local search index, removes the tables as an older
version's index lacks them, and times the next open (CPU and wall), then the one after (nothing to do).
Cited by: docs/crawling.md."""
from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from index.search import LocalSearch  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("docs", type=int, nargs="?", default=100_000)
    p.add_argument("--nonascii", action="store_true", help="end each text with a curly apostrophe")
    args = p.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="backfill-"))
    words = "harbour bridge ship crane tide dock ferry quay sail mast rope anchor wave gull pier council".split()
    rng = random.Random(1)
    try:
        search = LocalSearch(folder)
        with search._db:  # one transaction: the rows as a crawl left them, without its cost per add
            for i in range(args.docs):
                text = " ".join(rng.choice(words) for _ in range(800)) + (" don’t" if args.nonascii else "")
                search._db.execute("INSERT INTO docs(url, title, text, fetched_at, status, duplicate_of, dedup, flags) "
                                   "VALUES (?, ?, ?, 0, 'unique', NULL, '{}', '{}')", (f"http://x.test/{i}", "A title", text))
        search.close()
        db = sqlite3.connect(folder / "search.sqlite")
        with db:
            db.executescript("DROP TRIGGER docs_ad_cjk; DROP TABLE cjk_fts; DROP TABLE cjk; "
                             "DELETE FROM meta WHERE key = 'cjk_filled';")
        db.close()
        cpu, wall = time.process_time(), time.perf_counter()
        LocalSearch(folder).close()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        again = time.perf_counter()
        LocalSearch(folder).close()
        again = time.perf_counter() - again
        kind = "holding a character beyond ASCII" if args.nonascii else "ASCII"
        print(f"{args.docs} documents of ~5 KB, {kind}: first open {cpu:.2f} s CPU, {wall:.2f} s wall "
              f"({wall / args.docs * 1e6:.0f} us a document); the next open {again * 1e3:.1f} ms")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
