"""The faster feature code computes what the former code computed (issue 14 item 3): each replaced
implementation is kept here, as it was, and compared on the sample site's pages and edge cases."""
import pickle
from collections import Counter
from itertools import chain

import numpy as np
import pytest
import xxhash

from dedup.features import Featurizer, SentenceChunks
from dedup.page import Page, parse_page
from dedup.simhash import chunk_simhashes, hash_terms
from dedup.tdw import PRESETS, TermVector, _exact_sums, field_texts, resolve_weights, term_weights
from dedup.text import _CJK_RUN, _TOKEN, Normalizer, tokenize


def former_tokenize(text: str) -> list[str]:
    text = text.lower()
    for mark in "’‘ʼ´`":  # each an apostrophe inside a word (dedup.text._APOSTROPHE_LIKE)
        text = text.replace(mark, "'")
    if not _CJK_RUN.search(text):
        return _TOKEN.findall(text)
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        if _CJK_RUN.match(tok):
            out.extend([tok] if len(tok) == 1 else [tok[i: i + 2] for i in range(len(tok) - 1)])
        else:
            out.append(tok)
    return out


def former_term_weights(page: Page, normalizer: Normalizer, weights, body_terms=None) -> TermVector:
    total: dict[str, float] = {}
    for name, texts in field_texts(page).items():
        w = weights.get(name, 0.0)
        if not w or not any(texts):
            continue
        if name == "body" and body_terms is not None:
            counts = Counter(body_terms)
        else:
            counts = Counter(t for t in map(normalizer.term, tokenize("\n".join(texts))) if t)
        for t, n in counts.items():
            total[t] = total.get(t, 0) + n * w
    return TermVector.from_counts({t: w for t, w in total.items() if w > 0})


TEXTS = [
    "Plain ASCII words, don't split it's 42 and x_y under_scores.",
    "Ünïcödé café naïve résumé – l’été d’Arles",
    "ΣΟΦΟΣ σοφός ΟΔΟΣ\nΟΔΟΣ end",  # final sigma, either side of a newline
    "\u212a Kelvin sign lowers to ASCII k; İstanbul dotted capital",
    "日本語のテキスト and English 中文 mixed\n韓국어 한국어",
    "", "   ", "'''", "a'b' 'c d'e’f",
    "'tis rock'n'roll, a''b don't' ''x'' 9'9 'a' b'",  # apostrophes: inside a token only between two alnums
    "non\xa0breaking — dashes – “quotes” ‘single’ 5\u202f000 € £ … ©",  # non-ASCII, none of it a token
    "x² 3½ nai\u0308ve e\u0301 \x1c\x1d\x1e\x1f\x0b\x0c sep",  # alnum beyond ASCII; split()'s separators
]


def _sample_pages() -> list[Page]:
    from pathlib import Path

    site = Path(__file__).resolve().parents[1] / "crawler" / "sample_site" / "pages"
    return [parse_page(path.read_bytes(), f"http://site.test/{path.relative_to(site)}")
            for path in sorted(site.rglob("*.html"))]


@pytest.mark.parametrize("text", TEXTS)
def test_tokenize_equals_the_former_pattern(text):
    assert tokenize(text) == former_tokenize(text)


def test_tokenize_equals_the_former_pattern_on_random_texts():
    """The translate-and-split tokens (ASCII text, and text whose non-ASCII characters are all separators)
    are the former regex's on random strings of the characters that decide a token's edges."""
    import random

    rng = random.Random(14)
    alphabet = list("abzAZ09'’‘ʼ´` _-.,\n\t\x0b\x1c\xa0—“é²\u0307\u212a日") + ["''", "a'b", "'a", "b'", "İ"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(20_000)]
    assert [t for t in texts if tokenize(t) != former_tokenize(t)] == []


def test_tokenize_of_joined_sentences_equals_sentence_by_sentence():
    sentences = [t for text in TEXTS for t in text.split("\n")]
    assert tokenize("\n".join(sentences)) == list(chain.from_iterable(map(tokenize, sentences)))


