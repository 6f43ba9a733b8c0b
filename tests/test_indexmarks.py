"""Parts a page marks as not for a search index (dedup/indexmarks.py) are left out of what it is read as."""
from __future__ import annotations

import pytest

from dedup._scan import scan
from dedup.indexmarks import unindexed
from dedup.page import parse_page

STORY = ("<p>The council voted on Tuesday to close the old bridge for repairs after an inspection found cracks "
         "in two of its main supports, and the work will start next month.</p>"
         "<p>Engineers said the repairs would take six months and cost about two million dollars, paid for by "
         "the state and the county together under last year's transport plan.</p>")
PROMO = ("<div><h1>Premium Weather</h1><p>How will the weather affect you? Know for sure. Monitor storms, "
         "animate your forecast, create personal alerts and much more with our weather service today!</p></div>")


def page_of(body: str) -> str:
    return f"<html><head><title>Bridge closed</title></head><body>{body}</body></html>"


@pytest.mark.parametrize("off,on", [("<!--stopindex-->", "<!--startindex-->"),
                                    ("<!-- googleoff: index -->", "<!-- googleon: index -->"),
                                    ("<!--googleoff: all-->", "<!--googleon: all-->"),
                                    ("<!--noindex-->", "<!--/noindex-->")])
def test_a_marked_part_is_cut_to_its_closing_marker(off, on):
    html = page_of(f"{STORY}{off}{PROMO}{on}<p>After.</p>")
    assert unindexed(html) == page_of(f"{STORY}<p>After.</p>")


def test_a_part_left_open_runs_to_the_end_and_other_kinds_do_not_close_it():
    html = page_of(f"<!--startindex-->{STORY}<!--stopindex-->{PROMO}<!--googleon: index-->{PROMO}")
    assert unindexed(html) == page_of(f"<!--startindex-->{STORY}")[:-len("</body></html>")]


def test_a_page_without_markers_is_returned_as_it_is():
    html = page_of(f"{STORY}<!-- stop index --><!--STOPINDEX-->{PROMO}<!--googleoff: snippet-->")
    assert unindexed(html) is html


def test_the_scanner_says_whether_a_comment_opens_a_marked_part():
    assert scan(page_of(f"{STORY}<!-- stopindex -->{PROMO}"))[12] is True
    assert scan(page_of(f"{STORY}<!--googleoff: index-->{PROMO}"))[12] is True
    assert scan(page_of(f"{STORY}<!--noindex-->{PROMO}"))[12] is True
    assert scan(page_of(f"{STORY}<!-- a comment -->{PROMO}"))[12] is False
    assert scan(page_of(f"<script>var s = '<!--stopindex-->';</script>{STORY}"))[12] is False  # not a comment


MARKERS = [("<!--stopindex-->", "<!--startindex-->"), ("<!-- googleoff: index -->", "<!-- googleon: index -->"),
           ("<!--googleoff: all-->", "<!--googleon: all-->"), ("<!--noindex-->", "<!--/noindex-->")]


@pytest.mark.parametrize("off,on", MARKERS)
def test_a_marked_sidebar_is_left_out_of_the_main_text_and_the_verdict_says_so(off, on):
    html = page_of(f"{on}{STORY}{off}{PROMO}")  # each kind through the scanner's flag and the cut
    page = parse_page(html.encode(), "http://news.test/bridge")
    assert "Premium Weather" not in page.text and "weather service" not in page.text
    assert "two million dollars" in page.text
    assert page.truncated == {"unindexed": [len(html), len(unindexed(html))]}
    plain = parse_page(page_of(STORY + PROMO).encode(), "http://news.test/bridge")
    assert "weather service" in plain.text and not plain.truncated  # unmarked, the promotion is read


def test_markers_that_would_leave_too_little_text_are_not_followed():
    html = page_of(f"<!--googleoff: index-->{STORY}<!--googleon: index-->")  # the whole story marked
    page = parse_page(html.encode(), "http://news.test/bridge")
    assert "two million dollars" in page.text and not page.truncated


def test_the_cut_page_carries_only_its_own_cuts():
    """A page whose whole text is over the text limit and whose marked part is not: read without that part,
    its verdict says ``unindexed`` and not the ``chars`` cut of the first reading."""
    limit = 1000
    long_promo = "<div><p>" + " ".join(["Premium weather alerts for your area, every hour of the day."] * 60) + "</p></div>"
    html = page_of(f"<!--startindex-->{STORY}<!--stopindex-->{long_promo}")
    page = parse_page(html.encode(), "http://news.test/bridge", max_text_chars=limit)
    assert "Premium weather" not in page.text and "two million dollars" in page.text
    assert set(page.truncated) == {"unindexed"}
    whole = parse_page(page_of(STORY + long_promo).encode(), "http://news.test/bridge", max_text_chars=limit)
    assert "chars" in whole.truncated  # unmarked, the same page is cut by the limit


@pytest.mark.parametrize("scanner", ["declines", "fails"])
def test_a_page_the_scanner_cannot_read_is_cut_too(scanner, monkeypatch):
    """lxml's path (the scanner returned None for the page, or raised): no flag from the scanner, and the
    marked part is left out all the same."""
    from dedup import page as pg

    def off(*_, **__):
        if scanner == "fails":
            raise MemoryError
        return None

    monkeypatch.setattr(pg, "_c_scan", off)
    html = page_of(f"<!--startindex-->{STORY}<!--stopindex-->{PROMO}")
    page = parse_page(html.encode(), "http://news.test/bridge")
    assert page.extraction == "resiliparse"  # lxml's path
    assert "weather service" not in page.text and "two million dollars" in page.text
    assert page.truncated == {"unindexed": [len(html), len(unindexed(html))]}


def test_a_verdict_from_the_record_says_how_its_page_was_cut():
    """The final pass of a sliced reindex may decide a page from its stored record (check_record): the record
    keeps the page's cuts, so that verdict explains them as the page's does."""
    from dedup.deduplicator import Deduplicator
    from dedup.store import MemoryIndex

    d = Deduplicator(MemoryIndex())
    html = page_of(f"{STORY}<!--googleoff: index-->{PROMO}<!--googleon: index-->")
    page = parse_page(html.encode(), "http://news.test/bridge")
    record = d.featurizer(page).to_record(page)
    assert d.check_record(record).scores["truncated"] == d.check(page).scores["truncated"] == page.truncated
