"""Where the time of HTML -> verdict goes, step by step (issue 14 items 3 and 5), on goldset-dev.

Every page, in the online metric's order, goes through ``parse_page``'s steps one by one (decoding,
the C scan that gives the tagged fields, the teasers and the one <article>'s HTML, the anchors' hosts it
left to Python, resiliparse's main content, the prose and heading lines, the listing reader, lxml's parse
and the trafilatura fallback when the fast extract is too short, the navigation check, sentences), then ``Deduplicator.process``'s (features, fingerprints, the check against the embedded
index, the insert), each timed by its CPU time (``time.process_time``; on shared cores wall time
measures the other tenants). The page the steps make is compared with ``parse_page``'s, so these
figures are of the real path: the run stops if the two differ. One pass, as a crawl (and
``bench_throughput.py``) goes: the word cache starts cold. Then ``--warm N`` passes of the steps after
extraction over the same pages, each into a new empty index with the word cache kept (as in a long
crawl), give the after-extraction figures of issue 14 item 3 on their own. With ``--warm-parse`` each
warm page's HTML is parsed again (untimed) before its steps, as in a crawl, where the extraction runs
between two pages' checks: what the extraction does to the CPU caches and the allocator, without the
word cache's first-sight misses (a cold pass pays both).

``--extractor`` (default ``native``, the default extractor): ``native``'s steps are decoding, the C scan
that gives the fields, the anchors' hosts, the main-content lines, the prose and heading lines and the
teasers, then the listing reader, lxml's parse and trafilatura when too little prose is left, the navigation
check, sentences; ``resiliparse``'s are those of the first paragraph.

Cited by: docs/performance.md ("One page from HTML to verdict")."""
from __future__ import annotations

import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict
from functools import cache, partial
from pathlib import Path