def test_term_weights_equal_the_former_dict_sums():
    norm = Normalizer(word_mapping=False)
    page = Page(url="http://example.org/harbour-bridge", title="Harbour bridge", text="bridge bridge repairs\nx",
                headings=[(1, "Bridge news"), (3, "More bridge")], bold=["bridge"], anchors_same=["bridge", "home"],
                anchors_other=["bridge"], keywords="bridge", description="harbour")
    odd = {"url": 0.3, "title": 0.7, "h1": 0.1, "h3": 1.3, "anchors_same": 0.45, "body": 1.1, "bold": 0.2}
    for weights in (*PRESETS.values(), odd):
        w = resolve_weights(weights)
        new, old = term_weights(page, norm, w), former_term_weights(page, norm, w)
        assert np.array_equal(new.hashes, old.hashes) and np.array_equal(new.weights, old.weights)
    empty = term_weights(Page(url=""), norm, resolve_weights("tdw"))
    assert len(empty) == 0 and empty.hashes.dtype == np.uint64 and empty.weights.dtype == np.float32


def test_featurizer_equals_the_former_sentence_by_sentence_features():
    fz = Featurizer()
    pages = _sample_pages()
    assert len(pages) > 10
    for page in pages:
        terms = fz.terms(page)
        tokens = [tokenize(s) for s in page.sentences]
        mapped = {t: fz.normalizer.term(t) for t in chain.from_iterable(tokens)}
        sentence_terms = [[mapped[t] for t in ts if mapped[t]] for ts in tokens]
        body = list(chain.from_iterable(sentence_terms))
        assert terms.sentences == sentence_terms and terms.body == body
        old = former_term_weights(page, fz.normalizer, fz.weights, body_terms=body)
        assert np.array_equal(terms.tdw.hashes, old.hashes) and np.array_equal(terms.tdw.weights, old.weights)
        f = fz.fingerprint(page, terms)
        lengths = np.array([len(t) for t in sentence_terms], dtype=np.int64)
        chunks = chunk_simhashes(hash_terms(body), np.repeat(np.arange(lengths.size), lengths), lengths.size)
        assert np.array_equal(f.chunks, chunks[lengths > 0])


def test_features_pickle_the_recipe_of_their_chunks_not_the_chunks():
    """A worker's features go back without their chunks made (no decision reads them: ~0.45 ms a page
    saved); read after the pickle, with a normaliser of the same settings, they are the same."""
    page = _sample_pages()[0]
    f = Featurizer()(page)
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(f._chunks, SentenceChunks) and isinstance(g._chunks, SentenceChunks)  # none made
    assert g._chunks.normalizer == f._chunks.normalizer.settings == (f._chunks.normalizer.word_mapping, True, True)
    assert g.chunks.size and np.array_equal(g.chunks, f.chunks)
    h = pickle.loads(pickle.dumps(f))  # made ones go as they are
    assert not callable(h._chunks) and np.array_equal(h.chunks, f.chunks)
    assert (g.content_hash, g.simhash, g.shingle_count) == (f.content_hash, f.simhash, f.shingle_count)
    assert np.array_equal(g.shingles, f.shingles) and np.array_equal(g.tdw.weights, f.tdw.weights)


def test_element_text_equals_text_content():
    from dedup.extract import element_text, lxml_tree

    tree = lxml_tree("<html><head><title> A &amp; B </title></head><body><h1>Plain</h1>"
                     "<h2>x<!-- gone -->y &eacute; z</h2><a href='/'>one <b>two</b> three</a>tail"
                     "<a href='/e'></a><b>\n spaced \n</b><strong><?php echo 1; ?>pi</strong>"
                     "<h3><span>nested</span> text</h3><a href='x'>caf\u00e9 na\u00efve</a></body></html>")
    elements = list(tree.iter("title", "h1", "h2", "h3", "a", "b", "strong"))
    assert len(elements) == 10
    for el in elements:
        assert element_text(el) == el.text_content()


