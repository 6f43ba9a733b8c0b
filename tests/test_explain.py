"""Seed 001's sentence-based copy detection: refined sentences, least-frequent 4-grams,
fuzzy-set EQ, resemblance and odds ratio, semantic hierarchies, dotplots, ``dedup explain``."""
from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import lxml.etree
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `pytest` without an editable install
    sys.path.insert(0, str(ROOT))

from dedup.cli import main  # noqa: E402
from dedup.explain import Explanation, dotplot_png, dotplot_svg, explain  # noqa: E402
from dedup.explain.fuzzy import (PairCorrelation, Thresholds, eq, odds_ratio, resemblance,  # noqa: E402
                         sim, similarity_matrices)
from dedup.explain.hierarchy import build_hierarchy, match_hierarchies, unwrap  # noqa: E402
from dedup.page import Page, parse_page  # noqa: E402
from dedup.explain.sentences import (REFINE_VERSION, SentenceTables, cached_extension, char_grams,  # noqa: E402
                             default_tables, least_frequent_grams, refine)
from dedup.text import split_sentences  # noqa: E402

SITE = ROOT / "crawler" / "sample_site" / "pages"
SVG = "{http://www.w3.org/2000/svg}"


def site_page(rel: str) -> Page:
    return parse_page((SITE / rel).read_bytes(), f"http://site.test/{rel}")


def record(url: str, text: str, title: str = "") -> Page:
    return Page(url=url, title=title, text=text, sentences=split_sentences(text))


# -- refined sentences and 4-grams (section 3.1, 3.2.1) ------------------------------------------------
def test_refine_removes_stop_words_numbers_and_stems_like_the_seed():
    s = ("Iraq's top Shi'ite Muslim cleric, Grand Ayatollah Ali al-Sistani, travelled to, Britain where he "
         "is expected to receive treatment for a heart condition, a spokesman said in 2004.")
    words = refine(s)
    assert words[:4] == ["iraq", "top", "shiit", "muslim"]
    assert "travel" in words and "expect" in words and "said" in words
    assert not {"to", "where", "he", "is", "for", "a", "2004", "s"} & set(words)
    assert refine("The, of and: 42!") == []


def test_char_grams_are_the_seeds_concatenated_4_grams():
    # section 3.2.1: the 4-grams of "novel creations"
    assert char_grams(["novel", "creations"]) == ["nove", "ovel", "velc", "elcr", "lcre", "crea", "reat",
                                                  "eati", "atio", "tion", "ions"]
    # Table 3.1: words are written together, so grams cross word boundaries
    assert char_grams(["iraq", "top"])[:4] == ["iraq", "raqt", "aqto", "qtop"]
    assert char_grams(["ab"]) == ["ab"] and char_grams([]) == []


def test_three_least_frequent_grams_in_sentence_order_ties_to_the_earlier():
    freq = {"abcd": 5, "bcde": 1, "cdef": 9, "defg": 1, "efgh": 0, "fghi": 1}
    lookup = lambda grams: np.array([freq.get(g, 0) for g in grams])  # noqa: E731
    assert least_frequent_grams(["abcdefghi"], lookup) == ("bcde", "defg", "efgh")
    assert least_frequent_grams(["abcde"], lookup) == ("abcd", "bcde")  # fewer than three: all of them
    # a repeated gram counts once
    assert least_frequent_grams(["abcdabcd"], lambda g: np.zeros(len(g))) == ("abcd", "bcda", "cdab")


# -- the fuzzy-set model (section 3.2.2) --------------------------------------------------------------
TABLE_3_3 = {("international", "global"): .800, ("international", "aid"): .496,
             ("international", "tsunami"): .579, ("international", "rise"): .177,
             ("community", "global"): .430, ("community", "aid"): .771, ("community", "tsunami"): .117,
             ("community", "rise"): .334, ("increase", "global"): .123, ("increase", "aid"): .643,
             ("increase", "tsunami"): .661, ("increase", "rise"): .900, ("disaster", "global"): .611,
             ("disaster", "aid"): .414, ("disaster", "tsunami"): .900, ("disaster", "rise"): .394}
