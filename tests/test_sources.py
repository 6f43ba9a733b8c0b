"""``dedup.sources``: one path from any source of a page to the Page the decision uses; and the ``site``
spider's lexical link scan that spares a second parse of each page."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from crawler.spiders.site import page_links
from dedup.deduplicator import DedupConfig
from dedup.page import parse_page
from dedup.sources import PAGE_FIELDS, Source, features_from_source, page_fields, page_from_source

ARTICLE = ("The council voted on Tuesday to repair the library roof before winter. "
           "Work starts in March and will take six weeks, the clerk said. "
           "Readers can use the annexe on Mill Street while the main hall is closed. ") * 3
HTML = (f"<html><head><title>Roof repair</title><meta name='keywords' content='roof, library'>"
        f"<meta name='description' content='The roof'></head><body><nav><a href='/'>Home</a>"
        f"<a href='https://other.example/x'>Partner</a></nav><h1>Library roof</h1><article><p>{ARTICLE}</p>"
        f"<p><b>Closed</b> until March.</p></article></body></html>").encode()
URL = "http://a.example/news/roof.html"


class Headers(dict):
    def get(self, name, default=None):
        return super().get(name, default)


class FakeResponse:
    """The duck type Source.from_response reads: url, body, headers.get()."""

    def __init__(self, url, body, content_type):
        self.url, self.body, self.headers = url, body, Headers({"Content-Type": content_type})


def test_every_source_of_html_gives_parse_pages_page():
    expected = parse_page(HTML, URL, content_type="text/html; charset=utf-8")
    response = Source.from_response(FakeResponse(URL, HTML, b"text/html; charset=utf-8"))
    assert response.content_type == "text/html; charset=utf-8"
    for source in (response, Source.from_item({"url": URL, "html": HTML.decode()}),
                   Source.from_item({"url": URL, "body": HTML, "title": "ignored"}, html_field="body"),
                   Source.from_document({"page": {"raw": HTML.decode()}, "text": "ignored"}, URL,
                                        html_field="page.raw")):
        page = page_from_source(source)
        assert (page.title, page.text, page.headings, page.anchors_other) == \
               (expected.title, expected.text, expected.headings, expected.anchors_other)


def test_title_and_text_sources():
    page = page_from_source(Source.from_item({"url": URL, "title": "Roof", "text": ARTICLE}))
    assert (page.title, page.text, page.extraction) == ("Roof", ARTICLE, "item") and page.sentences
    doc = {"meta": {"headline": "Roof"}, "body": ARTICLE}
    page = page_from_source(Source.from_document(doc, URL, text_field="body", title_field="meta.headline"))
    assert (page.title, page.text, page.extraction) == ("Roof", ARTICLE, "field")
    assert not Source.from_item({"url": URL}).has_content
    assert Source.from_item({"url": URL, "html": "<p>x</p>", "content_type": "article"}).content_type is None
    assert Source.from_item({"url": URL, "html": b"x", "content_type": "text/html; charset=koi8-r"}).content_type \
        == "text/html; charset=koi8-r"


def test_the_same_limits_on_every_path():
    config = DedupConfig(max_page_bytes=2000, max_text_chars=1000)
    long_text = "word " * 1000
    html = f"<html><body><article><p>{long_text}</p></article></body></html>"
    for source in (Source(URL, html=html), Source(URL, html=html.encode()),
                   Source.from_item({"url": URL, "text": long_text}),
                   Source.from_document({"text": long_text}, URL),
                   Source.from_logged({"url": URL, "text": long_text})):
        page = page_from_source(source, config)
        assert len(page.text) <= 1000, source
    cut = page_from_source(Source(URL, html=html.encode()), config)
    assert cut.truncated["bytes"] == [len(html), 2000]
    assert page_from_source(Source.from_item({"url": URL, "text": long_text}), config).truncated["chars"][0] == 5000


def test_bad_html_type_is_a_clear_error():
    with pytest.raises(TypeError, match="must be bytes or str, got int"):
        page_from_source(Source(URL, html=12345))


def test_a_logged_page_rebuilds_the_crawled_pages_features():
    """What a drop line keeps (title, text, tagged fields, as JSON) gives the very features of the HTML."""
    config = DedupConfig()
    page, features = features_from_source(Source(URL, html=HTML), config)
    logged = json.loads(json.dumps({"item": {"url": URL, "title": page.title, "text": page.text},
                                    "page": page_fields(page)}))
    assert set(logged["page"]) <= set(PAGE_FIELDS) and "text" not in logged["page"]
    again, same = features_from_source(Source.from_logged(logged["item"], logged["page"]), config)
    assert again.headings == page.headings and again.anchors_same == page.anchors_same
    assert (same.content_hash, same.title_key, same.simhash) == (features.content_hash, features.title_key,
                                                                 features.simhash)
    assert np.array_equal(same.tdw.hashes, features.tdw.hashes)
    assert np.allclose(same.tdw.weights, features.tdw.weights)
    assert np.array_equal(same.shingles, features.shingles)
    # a title/text page alone (an older log line) misses the tagged fields: another TDW vector
    plain = features_from_source(Source.from_logged(logged["item"]), config)[1]
    assert plain.content_hash == features.content_hash and not np.array_equal(plain.tdw.hashes, features.tdw.hashes)


def test_sources_pages_and_features_cross_process_boundaries():
    """A worker process gets a Source and hands back (Page, Features): all of it picklable."""
    source = Source.from_response(FakeResponse(URL, HTML, b"text/html"))
    page, features = features_from_source(pickle.loads(pickle.dumps(source)), DedupConfig())
    page2, features2 = pickle.loads(pickle.dumps((page, features)))
    assert page2 == page and features2.simhash == features.simhash
    assert np.array_equal(features2.signature.vector, features.signature.vector)


def test_page_links_scans_hrefs_without_parsing():
    body = b"""<html><head><base href="http://a.example/dir/"><script>var s = '<a href="/in-script">';</script>
    <style>a[href="/in-style"]{}</style></head><body><!-- <a href="/commented">x</a> -->
    <a href="page.html?x=1&amp;y=2#frag">rel</a> <A HREF='/abs'>abs</A> <a class=n href=/bare>bare</a>
    <area shape="rect" href="/map.html"> <a href="javascript:void(0)">js</a> <a href="mailto:x@a.example">m</a>
    <a href="#top">top</a> <a href="/logo.PNG">img</a> <a href="/abs">again</a> <a name="x">no href</a>
    <a data-href="/not-a-link">d</a> <a href=" https://b.example/%C3%A9 ">other</a></body></html>"""
    assert page_links(body, "http://a.example/start") == [
        "http://a.example/dir/page.html?x=1&y=2", "http://a.example/abs", "http://a.example/bare",
        "http://a.example/map.html", "https://b.example/%C3%A9"]


def test_index_identity_compares_spellings_of_one_index(tmp_path, monkeypatch):
    from dedup.droplog import index_identity

    monkeypatch.chdir(tmp_path)
    assert index_identity("local://.dedup") == f"local://{tmp_path}/.dedup" == index_identity(f"local://{tmp_path}/.dedup")
    assert index_identity("es://Search.example/pages") == "http://search.example:9200/pages"
    assert index_identity("https://user:secret@search.example:9243/pages/") == "https://search.example:9243/pages"


def test_lazy_featurizer_makes_its_own_on_first_use_and_keeps_it():
    from dedup.sources import LazyFeaturizer, featurizer_for

    config = DedupConfig()
    lazy = LazyFeaturizer(config)
    assert lazy._featurizer is None  # nothing loaded until a worker fails and this process must featurize
    page = page_from_source(Source(URL, html=HTML), config)
    first = lazy(page)
    assert lazy._featurizer is not None and lazy._featurizer is not featurizer_for(config)  # not the worker cache
    assert lazy(page).simhash == first.simhash == featurizer_for(config)(page).simhash


def test_an_empty_html_field_is_an_empty_page():
    """An item whose HTML field is empty (an empty response's text) is parsed as an empty page, not
    made of its missing title and text; beside a title or text the empty field is ignored."""
    assert page_from_source(Source.from_item({"url": URL, "html": ""})).extraction == "empty"
    assert page_from_source(Source.from_item({"url": URL, "html": b""})).extraction == "empty"
    page = page_from_source(Source.from_item({"url": URL, "html": "", "title": "T", "text": ARTICLE}))
    assert (page.extraction, page.title) == ("item", "T")