def test_parsed_tree_is_lxml_html_with_its_methods():
    # the parser picks HtmlElement for every element in C (no form classes): the tree still has
    # lxml.html's API, which the fields walk, the listing reader and trafilatura use
    import lxml.html

    from dedup.extract import lxml_tree, trafilatura_text

    html = ("<html><body><form><input name='q'></form><article><h1>Title here</h1>"
            + "<p>" + "A sentence of the story that goes on for a while. " * 30 + "</p></article></body></html>")
    tree = lxml_tree(html)
    assert all(isinstance(el, lxml.html.HtmlElement) for el in tree.iter())
    assert tree.text_content() == lxml.html.document_fromstring(html).text_content()
    assert trafilatura_text(html, tree) == trafilatura_text(html, lxml.html.document_fromstring(html))


def test_term_weights_equal_the_former_on_random_pages_and_weights():
    import random

    from dedup.tdw import FIELDS

    rng = random.Random(5)
    norm = Normalizer(word_mapping=False)
    words = "bridge harbour repairs ferry ferries closed council river night crossing the of x y z".split()

    def text(n):
        return " ".join(rng.choice(words) for _ in range(n))

    for _ in range(200):
        page = Page(url=f"http://example.org/{text(3).replace(' ', '-')}", title=text(4), text=text(60),
                    keywords=text(3), description=text(8), bold=[text(2) for _ in range(rng.randint(0, 4))],
                    headings=[(rng.randint(1, 6), text(3)) for _ in range(rng.randint(0, 5))],
                    anchors_same=[text(2) for _ in range(rng.randint(0, 20))],
                    anchors_other=[text(2) for _ in range(rng.randint(0, 5))])
        # weights whose sums are not exact (summed in field order) and weights whose sums are (one sort by term)
        for choices in ([0, 0.1, 0.3, 0.7, 1.3, 2.9, 1 / 3], [0, 0.5, 1, 2, 3, 6, 0.25, 1.75, 4095.5]):
            weights = resolve_weights({f: rng.choice(choices) for f in FIELDS})
            new, old = term_weights(page, norm, weights), former_term_weights(page, norm, weights)
            assert np.array_equal(new.hashes, old.hashes) and np.array_equal(new.weights, old.weights)
    assert _exact_sums([0.5, 2.0, 3.0, 6.0, 1 / 1024], 1000) and not _exact_sums([0.1], 10)
    assert not _exact_sums([1 / 3], 10) and not _exact_sums([2.0 ** 16], 10) and not _exact_sums([1.0], 1 << 26)


def former_normalise_text(text: str) -> str:
    """normalise_text's definition: NFKC, case-folded, runs of non-word characters one space."""
    import re
    import unicodedata

    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


#: characters that decide the normalised words' edges: ASCII, separators beyond ASCII, letters and digits
#: beyond ASCII, characters NFKC or case folding change (ligatures, numerals, the long s, sharp s, a dotted
#: capital, a combining accent, superscripts, a line separator, full-width letters)
EDGES = list("abcXYZ019 \t\r\n\x0b\x0c\x1c\x1f.,'-_é©\xa0—“”’…€") + list("ﬁⅫ²ſßİ\u0301\u2028Ａｂ日ŉ")


def test_normalise_text_equals_its_definition_on_random_texts():
    import random

    from dedup.keys import content_hash, normalise_text, normalise_texts

    rng = random.Random(29)
    texts = TEXTS + [page.text for page in _sample_pages()]
    texts += ["".join(rng.choice(EDGES) for _ in range(rng.randint(0, 30))) for _ in range(20_000)]
    separators = [c for c in EDGES if c.isascii() or not c.isalnum()]  # the byte-table path's texts
    texts += ["".join(rng.choice(separators) for _ in range(rng.randint(0, 30))) for _ in range(5_000)]
    assert [t for t in texts if normalise_text(t) != former_normalise_text(t)] == []
    assert [t for t in texts if normalise_texts(t.split("\n")) != list(map(former_normalise_text, t.split("\n")))] == []
    hashes = [xxhash.xxh3_128_hexdigest(n.encode("utf-8")) if n else "" for n in map(former_normalise_text, texts)]
    assert [t for t, h in zip(texts, hashes) if content_hash(t) != h] == []


