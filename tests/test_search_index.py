"""The search index of kept pages (SQLite FTS5; Elasticsearch) and the ``dedup search`` command."""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `pytest` without an editable install
    sys.path.insert(0, str(ROOT))

from dedup.cli import main  # noqa: E402
from index import SearchIndex, open_search  # noqa: E402
from index.search import LocalSearch, fts_query, require_fts5  # noqa: E402

DOCS = [
    {"url": "https://town.test/ferry", "title": "Ferry timetable for the winter",
     "text": "The island ferries run twice a day from the harbour until March. Passengers should book early.",
     "fetched_at": 1.7e9, "dedup": {"status": "unique", "duplicate_of": None, "rule": "no_candidate"}},
    {"url": "https://mirror.test/ferry", "title": "Winter ferry times",
     "text": "The island ferries run twice a day from the harbour until March. Book early.",
     "fetched_at": 1.7e9 + 5, "dedup": {"status": "near_duplicate", "duplicate_of": "https://town.test/ferry",
                                         "rule": "containment>=t2"}},
    {"url": "https://town.test/library", "title": "Library roof repaired",
     "text": "Volunteers helped the council repair the library roof before the storms; the harbour "
             "committee paid for slate.",
     "fetched_at": 1.7e9 + 9, "dedup": {"status": "unique", "duplicate_of": None}, "depth": 2},
    {"url": "https://town.test/orchard", "title": "Orchard frost",
     "text": "A late frost hit the orchard; apple growers lit fires all night. Déjà vu for the café owners.",
     "fetched_at": 1.7e9 + 12, "dedup": {"status": "unique", "duplicate_of": None}},
]

HOSTILE = ['"', '"unbalanced', "-", "--", "-ferry", "a:b", "title:ferry", "text:", "*", "**", "ferr*",
           "*ferry", "(", "((ferry", "ferry)", "AND", "OR", "NOT", "ferry AND", "OR ferry", "ferry OR OR",
           "NOT ferry", "NEAR(ferry harbour, 2)", "ferry NEAR/2 harbour", "{title text}: ferry", "^ferry",
           "ferry'", "'", "\\", "%", "_", "\x00", "ferry;DROP TABLE docs", "+ferry", "ferry~", "[]",
           "日本語", "🙂", " ", "", "a" * 5000, "ferry " * 100, '"ferry" "harbour"', "col:ferry*"]


@pytest.fixture(params=["local", "es_emulated"])
def search(request, tmp_path):
    """The search index contract runs on LocalSearch and on ElasticSearch (the noida-db emulator of
    the Elasticsearch API unless DEDUP_TEST_ES_URL names a real cluster; tests/es_server.py)."""
    if request.param == "local":
        s = LocalSearch(tmp_path / "ix")
    else:
        s = open_search(request.getfixturevalue("es_index_uri"), bulk_size=2)
    yield s
    s.close()


@pytest.fixture
def filled(search):
    for doc in DOCS:
        search.add(doc)
    return search


def urls(hits) -> list[str]:
    return [h["url"] for h in hits]


def test_fts5_available():
    require_fts5()


def test_is_a_search_index(search):
    assert isinstance(search, SearchIndex)
    assert search.count() == 0
    assert search.search("anything") == []
    assert list(search.iter_docs()) == []


def test_finds_by_title_and_text(filled):
    assert set(urls(filled.search("ferry"))) == {"https://town.test/ferry", "https://mirror.test/ferry"}
    assert urls(filled.search("slate")) == ["https://town.test/library"]  # text only
    assert urls(filled.search("roof repaired")) == ["https://town.test/library"]
    assert urls(filled.search("Orchard")) == ["https://town.test/orchard"]
    assert urls(filled.search("ferries")) == urls(filled.search("ferry"))  # stemming
    assert urls(filled.search("deja vu cafe")) == ["https://town.test/orchard"]  # accents folded
    assert filled.search("submarine") == []


def test_ranking_title_counts_more(filled):
    hits = filled.search("harbour")
    assert len(hits) == 3
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    # "timetable" is in one title; in no text
    assert urls(filled.search("timetable")) == ["https://town.test/ferry"]
    hits = filled.search("library")  # in the library page's title and text
    assert hits[0]["url"] == "https://town.test/library"


def test_hit_fields(filled):
    hit = filled.search("ferries mirror")  # AND finds nothing ("mirror" is only in the url): OR
    assert hit
    by_url = {h["url"]: h for h in filled.search("ferry")}
    mirror = by_url["https://mirror.test/ferry"]
    assert mirror["status"] == "near_duplicate"
    assert mirror["duplicate_of"] == "https://town.test/ferry"
    assert mirror["title"] == "Winter ferry times"
    assert "[ferries]" in mirror["snippet"]
    assert isinstance(mirror["score"], float) and mirror["score"] > 0
    assert mirror["dedup"]["rule"] == "containment>=t2"
    assert by_url["https://town.test/ferry"]["status"] == "unique"
    assert by_url["https://town.test/ferry"]["duplicate_of"] is None


