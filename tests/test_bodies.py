"""``crawler.bodies``: an item's ``response.text`` carries its response's bytes to the dedup pipeline,
and stays the same string for everything else (equality, JSON export, pickling to worker processes)."""
from __future__ import annotations

import json
import pickle

from scrapy.http import HtmlResponse
from scrapy.utils.serialize import ScrapyJSONEncoder

from crawler.bodies import FetchedHTML, ResponseBodyMiddleware
from crawler.pipelines import item_source
from dedup.sources import page_from_source
from itemadapter import ItemAdapter

BODY = ("<html><head><title>Caf\xe9 na\xefve</title></head><body><article><p>" +
        "Le caf\xe9 du port a rouvert apr\xe8s les travaux, et les habitu\xe9s sont ravis. " * 8 +
        "</p></article></body></html>").encode("cp1252")


def response(body=BODY, ctype=b"text/html"):
    return HtmlResponse(url="http://127.0.0.1/cafe.html", body=body, headers={"Content-Type": ctype})


def test_the_responses_text_is_parsed_from_its_bytes():
    r = response()
    item = {"url": r.url, "html": r.text}
    [out] = ResponseBodyMiddleware().process_spider_output(r, [item])
    html = out["html"]
    assert isinstance(html, FetchedHTML) and html == r.text and html.body == BODY
    assert html.content_type == "text/html"
    page = page_from_source(item_source(ItemAdapter(out)))
    assert "naïve" in page.title and "après" in page.text  # dedup's decoding, whatever Scrapy guessed
    assert json.loads(ScrapyJSONEncoder().encode(out))["html"] == r.text
    again = pickle.loads(pickle.dumps(html))
    assert again == html and again.body == BODY and again.content_type == "text/html"


def test_other_values_are_left_alone():
    r = response()
    edited = r.text.replace("port", "quai")
    items = [{"url": r.url, "html": edited}, {"url": r.url, "html": BODY}, {"url": r.url, "title": "t", "text": "x"},
             "not an item"]
    out = list(ResponseBodyMiddleware().process_spider_output(r, items))
    assert out == items and type(out[0]["html"]) is str