def test_normalise_texts_equals_normalise_text_one_by_one():
    import random

    from dedup.keys import normalise_text, normalise_texts

    rng = random.Random(11)
    alphabet = "abcXYZ019 \t\r\n.,'-_é©\xa0—ﬁ²\u2028"
    for _ in range(2000):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 6))]
        assert normalise_texts(texts) == [normalise_text(t) for t in texts]
    assert normalise_texts([]) == [] and normalise_texts([""]) == [""] and normalise_texts(["", ""]) == ["", ""]


@pytest.mark.parametrize("line", ["Copyright (C) 2007 Example Inc. All Rights Reserved.", "(c)2019 x",
                                  "This material may not be republished, rewritten", "\u00a9 2020 News",
                                  "A plain line of prose with nothing legal in it at all", "ALL RIGHTS RESERVED",
                                  "all right\u017f reserved", "(C) 1999", "may not be PUBLISHED", "published alone"])
def test_legal_prefilter_equals_the_regex(line):
    from dedup.extract import _LEGAL, _legal

    assert _legal(line) == (_LEGAL.search(line) is not None)


def test_sorted_common_equals_the_former():
    from dedup.bits import sorted_common

    def former(a, b):
        if a.size == 0 or b.size == 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        pos = b.searchsorted(a)
        pos[pos == b.size] = 0
        ia = np.flatnonzero(b[pos] == a)
        return ia, pos[ia]

    rng = np.random.default_rng(1)
    for _ in range(3000):
        a = np.unique(rng.integers(0, 300, rng.integers(0, 60))).astype(np.uint32)
        b = np.unique(rng.integers(0, 300, rng.integers(0, 60))).astype(np.uint32)
        (ia, ib), (fa, fb) = sorted_common(a, b), former(a, b)
        assert np.array_equal(ia, fa) and np.array_equal(ib, fb) and ia.dtype == fa.dtype and ib.dtype == fb.dtype


def former_body_terms(normalizer: Normalizer, page: Page) -> list[str]:
    """Featurizer.terms's body before ``Normalizer.term_list``: a dict of the distinct tokens first."""
    tokens = tokenize("\n".join(page.sentences))
    mapped = normalizer.term_map(list(dict.fromkeys(tokens)))
    return list(filter(None, map(mapped.__getitem__, tokens)))


def test_term_list_equals_the_former_term_map_lookups():
    import random

    rng = random.Random(3)
    words = "The bridge's harbour ferries running closed 42 x_y café naïve 日本語 of and geese mice".split()
    for _ in range(300):
        tokens = [t for w in rng.choices(words, k=rng.randint(0, 40)) for t in tokenize(w)]
        cold, warm = Normalizer(), Normalizer()  # term_list on an empty cache (misses, repeats) and a filled one
        expected = [Normalizer().term(t) for t in tokens]
        mapped = warm.term_map(list(dict.fromkeys(tokens)))
        assert cold.term_list(tokens) == expected == [mapped[t] for t in tokens] == warm.term_list(tokens)


def test_featurizer_terms_equal_the_former_on_the_sample_pages():
    fz, former = Featurizer(), Featurizer()
    for page in _sample_pages():
        terms = fz.terms(page)
        assert terms.body == former_body_terms(former.normalizer, page)
        old = former_term_weights(page, former.normalizer, former.weights, body_terms=terms.body)
        assert np.array_equal(terms.tdw.hashes, old.hashes) and np.array_equal(terms.tdw.weights, old.weights)


def former_shingle_hashes(term_hashes: np.ndarray, n: int = 5) -> np.ndarray:
    from dedup.simhash import _GOLD, _M1, _M2

    def _mix(x: np.ndarray) -> np.ndarray:  # the former, allocating splitmix64 finaliser
        x = x ^ (x >> np.uint64(30))
        x = x * _M1
        x = x ^ (x >> np.uint64(27))
        x = x * _M2
        return x ^ (x >> np.uint64(31))

    h = np.asarray(term_hashes, dtype=np.uint64)
    if h.size == 0:
        return h
    m = max(1, h.size - n + 1)
    acc = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(min(n, h.size)):
            acc = _mix(acc * _GOLD + h[j: j + m])
    return acc