def test_all_words_then_any_word(filled):
    assert urls(filled.search("harbour slate")) == ["https://town.test/library"]  # AND
    assert set(urls(filled.search("slate frost"))) == {"https://town.test/library", "https://town.test/orchard"}


def test_prefix_search(filled):
    assert set(urls(filled.search("ferr*"))) == {"https://town.test/ferry", "https://mirror.test/ferry"}
    assert urls(filled.search("orch*")) == ["https://town.test/orchard"]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_do_not_crash(filled, query):
    hits = filled.search(query, limit=5)
    assert isinstance(hits, list) and len(hits) <= 5
    if "ferry" in query.lower() and not query.startswith("*"):
        assert "https://town.test/ferry" in urls(hits)
    assert filled.count() == len(DOCS)  # nothing was dropped


def test_fts_query_quotes_everything():
    assert fts_query('NOT "ferry" -x a:b (c) d* OR') == '"NOT" AND "ferry" AND "x" AND "a" AND "b" AND "c" AND "d"* AND "OR"'
    assert fts_query("*** --") == ""
    assert fts_query("x y", "OR") == '"x" OR "y"'


def test_limit(filled):
    assert len(filled.search("harbour", limit=2)) == 2
    assert filled.search("harbour", limit=0) == []


def test_add_replaces_by_url(filled):
    doc = dict(DOCS[0], title="Ferry cancelled", text="No boats this week: storm warning.",
               dedup={"status": "unique", "duplicate_of": None})
    filled.add(doc)
    assert filled.count() == len(DOCS)
    assert "https://town.test/ferry" not in urls(filled.search("timetable"))
    assert urls(filled.search("storm warning")) == ["https://town.test/ferry"]
    assert filled.get("https://town.test/ferry")["title"] == "Ferry cancelled"


def test_get_round_trips_documents(filled):
    for doc in DOCS:
        assert filled.get(doc["url"]) == doc
    assert filled.get("https://nowhere.test/") is None
    assert sorted(filled.iter_docs(batch=3), key=lambda d: d["url"]) == sorted(DOCS, key=lambda d: d["url"])


def test_remove(filled):
    assert filled.remove("https://town.test/orchard") is True
    assert filled.remove("https://town.test/orchard") is False
    assert filled.count() == len(DOCS) - 1
    assert filled.search("orchard") == []
    assert filled.get("https://town.test/orchard") is None


def test_add_needs_url(search):
    with pytest.raises(ValueError, match="url"):
        search.add({"title": "x", "text": "y"})


def test_verdict_object_as_dedup(search):
    from dedup.deduplicator import Verdict

    search.add({"url": "https://a.test/", "title": "A", "text": "alpha beta", "fetched_at": 1.0,
                "dedup": Verdict("duplicate", "https://b.test/", "containment>=t1")})
    hit = search.search("alpha")[0]
    assert hit["status"] == "duplicate" and hit["duplicate_of"] == "https://b.test/"


def test_persistence_readonly_and_concurrent_reader(tmp_path):
    with open_search(f"local://{tmp_path / 'ix'}") as writer:
        assert isinstance(writer, LocalSearch)
        for doc in DOCS:
            writer.add(doc)
        with LocalSearch(tmp_path / "ix", readonly=True) as reader:  # while the writer is open
            assert reader.count() == len(DOCS)
            with pytest.raises(ValueError, match="read-only"):
                reader.add(DOCS[0])
            writer.remove(DOCS[3]["url"])
            assert reader.count() == len(DOCS) - 1
        writer.flush()
    db = sqlite3.connect(tmp_path / "ix" / "search.sqlite")
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the external-content FTS table agrees with docs
        db.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        db.close()
    with LocalSearch(tmp_path / "ix") as again:
        assert set(urls(again.search("ferry"))) == {"https://town.test/ferry", "https://mirror.test/ferry"}
    with pytest.raises(FileNotFoundError):
        LocalSearch(tmp_path / "missing", readonly=True)
    assert not (tmp_path / "missing").exists()


def test_closed(tmp_path):
    s = LocalSearch(tmp_path / "ix")
    s.close()
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.search("x")


