"""The one-<article> input of the default extractor: lxml's re-serialised element (dedup.extract._article, before)
against the scanner's source slice without its comments (dedup._scan's article, after), page by page.

    python benchmarks/article_slice.py [--goldset DIR] [--show 5]

Over goldset-dev, negatives-dev and the same-site pages of seeds 1 and 2 (benchmarks/calib_data.same_site):
how many pages have one <article> by each reader, on how many the two HTML strings are the same but for
lxml's tail (the text after the element, which tostring appends), and on how many resiliparse's lines (dedup.extract._lines
of extract_plain_text) and the prose kept of them (dedup.extract._prose, with the page's headings) differ.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import common


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--show", type=int, default=5, help="print the first differing lines of this many pages")
    args = p.parse_args(argv)
    if common.goldset_missing(args.goldset):
        print(common.goldset_missing(args.goldset))
        return 0
    import calib_data
    from resiliparse.extract.html2text import extract_plain_text

    from dedup import extract as ex
    from dedup import page as pg
    from dedup._scan import scan
    from dedup.encoding import decode_html

    gold = Path(args.goldset)
    sets = {"goldset-dev": gold, "negatives-dev": gold.parent / "negatives-dev",
            "same-site 1": calib_data.same_site(1), "same-site 2": calib_data.same_site(2)}
    shown = 0
    for name, folder in sets.items():
        counts = dict(pages=0, lxml=0, scan=0, spans=0, same_html=0, tails=0, lines=0, prose=0)
        for path in sorted(q for q in folder.rglob("*") if q.is_file() and q.suffix in (".html", ".htm")):
            html, _ = decode_html(path.read_bytes(), None)
            tree = ex.lxml_tree(html)
            if tree is None:
                continue
            counts["pages"] += 1
            before = ex._article(tree)
            span = scan(html, html.count("<") <= ex.MAX_TAGS, lines=False)[11]
            after = span[2] if span else None  # the source slice, its comments left out
            counts["lxml"] += before is not None
            counts["scan"] += after is not None
            if (before is None) != (after is None):
                counts["spans"] += 1
                continue
            if before is None:
                continue
            tail = next(tree.iter("article")).tail or ""  # lxml's serialisation ends with the element's tail
            counts["same_html"] += before[:len(before) - len(tail)] == after
            counts["tails"] += bool(tail.strip())
            page = pg.Page(url="http://example.org/")
            pg._fields(tree, page)
            heads = {h for _, h in page.headings}
            a, b = (ex._lines(extract_plain_text(x, **ex._RESILIPARSE)) for x in (before, after))
            if a != b:
                counts["lines"] += 1
            if ex._prose(a, heads) != ex._prose(b, heads):
                counts["prose"] += 1
                if shown < args.show:
                    shown += 1
                    print(f"--- {path}")
                    for line in list(difflib.unified_diff(a.split("\n"), b.split("\n"), lineterm="", n=0))[2:12]:
                        print("   ", line[:160])
        print(f"{name}: {counts['pages']} pages; one <article>: lxml {counts['lxml']}, scan {counts['scan']} "
              f"(disagree {counts['spans']}); same HTML but the tail {counts['same_html']}, a tail with text "
              f"{counts['tails']}; resiliparse lines differ "
              f"{counts['lines']}, prose differs {counts['prose']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