def test_shingle_hashes_equal_the_former_on_random_hashes():
    from dedup.simhash import shingle_hashes

    rng = np.random.default_rng(17)
    for _ in range(500):
        h = rng.integers(0, 2**64, size=int(rng.integers(0, 40)), dtype=np.uint64)
        if rng.random() < 0.3:
            h = rng.choice(h[:3], size=h.size) if h.size else h  # repeated terms
        for n in (1, 2, 3, 5, 8):
            new = shingle_hashes(h, n)
            assert new.dtype == np.uint64 and np.array_equal(new, former_shingle_hashes(h, n))


def former_gram_counts(text: str) -> tuple[np.ndarray, np.ndarray]:
    from dedup.mrc import _gram_id

    folded = " ".join(text.lower().split())
    cp = np.frombuffer(folded.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if cp.size < 3:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)
    ids = (cp[:-2] << np.uint64(42)) | (cp[1:-1] << np.uint64(21)) | cp[2:]
    assert all(int(ids[i]) == _gram_id(folded[i: i + 3]) for i in range(min(5, ids.size)))
    uniq, counts = np.unique(ids, return_counts=True)
    return uniq, counts.astype(np.float64)


def former_signature(ref, text: str) -> np.ndarray:
    ids, counts = former_gram_counts(text)
    if ids.size == 0:
        return np.zeros(ref.partitions, dtype=np.float32)
    pos = np.searchsorted(ids, ref._unique)
    pos[pos == ids.size] = 0
    doc_at_ref = np.where(ids[pos] == ref._unique, counts[pos], 0.0)
    norm = float(np.sqrt((counts * counts).sum()))
    with np.errstate(invalid="ignore", divide="ignore"):
        matrix = np.zeros((ref.partitions, ref._unique.size))  # the former dense reference matrix
        matrix[ref._rows, ref._cols] = ref._values
        sig = (matrix @ doc_at_ref) / (ref._part_norm * norm)
    return np.nan_to_num(sig).astype(np.float32)


def test_mrc_signature_equals_the_former_on_pages_and_random_texts():
    import random

    from dedup.mrc import ReferenceText, default_reference, gram_counts

    rng = random.Random(23)
    ref = default_reference()
    alphabet = "the quick brown fox jumps over lazy dog THE é日本\t\n  .,'"
    texts = TEXTS + [page.text for page in _sample_pages()]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400))) for _ in range(400)]
    tiny = ReferenceText(["the", "he ", "fox", "ox ", "zzz"], 3)  # a partition the pages never hit
    grams = sorted({t[i: i + 3] for t in texts[:60] for i in range(len(t) - 2) if "\n" not in t[i: i + 3]})
    refs = [ref, tiny]
    for _ in range(6):  # random reference texts: grams repeated within and across partitions
        chosen = [rng.choice(grams) for _ in range(rng.randint(20, 300))]
        refs.append(ReferenceText(chosen, rng.randint(1, len(chosen))))
    for text in texts:
        ids, counts = gram_counts(text)
        old_ids, old_counts = former_gram_counts(text)
        assert ids.dtype == old_ids.dtype and np.array_equal(ids, old_ids) and np.array_equal(counts, old_counts)
        for r in refs:
            new = r.signature(text).vector
            assert new.dtype == np.float32 and np.array_equal(new, former_signature(r, text))


def test_run_starts_give_np_unique_and_its_counts():
    from dedup.bits import run_starts

    rng = np.random.default_rng(29)
    for _ in range(500):
        a = np.sort(rng.integers(0, int(rng.integers(1, 50)), size=int(rng.integers(1, 60))).astype(np.uint64))
        starts = run_starts(a)
        uniq, counts = np.unique(a, return_counts=True)
        assert np.array_equal(a[starts], uniq) and np.array_equal(np.diff(starts, append=a.size), counts)