import common


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--limit", type=int, default=None, help="pages (default: all; --quick: 40)")
    p.add_argument("--warm", type=int, default=3, help="warm passes after extraction (default 3)")
    p.add_argument("--warm-parse", action="store_true",
                   help="warm passes parse each page's HTML (untimed) before its steps, as a crawl does")
    p.add_argument("--extractor", choices=("resiliparse", "native"), default="native",
                   help="whose steps are timed (default native, the default extractor)")
    args = p.parse_args(argv)
    if common.goldset_missing(args.goldset):
        print(common.goldset_missing(args.goldset))
        return 0
    from resiliparse.extract.html2text import extract_plain_text

    from dedup import extract as ex
    from dedup import page as pg
    from dedup.deduplicator import Deduplicator
    from dedup.encoding import decode_html
    from dedup.extractcheck import checked_text, list_share
    from dedup.indexmarks import unindexed
    from dedup.text import split_sentences
    from index.local import LocalIndex

    pages = common.goldset_pages(args.goldset, args.seed, args.limit or (40 if args.quick else None))
    tmp = Path(tempfile.mkdtemp(prefix="profile-path-"))
    index = LocalIndex(tmp / "index")
    dedup = Deduplicator(index)
    fz = dedup.featurizer
    fz(pg.parse_page(pages[0][2], "http://warm.invalid/"))  # WordNet, punkt and resiliparse load on first use
    spent: dict[str, float] = defaultdict(float)
    clock = time.process_time

    def timed(name, f, *a, **k):
        c = clock()
        out = f(*a, **k)
        spent[name] += clock() - c
        return out

    def slow_extract(text, tree, heads, scanned):
        return ex.main_text(text, tree, headings=heads, scanned=scanned)

    def hosts(page, anchors, own):
        for href, label, same in anchors:  # same: None where the scanner left the href's host to Python
            same = pg._href_host(href.strip(), own) == own if same is None else same
            (page.anchors_same if same else page.anchors_other).append(label)

    def scanned_page(text, page, native):
        """The C scan and the anchors' hosts of parse_page's read of ``text``: (page, scan, lazy tree)."""
        own = pg.site_host(page.url)
        step = "native scan (C: fields, lines, prose, teasers)" if native else "C scan (fields, teasers, one <article>)"
        scanned = timed(step, pg._c_scan, text, True, own, native, ex.MAX_TAGS)
        (page.title, page.keywords, page.description, page.headings, page.bold, anchors, page.anchor_count,
         *_) = scanned
        timed("anchors' hosts (Python)", hosts, page, anchors, own)
        return page, scanned, cache(lambda: ex.lxml_tree(text))

    def steps(html, url, read):
        """parse_page, step by step: decode, ``read`` the text (``read(text, page)``: ``(page, marked)``),
        and read it again without its parts marked as not for indexing (dedup.indexmarks) when the scan
        met a marker, keeping that reading unless it leaves too little text, as parse_page does."""
        text, encoding = timed("decode", decode_html, html, None)
        new = partial(pg.Page, url=url, encoding=encoding, url_tokens=pg.url_tokens(url))
        page, marked = read(text, new())
        if marked:
            cut = timed("index markers (the text without them)", unindexed, text)
            if cut is not text:
                again, _ = read(cut, new(truncated={"unindexed": [len(text), len(cut)]}))
                if not ex.too_little(again.text):
                    return again
        return page

    def native_read(text, page):
        """parse_page(extractor="native")'s read of a decoded text, step by step."""
        page, scanned, tree = scanned_page(text, page, True)
        teasers, prose = ex.main_teasers(scanned[8], scanned[7]), scanned[10]
        listing = timed("listing reader (teasers)", ex._scanned_listing, prose, teasers, "native")
        if listing is not None:
            main, method = listing
        elif ex.too_little(prose):
            main, method = timed("lxml parse + trafilatura fallback", ex.native_text, text, prose, teasers, tree)
        else:
            main, method = prose, "native"
        others = (("trafilatura", lambda: ex.trafilatura_text(text, tree())),) if method == "native" else ()
        page.text, page.extraction = timed("navigation check", checked_text, main, method,
                                           page.anchors_same + page.anchors_other, tree, others)
        page.list_share = round(list_share(page.text), 4)
        page.sentences = timed("sentences (punkt)", split_sentences, page.text)
        return page, scanned[12]

    def resiliparse_read(text, page):
        """parse_page(extractor="resiliparse")'s read of a decoded text, step by step."""
        page, scanned, tree = scanned_page(text, page, False)
        teasers, article = scanned[8], scanned[11]
        heads = {h for _, h in page.headings}
        raw = timed("resiliparse main content", extract_plain_text, (article and article[2]) or text,
                    **ex._RESILIPARSE)
        prose = timed("prose and heading lines", lambda: ex._prose(ex._lines(raw), heads))
        listing = timed("listing reader (teasers)", ex._scanned_listing, prose, teasers, "resiliparse")
        if listing is not None:
            main, method = listing
        elif ex.too_little(prose):
            main, method = timed("lxml parse + trafilatura fallback", slow_extract, text, tree, heads,
                                 ((article and article[2]), teasers))
        else:
            main, method = prose, "resiliparse"
        others = (("trafilatura", lambda: ex.trafilatura_text(text, tree)),) if method == "resiliparse" else ()
        page.text, page.extraction = timed("navigation check", checked_text, main, method,
                                           page.anchors_same + page.anchors_other, tree, others)
        page.list_share = round(list_share(page.text), 4)
        page.sentences = timed("sentences (punkt)", split_sentences, page.text)
        return page, scanned[12]

    def _decide(page):
        terms = timed("features (tokens, stop words, mapping, stems, TDW)", fz.terms, page)
        features = timed("fingerprints (keys, shingles, simhash, MRC)", fz.fingerprint, page, terms)
        verdict = timed("check (search + verification)", dedup.check, page, features)
        if not dedup.config.drops(verdict):
            timed("insert", dedup.add, page, features, verdict)

    parsed, htmls = [], []
    read = native_read if args.extractor == "native" else resiliparse_read
    try:
        for _, url, html in pages:
            page = steps(html, url, read)
            if asdict(page) != asdict(pg.parse_page(html, url, extractor=args.extractor)):
                raise SystemExit(f"{url}: the steps made another page than parse_page: update this script")
            parsed.append(page)
            htmls.append((html, url))
            _decide(page)
    finally:
        index.close()
        shutil.rmtree(tmp, ignore_errors=True)
    between = htmls if args.warm_parse else None
    parse = partial(pg.parse_page, extractor=args.extractor)
    warm = [_warm_pass(parsed, fz, Deduplicator, LocalIndex, between, parse) for _ in range(args.warm)]
    n = len(pages)
    after = ("features", "fingerprints", "check", "insert")
    print(f"{n} pages, seed {args.seed}, CPU ms/page")
    for name, seconds in spent.items():
        print(f"  {name:55s} {seconds / n * 1e3:7.3f}")
    before = sum(s for k, s in spent.items() if not k.startswith(after))
    print(f"  {'= HTML -> page (extraction)':55s} {before / n * 1e3:7.3f}")
    print(f"  {'= after extraction (features .. insert)':55s} {(sum(spent.values()) - before) / n * 1e3:7.3f}")
    if warm:
        parse = ", each page's HTML parsed before its steps" if args.warm_parse else ""
        print(f"after extraction, warm word cache, a new index each pass ({len(warm)} passes{parse}), CPU ms/page:")
        for name in warm[0]:
            print(f"  {name:55s} " + " ".join(f"{w[name] / n * 1e3:7.3f}" for w in warm))
    return 0


def _warm_pass(pages, featurizer, deduplicator, local_index, htmls=None, parse_page=None) -> dict[str, float]:
    """CPU seconds of each step after extraction over ``pages``, into a new empty index; ``htmls``: each
    page's ``(html, url)``, parsed (untimed) before its steps."""
    tmp = Path(tempfile.mkdtemp(prefix="profile-path-warm-"))
    index = local_index(tmp / "index")
    dedup = deduplicator(index, featurizer=featurizer)
    clock = time.process_time
    spent = dict.fromkeys(("features", "fingerprints", "check", "insert", "= after extraction"), 0.0)
    try:
        for n, page in enumerate(pages):
            if htmls is not None:
                parse_page(*htmls[n])
            c0 = clock()
            terms = featurizer.terms(page)
            c1 = clock()
            features = featurizer.fingerprint(page, terms)
            c2 = clock()
            verdict = dedup.check(page, features)
            c3 = clock()
            if not dedup.config.drops(verdict):
                dedup.add(page, features, verdict)
            c4 = clock()
            for name, seconds in zip(spent, (c1 - c0, c2 - c1, c3 - c2, c4 - c3, c4 - c0)):
                spent[name] += seconds
    finally:
        index.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return spent


if __name__ == "__main__":
    raise SystemExit(main())