TABLE_3_4 = {("reach", "please"): .059, ("reach", "hesitate"): .038, ("reach", "contact"): .683,
             ("phone", "please"): .058, ("phone", "hesitate"): .036, ("phone", "contact"): .593}


def test_seed_example_1_table_3_3_is_reproduced():
    s1, s2 = ["global", "aid", "tsunami", "rise"], ["international", "community", "increase", "disaster"]
    ab, ba = sim(s1, s2, PairCorrelation(TABLE_3_3))
    assert (round(ab, 3), round(ba, 3)) == (0.973, 0.966)  # the seed's Sim(S1,S2) and Sim(S2,S1)
    assert bool(eq(ab, ba))


def test_seed_example_2_table_3_4_is_reproduced():
    ab, ba = sim(["please", "hesitate", "contact"], ["reach", "phone"], PairCorrelation(TABLE_3_4))
    assert (round(ab, 2), round(ba, 2)) == (0.35, 0.67)
    assert not bool(eq(ab, ba))


def test_eq_needs_both_permission_and_variation():
    t = Thresholds()
    assert (t.permission, t.variation) == (0.825, 0.15)
    assert bool(eq(0.9, 0.83)) and bool(eq(0.825, 0.975))
    assert not bool(eq(1.0, 0.83))      # the seed's subset case: min passes, difference 0.17 > 0.15
    assert not bool(eq(0.82, 0.9))
    assert bool(eq(1.0, 0.83, Thresholds(0.8, 0.2)))
    with pytest.raises(ValueError, match="permission"):
        Thresholds(permission=0.0)


def _tiny_tables(**kw) -> SentenceTables:
    units = [["car", "automobil", "road"], ["car", "automobil"], ["car", "wheel"], ["road", "wheel"],
             ["car", "automobil", "road"], ["boat", "water"]]  # the fifth repeats the first: counted once
    return SentenceTables.from_units(units, provenance={"corpus": "test"}, **kw)


def test_correlation_is_equation_3_1_on_document_counts():
    t = _tiny_tables()
    assert t.units == 5
    c = t.correlation(["car", "road", "boat", "unseen"], ["automobil", "wheel", "car", "unseen"])
    # car: 3 units, automobil: 2, both: 2 -> 2 / (3 + 2 - 2)
    assert c[0, 0] == pytest.approx(2 / 3)
    assert c[0, 1] == 0.0                 # car & wheel together once: below min_pair = 2
    assert c[0, 2] == 1.0 and c[3, 3] == 1.0  # equal words, seen or not
    assert c[2, 0] == 0.0 and c[3, 0] == 0.0
    assert _tiny_tables(min_pair=1).correlation(["car"], ["wheel"])[0, 0] == pytest.approx(1 / (3 + 2 - 1))