def test_content_hash_equals_the_former_on_random_texts():
    import random

    import xxhash

    from dedup.keys import content_hash, normalise_text

    def former(text):
        norm = normalise_text(text)
        return xxhash.xxh3_128_hexdigest(norm.encode("utf-8")) if norm else ""

    rng = random.Random(31)
    alphabet = "abcXYZ019 \t\r\n\x0b\x0c\x1c\x1f.,'-_é©"
    texts = TEXTS + [page.text for page in _sample_pages()]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    for text in texts:
        assert content_hash(text) == former(text)


def former_navigation_share(text: str, anchors) -> float:
    from dedup.keys import normalise_texts

    labels = set(normalise_texts(list(anchors)))
    labels.discard("")
    words = {w for label in labels for w in label.split()}
    total = nav = 0
    for norm in normalise_texts(text.split("\n")):
        if not norm:
            continue
        total += len(norm)
        split = norm.split()
        if norm in labels or (len(split) <= 12 and all(w in words for w in split)):
            nav += len(norm)
    return nav / total if total else 0.0


def test_navigation_share_equals_the_former_on_pages_and_random_menus():
    """Label words looked up in one padded string, only for short lines that are no label: the same shares."""
    import random

    from dedup.extractcheck import navigation_share

    rng = random.Random(16)
    vocab = ["home", "news", "sport", "World", "a", "ab", "b", "the", "café", "x-y", "1", "12", "", " ", "—"]
    cases = [(page.text, page.anchors_same + page.anchors_other) for page in _sample_pages()]
    for _ in range(3000):
        anchors = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 6))]
        lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 15))) for _ in range(rng.randint(0, 5))]
        cases.append(("\n".join(lines), anchors))
    assert [c for c in cases if navigation_share(*c) != former_navigation_share(*c)] == []


def test_list_share_equals_its_line_walk():
    """A text with no line that begins with "- " is told at once (0.0): the same share as walking its lines."""
    import random

    from dedup.extractcheck import list_share

    def walked(text):  # the share's definition: the characters of "- " lines over all lines' characters
        lines = text.split("\n")
        total = sum(map(len, lines))
        return sum(len(item) for item in lines if item[:2] == "- ") / total if total else 0.0

    rng = random.Random(3)
    parts = ["- ", "-", " - ", "a", "word ", "\n", "\n- ", "x-y", "—", "- item\n"]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(0, 12))) for _ in range(5000)]
    texts += [page.text for page in _sample_pages()] + ["", "- ", "-", "\n- a", "a\n-b"]
    assert [t for t in texts if list_share(t) != walked(t)] == []
    assert any(walked(t) for t in texts) and any(not walked(t) and t for t in texts)

def test_is_navigation_is_the_share_against_nav_share():
    """is_navigation normalises only the anchors that could be a long line: the same answer as the whole share,
    on the sample pages and on random texts whose long lines (13 words and more) are often labels themselves,
    spelt otherwise (capitals, punctuation, ligatures, a full-width letter) or shorter or longer than them."""
    import random

    from dedup.extractcheck import NAV_SHARE, is_navigation, navigation_share

    rng = random.Random(23)
    vocab = ["home", "news", "sport", "World", "a", "ab", "the", "café", "x-y", "1", "ﬁle", "Ｆile", "—", "B.C."]
    cases = [(page.text, page.anchors_same + page.anchors_other) for page in _sample_pages()]
    for _ in range(4000):
        lines = [" ".join(rng.choice(vocab) for _ in range(rng.choice((1, 3, 11, 12, 13, 14, 20))))
                 for _ in range(rng.randint(0, 6))]
        anchors = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 6))]
        anchors += [rng.choice((str.upper, str.lower, lambda x: x + "!", lambda x: x.replace(" ", ", ")))(line)
                    for line in lines if rng.random() < 0.4]
        cases.append(("\n".join(lines), anchors))
    answers = [is_navigation(*c) for c in cases]
    assert [c for c, a in zip(cases, answers) if a != (navigation_share(*c) >= NAV_SHARE)] == []
    assert 0 < sum(answers) < len(answers)
