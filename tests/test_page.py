import pytest

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
    assert page.extraction == "native"  # the default extractor
    # the headline and the subheading introduce prose: kept, though short, so the text keeps its outline
    assert page.text.split("\n")[:2] == ["Harbour bridge to close", "Repairs"]


def test_trafilatura_on_request_gives_the_same_fields():
    fast = parse_page(HTML, "http://www.example.org/news/harbour-bridge.html")
    slow = parse_page(HTML, "http://www.example.org/news/harbour-bridge.html", extractor="trafilatura")
    assert slow.extraction == "trafilatura"
    assert (slow.title, slow.headings, slow.bold, slow.anchor_count) == (fast.title, fast.headings, fast.bold, 3)
    assert "corrosion in the main cables" in slow.text and "Copyright" not in slow.text


SNIPPETS = [("Harbour bridge to close for three weeks", "The harbour bridge will close for three weeks of "
             "repairs in the spring, the council said on Monday, after engineers found corrosion in the cables."),
            ("Ferries to run every fifteen minutes", "Ferries will run every fifteen minutes while the bridge is "
             "closed, and buses will be rerouted through the tunnel under the harbour, the operator said."),
            ("Shops fear a drop in trade", "Shops near the bridge fear a drop in trade during the repairs, but "
             "the council promised a support fund for those that can show a loss of takings.")]


def results_page(markup: str) -> str:
    return (f"<html><head><title>Search results</title></head><body><nav><a href='/'>Home</a> "
            f"<a href='/news'>News</a></nav><main><h1>Search results for bridge</h1>{markup}</main>"
            "<footer><a href='/about'>About us</a></footer></body></html>")


def test_a_search_result_page_is_read_as_its_teasers_not_its_snippets():
    # as many sites mark results up: a list of items, each a title link in a heading, a snippet, a date
    items = "".join(f"<li><h3><a href='/story/{i}'>{t}</a></h3><p>{s}</p><span>3 May 2024</span></li>"
                    for i, (t, s) in enumerate(SNIPPETS))
    page = parse_page(results_page(f"<ol class='results'>{items}</ol>"), "http://a.example/search?q=bridge")
    assert page.extraction == "listing"
    lines = page.text.split("\n")
    # each teaser one list line, marked as trafilatura marks list items: the listing signal reads it from the text
    assert len(lines) == 3 and lines[0].startswith("- Harbour bridge to close for three weeks The harbour")
    assert page.list_share == 1.0
    assert all(line.endswith("3 May 2024") for line in lines)
    # the same without headings: a title link (three words or more) that begins each result
    divs = "".join(f"<div class='r'><a href='/story/{i}'>{t}</a><div>{s}</div></div>"
                   for i, (t, s) in enumerate(SNIPPETS))
    assert parse_page(results_page(divs), "http://a.example/search?q=bridge").extraction == "listing"


@pytest.mark.parametrize("extractor", ["native", "resiliparse"])
def test_an_article_with_related_links_is_not_a_listing(extractor):
    related = "".join(f"<li><a href='/story/{i}'>{t}</a></li>" for i, (t, _) in enumerate(SNIPPETS))
    inline = "<p>As <a href='/story/0'>we reported last week</a>, the council met engineers. " + " ".join(
        s for _, s in SNIPPETS) + "</p>"
    page = parse_page(HTML.replace("</article>", f"{inline}<h2>Related</h2><ul>{related}</ul></article>"),
                      "http://www.example.org/news/harbour-bridge.html", extractor=extractor)
    assert page.extraction == extractor and "corrosion in the main cables" in page.text
    assert "Related" not in page.text.split("\n")  # a heading over links only is no outline


def test_a_legal_footer_is_not_main_text():
    legal = ("<div class='legal'>Copyright \u00a9 2007 Example Gazette Ltd. All rights reserved. This material may "
             "not be published, broadcast, rewritten or redistributed without the written consent of the owner.</div>")
    page = parse_page(HTML.replace("</article>", f"</article>{legal}").replace("<footer>Copyright 2026 Example "
                      "Gazette</footer>", ""), "http://www.example.org/news/harbour-bridge.html")
    assert "corrosion in the main cables" in page.text and "redistributed" not in page.text


def test_fallback_when_the_fast_extract_has_no_prose():
    # short paragraphs only: resiliparse's prose lines (>= 20 words) come to nothing, trafilatura keeps them
    paras = "".join(f"<p>Item {i}: the council met and agreed to repair the bridge {i}.</p>" for i in range(30))
    page = parse_page(f"<html><body><nav><a href='/'>Home</a></nav><article>{paras}</article></body></html>",
                      "http://a.example/1", extractor="resiliparse")
    assert page.extraction == "trafilatura-fallback"
    assert "repair the bridge 7" in page.text


def test_unknown_extractor_is_refused():
    with pytest.raises(ValueError, match="extractor must be one of resiliparse, trafilatura, auto"):
        parse_page(HTML, "http://a.example/", extractor="readability")


def test_main_text_refuses_native_whose_text_is_the_scanners():
    # main_text is resiliparse's and trafilatura's path: asked for native it would have run resiliparse
    from dedup.extract import main_text

    with pytest.raises(ValueError, match="native_text"):
        main_text(HTML, extractor="native")
    assert main_text(HTML)[1] == "resiliparse"


def test_url_tokens():
    assert url_tokens("https://www.example.org/news/harbour-bridge.html?id=7&utm_source=x") == [
        "example", "org", "news", "harbour", "bridge", "id", "utm", "source", "x"]


def test_bad_input_never_raises():
    for body in (b"", b"\x00\xff" * 100, "<html><p>unclosed <b>bold", "<" * 1000, b"<?xml version='1.0' encoding='utf-8'?><html/>"):
        page = parse_page(body, "http://example.org/")
        assert isinstance(page.text, str)
    assert parse_page(b"   ", "http://example.org/").extraction == "empty"


@pytest.mark.parametrize("extractor", ["native", "resiliparse"])
def test_a_story_beside_a_longer_related_stories_list_is_read_as_the_story(extractor):
    # as Plea/p24 and Sanitation/s2 of goldset-dev: a table layout whose related-stories teasers (title link,
    # date, snippet) hold more prose than the story beside them, an article of its own: the text is the story
    # (before: the teasers, read as a listing, so the page matched no copy of its story)
    teaser = ("<p><a href='/story/{i}'>Other news item number {i}</a> Jan 7 2007 -- A different story about the "
              "county that has nothing to do with the bridge, told in a snippet of well over twenty words so "
              "that it counts as prose, item {i}.</p>")
    items = "".join(teaser.format(i=i) for i in range(8))
    story = HTML.split("<article>")[1].split("</article>")[0]
    html = HTML.replace(f"<article>{story}</article>", f"<table><tr><td>{story}</td></tr><tr><td>{items}</td></tr></table>")
    page = parse_page(html, "http://www.example.org/news/harbour-bridge.html", extractor=extractor)
    assert page.extraction == extractor and page.list_share == 0.0
    assert "corrosion in the main cables" in page.text and "Other news item" not in page.text
    # the same teasers with no story beside them: a listing, read as its teasers
    listing = parse_page(results_page(f"<div>{items}</div>"), "http://a.example/section/county")
    assert listing.extraction == "listing" and listing.list_share == 1.0
    assert "Other news item number 7" in listing.text and "corrosion" not in listing.text