# -- dedup search --------------------------------------------------------------------------------
def test_cli_search_json(tmp_path, capsys):
    with LocalSearch(tmp_path / "ix") as s:
        for doc in DOCS:
            s.add(doc)
    assert main(["search", "ferry", "--index", f"local://{tmp_path / 'ix'}", "--json", "--limit", "1"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 1 and hits[0]["url"] in {"https://town.test/ferry", "https://mirror.test/ferry"}
    assert set(hits[0]) >= {"url", "title", "snippet", "status", "duplicate_of", "score"}


def test_cli_search_table(tmp_path, capsys, monkeypatch):
    with LocalSearch(tmp_path / "ix") as s:
        for doc in DOCS:
            s.add(doc)
    monkeypatch.setenv("DEDUP_INDEX", f"local://{tmp_path / 'ix'}")
    assert main(["search", 'ferry "(-*']) == 0
    out = capsys.readouterr().out
    assert "near_duplicate" in out and "https://mirror.test/ferry" in out
    assert "duplicate of https://town.test/ferry" in out and "[ferries]" in out
    assert main(["search", "submarine"]) == 0
    assert "no results" in capsys.readouterr().out


def test_cli_search_missing_index(tmp_path, capsys):
    assert main(["search", "x", "--index", f"local://{tmp_path / 'none'}"]) == 2
    assert "no search index" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_bulk_write_names_each_refused_document(request):
    """Elasticsearch (emulator) bulk writes: a refused document is reported by URL, status and
    reason, with the document itself for the caller to keep; the others are stored."""
    from index.elastic import BulkIndexError

    search = open_search(request.getfixturevalue("es_index_uri"), bulk_size=10)
    try:
        search.add(DOCS[0])
        search.add(dict(DOCS[1], fetched_at="not a number"))  # fetched_at is mapped as double
        with pytest.raises(BulkIndexError) as refused:
            search.flush()
        assert [f[0] for f in refused.value.failures] == [DOCS[1]["url"]]
        assert refused.value.failures[0][1] == 400 and refused.value.docs[0]["url"] == DOCS[1]["url"]
        assert DOCS[1]["url"] in str(refused.value)
        assert search.get(DOCS[0]["url"]) == DOCS[0]
        assert search.get(DOCS[1]["url"]) is None
    finally:
        search.close()


CJK_DOCS = [
    {"url": "https://toto.test/typhoon", "title": "大型の台風十四号、週末に近畿地方へ接近のおそれ",
     "text": "気象庁によると、大型で強い台風十四号は勢力を保ったまま北上を続けている。", "fetched_at": 1.7e9,
     "dedup": {"status": "unique"}},
    {"url": "https://toto.test/air", "title": "入冬以来空气质量持续改善",
     "text": "市生态环境局周一发布的数据显示，今年入冬以来全市空气质量优良天数比去年同期增加了。", "fetched_at": 1.7e9,
     "dedup": {"status": "unique"}},
]


def test_finds_chinese_and_japanese_words_inside_a_run(filled):
    """A word of a language written without blanks is found inside the run that holds it (helper-18: ``台風``
    found nothing, as unicode61 made ``大型で強い台風十四号は勢力を保ったまま北上を続けている`` one token)."""
    for doc in CJK_DOCS:
        filled.add(doc)
    filled.flush()
    assert urls(filled.search("台風")) == ["https://toto.test/typhoon"]
    assert urls(filled.search("空气质量")) == ["https://toto.test/air"]
    assert "台" in filled.search("台風")[0]["snippet"]
    assert urls(filled.search("台風 気象庁")) == ["https://toto.test/typhoon"]  # every word, as before
    assert urls(filled.search("れ")) == ["https://toto.test/typhoon"]  # a lone character ending a run (おそれ)
    anyword = urls(filled.search("台風 library"))  # none has both: any word
    assert "https://toto.test/typhoon" in anyword and "https://town.test/library" in anyword


def test_an_index_made_before_the_bigrams_finds_chinese_words_read_only_and_is_filled_when_written(tmp_path):
    """An index made before the ``cjk`` tables: read-only, a query's run is a substring scan; opened for writing
    (the next crawl), it is filled once from its documents."""
    s = LocalSearch(tmp_path / "ix")
    for doc in DOCS + CJK_DOCS:
        s.add(doc)
    s.close()
    db = sqlite3.connect(tmp_path / "ix" / "search.sqlite")
    with db:
        db.executescript("DROP TRIGGER docs_ad_cjk; DROP TABLE cjk_fts; DROP TABLE cjk; "
                         "DELETE FROM meta WHERE key = 'cjk_filled';")
    db.close()
    with LocalSearch(tmp_path / "ix", readonly=True) as old:
        assert urls(old.search("台風")) == ["https://toto.test/typhoon"] and urls(old.search("ferry"))
    LocalSearch(tmp_path / "ix").close()
    db = sqlite3.connect(tmp_path / "ix" / "search.sqlite")
    assert db.execute("SELECT count(*) FROM cjk").fetchone()[0] == 2
    db.close()
    with LocalSearch(tmp_path / "ix", readonly=True) as new:
        assert urls(new.search("空气")) == ["https://toto.test/air"]
        new_hit = new.search("台風")[0]
        assert new_hit["url"] == "https://toto.test/typhoon" and "[台風]" in new_hit["snippet"]
