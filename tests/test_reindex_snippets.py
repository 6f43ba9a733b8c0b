"""What ``dedup search`` shows on a corpus reindexed from HTML (``--html-field``): the kept pages'
extracted main text in the snippet, never their markup; and the field errors of ``dedup reindex``
naming the source's text and keyword fields as they are mapped (against the emulator, tests/es_server.py)."""
from __future__ import annotations

import json

import pytest

from dedup.cli import main

NAV = "Home News Sport Weather Subscribe Login"
STORIES = {
    "smoking": ("Pelosi bans smoking in the Speaker's lobby",
                "House Speaker Nancy Pelosi has banned smoking in the Speaker's lobby, the ornate hallway "
                "beside the chamber where lawmakers have lit cigarettes and cigars for generations. "
                "Members who want to smoke will have to step out onto the balcony from now on, an aide said."),
    "ferry": ("Evening ferry to stop in November",
              "The evening ferry between Wrenfield and East Tamsel will stop running in November, its "
              "operator said on Monday. Commuters asked the council for a later bus instead."),
    "library": ("Library opens on Sundays",
                "The town library will open on Sunday afternoons from March, after a petition signed by "
                "two thousand residents. Volunteers will staff the reading room and the children's corner."),
}


def page_html(title: str, body: str) -> str:
    paras = "".join(f'<p class="lead">{s.strip()}.</p>' for s in body.split(".") if s.strip())
    return (f"<html><head><title>{title}</title><style>.lead{{color:red}}</style></head><body>"
            f'<nav><ul>{"".join(f"<li><a href=/{w}>{w}</a></li>" for w in NAV.split())}</ul></nav>'
            f'<div class="story"><article><h1>{title}</h1><div>By ERICA WERNER</div>{paras}</article></div>'
            f"<footer>Copyright 2026 Example News</footer></body></html>")


@pytest.fixture
def html_corpus(es_url, es_index_uri):
    """A source index of three HTML pages: url and cluster keyword, html text, crawled date."""
    from elasticsearch import Elasticsearch, helpers

    name = es_index_uri.rsplit("/", 1)[1] + "-src"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "cluster": {"type": "keyword"}, "html": {"type": "text"},
        "crawled": {"type": "date"}}})
    helpers.bulk(client, [{"_index": name, "_id": key, "_source": {
        "url": f"http://news.example/{key}", "cluster": key, "html": page_html(*story),
        "crawled": f"2024-01-0{n + 1}T00:00:00Z"}} for n, (key, story) in enumerate(STORIES.items())], refresh=True)
    try:
        yield f"{es_url}/{name}"
    finally:
        client.options(ignore_status=404).indices.delete(index=name)
        client.close()


def reindex(source: str, dest: str, tmp_path, *extra: str) -> list[str]:
    return ["reindex", source, dest, "--url-field", "url", "--html-field", "html", "--time-field", "crawled",
            "--keep", "oldest", "--dropped-log", str(tmp_path / "dropped.jsonl"),
            "--checkpoint", str(tmp_path / "checkpoint.json"), *extra]