def test_sparse_correlation_triplets_equal_the_dense_matrix():
    t = default_tables().extended(["The Tamsel ferry crosses the river to East Tamsel every hour."])
    rng = np.random.default_rng(5)
    pool = t.words[:: max(len(t.words) // 4000, 1)] + ["tamsel", "ferri", "nosuchword"]
    for _ in range(3):
        wa = list(dict.fromkeys(rng.choice(pool, 300).tolist() + ["car", "automobil", "tamsel"]))
        wb = list(dict.fromkeys(rng.choice(pool, 200).tolist() + ["automobil", "motorcar", "ferri", "nosuchword"]))
        dense = t.correlation(wa, wb)
        rows, cols, c = t.correlation_triplets(wa, wb)
        sparse = np.zeros_like(dense)
        sparse[rows, cols] = c
        assert len(set(zip(rows.tolist(), cols.tolist()))) == rows.size   # no entry twice
        assert np.allclose(dense, sparse) and np.count_nonzero(dense) == np.count_nonzero(c)
        assert dense[wa.index("car"), wb.index("automobil")] > 0


def test_similarity_matrices_match_the_formulas_pair_by_pair():
    t = default_tables()
    a = [refine(s) for s in ("The ferry will stop running on Sundays from November.",
                             "Heavy rain flooded dozens of homes in the lower town overnight.", "2024.")]
    b = [refine(s) for s in ("The ferry runs every day in summer.", "Dozens of houses flooded in the town.")]
    ab, ba = similarity_matrices(a, b, t)
    for i, sa in enumerate(a):
        for j, sb in enumerate(b):
            if not sa or not sb:
                assert ab[i, j] == ba[i, j] == 0.0
                continue
            c = t.correlation(list(dict.fromkeys(sa)), list(dict.fromkeys(sb)))
            mu_a = 1 - np.prod(1 - c, axis=1)      # Eq. 3.2 for each word of sa against sb
            mu_b = 1 - np.prod(1 - c, axis=0)
            assert ab[i, j] == pytest.approx(mu_a.mean(), abs=1e-9)   # Eq. 3.3
            assert ba[i, j] == pytest.approx(mu_b.mean(), abs=1e-9)


def test_resemblance_counts_a_sentence_once_and_odds_ratio_follows_the_seed():
    equal = np.array([[1, 1, 0], [0, 0, 0]], dtype=bool)   # a0 equals b0 and b1
    assert resemblance(equal) == (0.5, 2 / 3)
    assert odds_ratio(0.9, 0.9) == pytest.approx(4.263, abs=1e-3)     # section 4.2: "4.26"
    assert odds_ratio(0.1, 0.9) == pytest.approx(0.0989, abs=1e-4)   # "0.098"
    assert odds_ratio(0.91, 0.98) == pytest.approx(8.242, abs=1e-3)  # Example 4, Doc0/Doc1
    assert odds_ratio(0.93, 0.97) == pytest.approx(9.21, abs=1e-2)   # Example 4, Doc3/Doc4
    assert odds_ratio(1.0, 1.0) == 100.0 and odds_ratio(0.999, 0.999) == 100.0
    assert odds_ratio(0.0, 1.0) == 0.0
    with pytest.raises(ValueError, match="resemblance"):
        odds_ratio(1.2, 0.5)


# -- tables: shipped, extended, cached ---------------------------------------------------------------
def test_shipped_tables_count_wordnet_synsets():
    t = default_tables()
    d = t.describe()
    assert "WordNet" in d["provenance"]["corpus"] and t.units > 100_000
    assert d["pairs"] > 100_000 and d["grams"] > 50_000 and t.min_pair == 2
    assert t.correlation(["harbor"], ["harbour"])[0, 0] > 0.05  # co-lemmas of a synset co-occur


def test_extension_adds_distinct_sentences_and_leaves_the_base_alone():
    base = _tiny_tables()
    texts = ["The Tamsel ferry crosses the river. The Tamsel ferry crosses the river.",
             "Tamsel ferry tickets are cheap.\nThe ferry crosses the Tamsel river at night."]
    ext = base.extended(texts, label="test")
    assert base.units == 5 and "tamsel" not in base.index
    assert ext.units == 5 + 3                      # the repeated sentence counts once
    assert ext.df[ext.index["tamsel"]] == 3 and ext.df[ext.index["car"]] == base.df[base.index["car"]]
    c = ext.correlation(["tamsel"], ["ferri", "ticket"])
    assert c[0, 0] == pytest.approx(1.0) and c[0, 1] == 0.0   # 3/(3+3-3); tickets only once
    assert ext.provenance["extended"] == [{"label": "test", "texts": 2, "units": 3}]
    assert ext.id != base.id
    assert ext.grams.get("tams", 0) == 3


def test_tables_round_trip_and_refuse_another_refine_version(tmp_path):
    t = _tiny_tables().extended(["Boats cross water."])
    path = tmp_path / "t.npz"
    t.save(path)
    back = SentenceTables.load(path)
    assert back.id == t.id and back.words == t.words and back.grams == t.grams
    assert np.array_equal(back.pair_keys, t.pair_keys) and np.array_equal(back.df, t.df)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["refine"] = "refine-0"
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(ValueError, match=REFINE_VERSION):
        SentenceTables.load(tmp_path / "old.npz")


def test_cached_extension_reads_the_texts_once(tmp_path):
    calls = []

    def texts():
        calls.append(1)
        return ["Ferries cross the Tamsel twice a day."]

    first = cached_extension(_tiny_tables(), "uri\0001", texts, tmp_path)
    second = cached_extension(_tiny_tables(), "uri\0001", texts, tmp_path)
    assert len(calls) == 1 and first.id == second.id and "tamsel" in second.index
    cached_extension(_tiny_tables(), "uri\0002", texts, tmp_path)  # another key: counted again
    assert len(calls) == 2 and len(list(tmp_path.glob("sentence-tables-*.npz"))) == 2


# -- semantic hierarchy (section 4.1, 4.3) -----------------------------------------------------------
def test_hierarchy_nests_headings_and_holds_every_sentence_once():
    page = site_page("articles/ferry-timetable.html")
    tree = build_hierarchy(page)
    assert tree.sentences == page.sentences
    kinds = [(n.kind, n.level, n.parent) for n in tree.nodes]
    assert kinds[0] == ("document", 0, None)
    assert kinds[1] == ("heading", 1, 0)                 # the headline (h1)
    h2 = next(n for n in tree.nodes if n.label == "Commuters on the east bank")
    assert (h2.kind, h2.level, h2.parent) == ("heading", 2, 1)
    assert tree.nodes[-1].parent == h2.id                # blocks after an h2 belong to it
    flat = sorted(s for n in tree.nodes for s in n.sentences)
    assert flat == list(range(len(page.sentences)))


def test_hierarchy_of_a_text_record_infers_headings():
    text = ("Ferry to cut winter crossings\nThe foot ferry will run fewer crossings. Critics object.\n"
            "Commuters on the east bank\nThe village has no shop.\n- A list item ends here.")
    tree = build_hierarchy(record("u", text))
    assert [n.kind for n in tree.nodes] == ["document", "heading", "block", "heading", "block", "item"]
    assert tree.nodes[3].parent == 1 and tree.nodes[4].parent == 3
    assert build_hierarchy(Page(url="u", sentences=["One.", "Two."]), min_words=0).nodes[1].sentences == [0, 1]
    # "Critics object." is a sentence of two words: boilerplate-sized, left out by default
    assert "Critics object." not in tree.sentences and "The village has no shop." in tree.sentences
    assert "Critics object." in build_hierarchy(record("u", text), min_words=0).sentences


def test_hierarchy_of_a_cjk_record_infers_headings_from_full_width_stops():
    # a Japanese record (title/text, no heading marks): a paragraph ends in 。, so it is no heading, however
    # few blanks it has; a short line without a stop is; a comma-ended line (、) continues on the next
    text = ("路面電車の新しい停留所\n市の交通局によると、工事は三月に始まり、およそ五か月続く見込みです。"
            "商店街の店主たちは客が減ることを心配しています。\n住民の声\n反対する住民グループは、\n"
            "計画の見直しを求める署名を集めました。\n市長は記者会見で市民の声を丁寧に聞きながら進めたいと述べました。")
    tree = build_hierarchy(record("u", text))
    assert [n.kind for n in tree.nodes] == ["document", "heading", "block", "heading", "block", "block"]
    assert tree.nodes[4].parent == 3 and len(tree.nodes[2].sentences) == 2
    assert any(s.startswith("反対する住民グループは、計画") for s in tree.sentences)  # the wrap joined
    assert len(tree.nodes[2].label) <= 30 and tree.nodes[2].label.endswith("\u2026")  # a label, not the paragraph


def test_hierarchy_joins_hard_wrapped_lines_and_leaves_out_boilerplate():
    wrapped = ("Surgery To Stunt Girl's Growth Challenges Ethics\n(AP)\n"
               "CHICAGO In a case fraught with ethical questions, the parents of\n"
               "a severely disabled child have stunted her growth.\nThe\nbedridden girl had surgery at a\n"
               "Seattle hospital, said Dr. Joel Frader of Chicago's\nChildren's Memorial Hospital.\n"
               "(Story continues below)\nAdvertisement\nSome ethicists question the parents' claim.")
    page = Page(url="u", text=wrapped, headings=[(1, "Surgery To Stunt Girl's Growth Challenges Ethics")])
    tree = build_hierarchy(page)
    assert tree.sentences == [
        "Surgery To Stunt Girl's Growth Challenges Ethics",
        "CHICAGO In a case fraught with ethical questions, the parents of a severely disabled child have "
        "stunted her growth.",
        "The bedridden girl had surgery at a Seattle hospital, said Dr. Joel Frader of Chicago's Children's "
        "Memorial Hospital.",
        "Some ethicists question the parents' claim."]
    assert [n.kind for n in tree.nodes] == ["document", "heading", "block", "block", "block"]
    # a heading is never joined, and a line ending a sentence is not joined to the next
    assert unwrap(["A heading", "continues in lower case"], ["A heading"]) == ["A heading", "continues in lower case"]
    assert unwrap(["Ends here.", "next one"]) == ["Ends here.", "next one"]
    assert unwrap(["It was wrapped before the", "Name"]) == ["It was wrapped before the Name"]
    assert unwrap(["Title here", "One."]) == ["Title here", "One."]  # short: may be a heading


def test_match_hierarchies_gives_node_shares_sections_and_edges():
    a = build_hierarchy(record("a", "Title here\nOne. Two. Three.\nSub part\nFour."), min_words=0)
    b = build_hierarchy(record("b", "Other title\nFour. One."), min_words=0)
    # a: 0 "Title here" (heading), 1-3 block, 4 "Sub part" (heading), 5 block; b: 0 heading, 1-2 block
    edges = match_hierarchies(a, b, [(1, 2, 1.0), (5, 1, 1.0), (5, 2, 0.9)])
    block = a.nodes[2]
    assert block.sentences == [1, 2, 3] and block.matched == 1 and block.share == pytest.approx(1 / 3)
    assert [n.kind for n in a.nodes] == ["document", "heading", "block", "heading", "block"]
    assert a.nodes[3].section_sentences == 2 and a.nodes[3].section_matched == 1
    assert a.nodes[0].section_sentences == 6 and a.nodes[0].section_matched == 2
    assert a.nodes[0].share is None and a.nodes[0].section_share == pytest.approx(1 / 3)
    assert edges == [[2, 2, 1], [4, 2, 2]]
    assert b.nodes[2].partners == {2: 1, 4: 2}


# -- explain -----------------------------------------------------------------------------------------
def test_explain_an_updated_article():
    a, b = site_page("articles/ferry-timetable.html"), site_page("articles/ferry-timetable-update.html")
    e = explain(a, b)
    assert isinstance(e, Explanation)
    assert e.sentences_a == a.sentences and e.sentences_b == b.sentences
    # the update drops one sentence, adds one and rewrites two; the other 20 are kept
    assert (len(e.sentences_a), len(e.sentences_b), e.matched_a, e.matched_b) == (22, 22, 20, 20)
    assert e.resemblance_ab == pytest.approx(20 / 22) and e.resemblance_ba == pytest.approx(20 / 22)
    p = (20 / 22) ** 2
    assert e.odds_ratio == pytest.approx(p / (1 - p))
    assert all(0.825 <= s <= 1.0 for _, _, s in e.matches)
    dropped = next(k for k, s in enumerate(a.sentences) if s.startswith("The ferry has operated"))
    assert dropped not in {i for i, _, _ in e.matches}
    assert e.nearest_a[dropped] is not None and min(e.nearest_a[dropped][1:]) < 0.825
    assert len(e.grams_a) == 22 and all(len(g) == 3 for g in e.grams_a)
    assert set(e.gram_matches) >= {(i, j) for i, j, s in e.matches if s == pytest.approx(1.0)}
    assert e.thresholds == {"permission": 0.825, "variation": 0.15}
    assert e.hierarchy["edges"] and e.hierarchy["a"]["nodes"][0]["section_matched"] == 20
    d = json.loads(json.dumps(e.to_dict()))
    assert d["matches"][0][:2] == [0, 0] and d["odds_ratio"] == round(e.odds_ratio, 4)
    assert d["tables"]["id"] == default_tables().id


def test_explain_identical_unrelated_and_empty_pages():
    a = site_page("articles/orchard-frost.html")
    same = explain(a, a)
    assert same.resemblance_ab == same.resemblance_ba == 1.0 and same.odds_ratio == 100.0
    other = explain(a, site_page("articles/river-cleanup.html"))
    assert other.matches == [] and other.odds_ratio == 0.0
    empty = explain(a, Page(url="empty"))
    assert empty.sentences_b == [] and empty.resemblance_ab == empty.resemblance_ba == 0.0
    assert empty.nearest_a[0] is None
    json.dumps(empty.to_dict())


def test_explain_syndicated_copy_with_extended_tables():
    a, b = site_page("articles/orchard-frost.html"), site_page("partner/orchard-frost.html")
    base = explain(a, b)
    texts = [site_page(p).text for p in ("articles/orchard-frost.html", "articles/ferry-timetable.html")]
    ext = explain(a, b, tables=default_tables().extended(texts))
    assert base.matched_b >= 0.9 * len(base.sentences_b)   # the partner copy is a trimmed copy
    assert ext.tables["provenance"]["extended"][0]["texts"] == 2
    assert ext.matched_a >= base.matched_a


# -- dotplots ----------------------------------------------------------------------------------------
def test_dotplot_svg_is_a_standalone_document_with_a_dot_per_match():
    e = explain(site_page("articles/ferry-timetable.html"), site_page("articles/ferry-timetable-update.html"))
    svg = dotplot_svg(e, size=300)
    root = lxml.etree.fromstring(svg.encode("utf-8"))
    assert root.tag == f"{SVG}svg" and root.get("width") == str(64 + 300 + 24)
    circles = root.findall(f"{SVG}circle")
    assert len(circles) == len(e.matches) + 1            # plus the legend's
    tip = circles[0].find(f"{SVG}title").text
    assert tip.startswith("A 1 / B 1") and e.sentences_a[0][:20] in tip
    assert len(root.findall(f"{SVG}rect")) >= len(e.gram_matches)
    # dots go down the diagonal: sentence i of A against sentence j of B
    xs = [float(c.get("cx")) for c in circles[:-1]]
    ys = [float(c.get("cy")) for c in circles[:-1]]
    assert xs == sorted(xs) and ys == sorted(ys)
    with pytest.raises(ValueError, match="size"):
        dotplot_svg(e, size=10)
    hostile = Explanation(url_a="<a&b>", url_b='"x"', title_a="</svg>", title_b="&", sentences_a=["<b>"],
                          sentences_b=["&amp;"], matches=[(0, 0, 1.0)], resemblance_ab=1, resemblance_ba=1,
                          odds_ratio=100, hierarchy={}, thresholds={"permission": 0.825, "variation": 0.15})
    lxml.etree.fromstring(dotplot_svg(hostile).encode("utf-8"))


def test_dotplot_png_is_a_valid_png():
    e = explain(site_page("articles/library-roof.html"), site_page("mirror/library-roof.html"))
    png = dotplot_png(e, size=100)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (116, 116)
    idat_len = struct.unpack(">I", png[33:37])[0]
    raw = zlib.decompress(png[41 : 41 + idat_len])
    assert len(raw) == height * (1 + 3 * width)
    assert b"\x1f\x5f\xbf" in raw                       # dots drawn


# -- the dedup explain command -----------------------------------------------------------------------
def _index(tmp_path: Path, docs: list[dict]) -> str:
    from index import open_search

    uri = f"local://{tmp_path / 'ix'}"
    search = open_search(uri)
    try:
        for d in docs:
            search.add({"fetched_at": 1.7e9, "dedup": {"status": "unique", "duplicate_of": None}, **d})
    finally:
        search.close()
    return uri


def test_cli_explain_two_html_files_as_json(tmp_path, capsys):
    a, b = SITE / "articles/ferry-timetable.html", SITE / "partner/ferry-timetable.html"
    svg = tmp_path / "plot.svg"
    code = main(["explain", str(a), str(b), "--json", "--index", f"local://{tmp_path / 'none'}",
                 "--dotplot", str(svg)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["url_a"].startswith("file://") and out["matched_b"] >= 17
    assert out["sources"]["tables"].startswith("shipped tables only (no index")
    assert lxml.etree.fromstring(svg.read_bytes()).tag == f"{SVG}svg"


def test_cli_explain_urls_from_the_index_and_the_dropped_log(tmp_path, capsys):
    original = site_page("articles/library-roof.html")
    mirror = site_page("mirror/library-roof.html")
    uri = _index(tmp_path, [{"url": original.url, "title": original.title, "text": original.text},
                            {"url": "http://site.test/other", "title": "Other", "text": "Nothing alike here."}])
    log = tmp_path / "dropped.jsonl"
    log.write_text(json.dumps({"url": mirror.url, "verdict": {"status": "near_duplicate",
                                                              "duplicate_of": original.url},
                               "item": {"url": mirror.url, "title": mirror.title, "text": mirror.text}}) + "\n",
                   encoding="utf-8")
    cache = tmp_path / "cache"
    # B omitted: the page the dropped one copies
    assert main(["explain", mirror.url, "--index", uri, "--log", str(log), "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "resemblance A\u2192B" in out and "odds ratio" in out and "dropped log" in out
    assert "shipped tables + 2 kept pages" in out and "A tree:" in out and "identical:" in out
    assert len(list(cache.glob("*.npz"))) == 1
    assert main(["explain", mirror.url, original.url, "--index", uri, "--log", str(log), "--json",
                 "--cache-dir", str(cache)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sources"]["b"] == f"index {uri}" and d["resemblance_ba"] > 0.9
    assert len(list(cache.glob("*.npz"))) == 1          # the cached counts were reused
    # the index default log beside a local index is used when --log is not given
    assert main(["explain", original.url, "http://site.test/other", "--index", uri, "--no-corpus"]) == 0
    assert "shipped tables only (--no-corpus)" in capsys.readouterr().out


def test_cli_explain_finds_the_log_as_the_other_commands_do(tmp_path, capsys, monkeypatch):
    """--log, else $DEDUP_DROPPED_LOG, else dropped.jsonl beside the index (one helper for all)."""
    original, mirror = site_page("articles/library-roof.html"), site_page("mirror/library-roof.html")
    uri = _index(tmp_path, [{"url": original.url, "title": original.title, "text": original.text}])
    log = tmp_path / "elsewhere" / "my-log.jsonl"
    log.parent.mkdir()
    log.write_text(json.dumps({"url": mirror.url, "verdict": {"status": "exact_duplicate",
                                                              "duplicate_of": original.url},
                               "item": {"url": mirror.url, "title": mirror.title, "text": mirror.text}}) + "\n",
                   encoding="utf-8")
    monkeypatch.delenv("DEDUP_INDEX", raising=False)
    monkeypatch.delenv("DEDUP_DROPPED_LOG", raising=False)
    assert main(["explain", mirror.url, "--index", uri, "--no-corpus"]) == 2  # not beside the index
    assert "not found" in capsys.readouterr().err
    monkeypatch.setenv("DEDUP_DROPPED_LOG", str(log))
    monkeypatch.setenv("DEDUP_INDEX", uri)
    assert main(["explain", mirror.url, "--no-corpus", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sources"]["a"] == f"dropped log {log}" and d["sources"]["b"] == f"index {uri}"
    monkeypatch.setenv("DEDUP_DROPPED_LOG", str(tmp_path / "missing.jsonl"))  # named, so missing is an error
    assert main(["explain", mirror.url, "--no-corpus"]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


def test_cli_explain_dotplot_format_follows_the_extension(tmp_path, capsys):
    a, b = SITE / "articles/ferry-timetable.html", SITE / "partner/ferry-timetable.html"
    common = [str(a), str(b), "--index", f"local://{tmp_path / 'none'}", "--no-corpus"]
    assert main(["explain", *common, "--dotplot", str(tmp_path / "p.PNG")]) == 0
    assert (tmp_path / "p.PNG").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["explain", *common, "--dotplot", str(tmp_path / "p.svg")]) == 0
    assert lxml.etree.fromstring((tmp_path / "p.svg").read_bytes()).tag == f"{SVG}svg"
    capsys.readouterr()
    for name in ("p.jpg", "plot"):
        assert main(["explain", *common, "--dotplot", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert "--dotplot" in err and ".svg, .png" in err and not (tmp_path / name).exists()


def test_cli_explain_unknown_page_is_a_clear_error(tmp_path, capsys):
    uri = _index(tmp_path, [{"url": "http://site.test/a", "title": "A", "text": "Some text."}])
    assert main(["explain", "http://site.test/a", "http://site.test/missing", "--index", uri]) == 2
    err = capsys.readouterr().err
    assert "http://site.test/missing" in err and "not found" in err
    assert main(["explain", "http://site.test/a", "--index", uri]) == 2
    assert "no duplicate_of" in capsys.readouterr().err


def test_dedup_modules_do_not_import_index_scrapy_or_elasticsearch():
    # the algorithms and the research tools load no storage, crawler or client; the command (dedup.cli)
    # may load index/ (its storage layer), but still neither Scrapy nor the Elasticsearch client
    code = ("import sys, dedup, dedup.explain, dedup.train, dedup.droplog, dedup.sources, dedup.workers\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('index', 'crawler', 'scrapy', 'elasticsearch'))\n"
            "assert not bad, bad\n"
            "import dedup.cli.commands.explain\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('crawler', 'scrapy', 'elasticsearch'))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- EQ on labelled sentence pairs (section 4.4) -----------------------------------------------------
def _benchmark():
    spec = importlib.util.spec_from_file_location("sentence_eq", ROOT / "benchmarks" / "sentence_eq.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sentence_pairs_file_is_labelled_and_sourced():
    rows = _benchmark().load_pairs()
    assert len(rows) >= 100
    assert len({r["id"] for r in rows}) == len(rows)
    labels = [r["label"] for r in rows]
    assert labels.count(1) >= 50 and labels.count(0) >= 50
    assert sum(r["source"].startswith("seed001") for r in rows) >= 20      # Tables 3.3-3.5, 4.3-4.6, Ex. 5
    assert sum(r["kind"] == "hard-negative" for r in rows) >= 20


def test_sentence_eq_precision_recall_floor():
    bench = _benchmark()
    report = bench.evaluate(bench.score_pairs(bench.load_pairs()))
    fuzzy = report["methods"]["fuzzy"]["all"]
    # measured with the shipped tables: P 1.000, R 0.563, F 0.721 (README section); floors just below
    assert fuzzy["precision"] >= 0.95 and fuzzy["recall"] >= 0.53 and fuzzy["f"] >= 0.69
    grams = report["methods"]["4gram"]["all"]
    assert grams["recall"] <= fuzzy["recall"]   # the seed's finding: 4-grams miss edited sentences


# -- real pages: two copies of one Gold Set story (evaluation-only data, not shipped) -------------------
GOLDSET = Path(os.environ.get("DEDUP_GOLDSET") or ROOT.parent / "shared" / "data" / "goldset-dev")


@pytest.mark.goldset
@pytest.mark.skipif(not GOLDSET.is_dir(), reason=f"Gold Set not found at {GOLDSET} (evaluation-only data)")
def test_explain_two_gold_set_copies_of_one_story_score_as_copies():
    def gold(rel: str) -> Page:
        path = GOLDSET / rel
        # trafilatura keeps s42's hard wraps, which this test is about (resiliparse, the default,
        # joins a paragraph's lines itself)
        return parse_page(path.read_bytes(), path.as_uri(), extractor="trafilatura")

    # s42 is hard-wrapped (one sentence over four lines) and carries a dateline and "(AP)";
    # before unwrap and the boilerplate rule it scored 2/93 and 2/37
    copy, original = gold("Surgery/s42.htm"), gold("Surgery/original.htm")
    e = explain(copy, original)
    assert e.resemblance_ab >= 0.7 and e.resemblance_ba >= 0.7, (e.matched_a, len(e.sentences_a))
    assert len(e.sentences_a) <= 40 < len(copy.sentences)  # 93 lines were sentences before
    assert not any(s in ("(AP)", "(Story continues below)") for s in e.sentences_a + e.sentences_b)
    other = explain(copy, gold("Vaccine/original.htm"))
    assert max(other.resemblance_ab, other.resemblance_ba) < 0.1
