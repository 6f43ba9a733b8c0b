from dedup.page import parse_page, url_tokens

HTML = """<html><head><title> Harbour  bridge to close </title>
<meta name="keywords" content="bridge, harbour"><meta name="description" content="Repairs start in spring">
</head><body><nav><a href="/">Home</a> <a href="http://other.example/x">Partner</a> <a href="/news">News</a></nav>
<article><h1>Harbour bridge to close</h1><h2>Repairs</h2>
<p>The harbour bridge will close for <b>three weeks</b> of repairs in the spring, the council said on Monday.
Engineers found corrosion in the main cables during an inspection last autumn and recommended urgent work.</p>
<p>Ferries will run every fifteen minutes while the bridge is closed, and buses will be rerouted through the
tunnel. Shops near the bridge fear a drop in trade, but the council promised a support fund.</p>
</article><footer>Copyright 2026 Example Gazette</footer></body></html>"""


def test_fields_and_main_text():
    page = parse_page(HTML, "http://www.example.org/news/harbour-bridge.html")
    assert page.title == "Harbour bridge to close"
    assert page.keywords == "bridge, harbour" and page.description == "Repairs start in spring"
    assert (1, "Harbour bridge to close") in page.headings and (2, "Repairs") in page.headings
    assert page.bold == ["three weeks"]
    assert page.anchor_count == 3
    assert page.anchors_same == ["Home", "News"] and page.anchors_other == ["Partner"]
    assert "corrosion in the main cables" in page.text
    assert "Copyright" not in page.text
    assert len(page.sentences) >= 4
    assert page.extraction == "trafilatura"  # the default extractor


def test_resiliparse_on_request_gives_the_same_fields():
    slow = parse_page(HTML, "http://www.example.org/news/harbour-bridge.html")
    fast = parse_page(HTML, "http://www.example.org/news/harbour-bridge.html", extractor="resiliparse")
    assert fast.extraction == "resiliparse"
    assert (slow.title, slow.headings, slow.bold, slow.anchor_count) == (fast.title, fast.headings, fast.bold, 3)
    assert "corrosion in the main cables" in slow.text and "Copyright" not in slow.text


def test_fallback_when_the_fast_extract_has_no_prose():
    # short paragraphs only: resiliparse's prose lines (>= 20 words) come to nothing, trafilatura keeps them
    paras = "".join(f"<p>Item {i}: the council met and agreed to repair the bridge {i}.</p>" for i in range(30))
    page = parse_page(f"<html><body><nav><a href='/'>Home</a></nav><article>{paras}</article></body></html>",
                      "http://a.example/1", extractor="resiliparse")
    assert page.extraction == "trafilatura-fallback"
    assert "repair the bridge 7" in page.text


def test_unknown_extractor_is_refused():
    import pytest

    with pytest.raises(ValueError, match="extractor must be one of resiliparse, trafilatura, auto"):
        parse_page(HTML, "http://a.example/", extractor="readability")


def test_url_tokens():
    assert url_tokens("https://www.example.org/news/harbour-bridge.html?id=7&utm_source=x") == [
        "example", "org", "news", "harbour", "bridge", "id", "utm", "source", "x"]


def test_bad_input_never_raises():
    for body in (b"", b"\x00\xff" * 100, "<html><p>unclosed <b>bold", "<" * 1000, b"<?xml version='1.0' encoding='utf-8'?><html/>"):
        page = parse_page(body, "http://example.org/")
        assert isinstance(page.text, str)
    assert parse_page(b"   ", "http://example.org/").extraction == "empty"