def test_search_on_a_reindexed_html_corpus_shows_the_extracted_text(html_corpus, es_index_uri, tmp_path, capsys):
    from elasticsearch import Elasticsearch

    assert main(reindex(html_corpus, es_index_uri, tmp_path)) == 0
    capsys.readouterr()
    assert main(["search", "Pelosi bans smoking", "--index", es_index_uri, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["url"] for h in hits][:1] == ["http://news.example/smoking"], hits
    snippet = hits[0]["snippet"]
    # the extracted main text with the query's words marked, as a crawl's index shows it
    assert "<" not in snippet and ">" not in snippet and "class=" not in snippet, snippet
    assert "[Pelosi]" in snippet and "[smoking]" in snippet, snippet
    assert not any(w in snippet for w in ("Subscribe", "Copyright", "color")), snippet
    plain = snippet.replace("[", "").replace("]", "").strip("… ")
    assert plain in " ".join(STORIES["smoking"]), snippet
    assert len(plain) <= 130, snippet

    # a word found only in the text of another page: its snippet is that page's text, its hit marked
    assert main(["search", "commuters", "--index", es_index_uri, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["url"] for h in hits] == ["http://news.example/ferry"], hits
    assert "[Commuters]" in hits[0]["snippet"] and "<" not in hits[0]["snippet"], hits[0]["snippet"]

    # the source's own fields are all there, unchanged, beside the verdict
    client = Elasticsearch(es_index_uri.rsplit("/", 1)[0])
    try:
        name = es_index_uri.rsplit("/", 1)[1]
        src = client.get(index=html_corpus.rsplit("/", 1)[1], id="ferry")["_source"]
        got = client.get(index=name, id="ferry")["_source"]
        assert {k: got[k] for k in src} == src and set(got) == set(src) | {"dedup"}
    finally:
        client.close()

    # the plain listing prints the same snippet
    assert main(["search", "Pelosi bans smoking", "--index", es_index_uri]) == 0
    out = capsys.readouterr().out
    assert "[Pelosi]" in out and "<div>" not in out and "<p" not in out, out


def test_reindex_field_errors_name_text_and_keyword_fields_as_mapped(html_corpus, es_index_uri, tmp_path, capsys):
    name = html_corpus.rsplit("/", 1)[1]
    assert main(reindex(html_corpus, es_index_uri, tmp_path, "--html-field", "html_body")) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert (f"--html-field field `html_body` not in the mapping of `{name}`; text fields are: html "
            "(keyword fields: cluster, url)") in err, err
    assert main(reindex(html_corpus, es_index_uri, tmp_path, "--html-field", "crawled")) == 2
    err = capsys.readouterr().err
    assert f"--html-field field `crawled` of `{name}` is date, not text; text fields are: html " in err, err


def test_text_snippet_marks_words_folded_and_prefixes_and_cuts_at_words():
    from index.elastic.search import text_snippet

    text = ("The Café opened in March. " + "Nothing else happened that week in the quiet town. " * 4
            + "Later the ferries to East Tamsel stopped, and the CAFE closed.")
    got = text_snippet(text, {"cafe"}, {"ferr"}, chars=80)
    assert "[ferries]" in got and "[CAFE]" in got and got.startswith("… ") and got.endswith("closed."), got
    assert text_snippet(text, {"cafe"}, set(), chars=80).startswith("The [Café] opened")
    plain = text_snippet(text, {"absent"}, set(), chars=40)
    assert plain == "The Café opened in March. Nothing else …", plain
    assert text_snippet("", {"x"}, set()) == ""


def test_search_on_a_reindexed_html_corpus_searches_the_extracted_text(html_corpus, es_index_uri, tmp_path, capsys):
    """Issue 33, item 3: a search matched the HTML field (every page's navigation and footer too, and
    highlighted markup, 11 s for one word on 4,538 pages); it searches the main text the reindex extracted
    (the destination keeps it in ``dedup.text``), as a crawl's index searches its ``text``."""
    from elasticsearch import Elasticsearch

    assert main(reindex(html_corpus, es_index_uri, tmp_path)) == 0
    capsys.readouterr()
    # "Subscribe" is in every page's navigation and in no page's text: no hit
    assert main(["search", "Subscribe", "--index", es_index_uri, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["search", "commuters bus", "--index", es_index_uri, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["url"] for h in hits] == ["http://news.example/ferry"], hits
    assert "[Commuters]" in hits[0]["snippet"] and "[bus]" in hits[0]["snippet"], hits[0]["snippet"]
    client = Elasticsearch(es_index_uri.rsplit("/", 1)[0])
    try:
        got = client.get(index=es_index_uri.rsplit("/", 1)[1], id="ferry")["_source"]
        assert got["dedup"]["text"].startswith("Evening ferry to stop in November"), got["dedup"]
    finally:
        client.close()


def test_a_search_that_takes_too_long_ends_in_one_line(capsys):
    """Issue 33, item 3: a cluster that does not answer within ``--timeout`` ends the search with one line
    (it printed a traceback after 76 s: a fixed 30 s timeout, tried again for 60 s)."""
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []
    threading.Thread(target=lambda: [held.append(server.accept()) for _ in range(8)], daemon=True).start()
    try:
        start = time.monotonic()
        code = main(["search", "harbour bridge ferry tolls", "--index",
                     f"http://127.0.0.1:{server.getsockname()[1]}/pages", "--timeout", "1"])
        elapsed = time.monotonic() - start
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 1 and elapsed < 5, (code, elapsed)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("dedup: error: ") and "--timeout" in err, err


def test_search_on_a_corpus_of_html_and_text_documents_finds_both(es_url, es_index_uri, tmp_path, capsys):
    """helper-22: a corpus whose documents hold either ``html`` or ``text`` (a dynamic mapping of both) was
    searched in ``text`` and the title only, so no word of an HTML document's body was found. Both are now
    searched; the HTML document's snippet is its extracted text."""
    from elasticsearch import Elasticsearch, helpers

    name = es_index_uri.rsplit("/", 1)[1] + "-mixed"
    client = Elasticsearch(es_url)
    (smoking_title, smoking), (ferry_title, ferry) = STORIES["smoking"], STORIES["ferry"]
    helpers.bulk(client, [
        {"_index": name, "_id": "smoking", "_source": {"url": "http://news.example/smoking", "title": smoking_title,
                                                       "html": page_html(smoking_title, smoking),
                                                       "crawled": "2024-01-01T00:00:00Z"}},
        {"_index": name, "_id": "ferry", "_source": {"url": "http://news.example/ferry", "title": ferry_title,
                                                     "text": ferry, "crawled": "2024-01-02T00:00:00Z"}}], refresh=True)
    try:
        args = ["reindex", f"{es_url}/{name}", es_index_uri, "--url-field", "url.keyword", "--html-field", "html",
                "--text-field", "text", "--title-field", "title", "--time-field", "crawled", "--dropped-log",
                str(tmp_path / "dropped.jsonl"), "--checkpoint", str(tmp_path / "checkpoint.json")]
        assert main(args) == 0
        for query, url, word in (("ornate hallway", "http://news.example/smoking", "[ornate]"),
                                 ("later bus", "http://news.example/ferry", "[bus]")):
            capsys.readouterr()
            assert main(["search", query, "--index", es_index_uri, "--json"]) == 0
            hits = json.loads(capsys.readouterr().out)
            assert [h["url"] for h in hits] == [url], (query, hits)
            assert word in hits[0]["snippet"] and "<" not in hits[0]["snippet"], hits[0]["snippet"]
    finally:
        client.options(ignore_status=404).indices.delete(index=name)
        client.close()
