"""A slice's hand-over of a kept page's query features to the final pass (index/elastic/slicing.py):
serialised once (``handover_json``), that text kept in the work folder until sent, and put as it is in
the bulk body (``handover_source``).  What the final pass reads back is the page's own query."""
from __future__ import annotations

import json

import numpy as np
from elastic_transport import JsonSerializer
from elasticsearch.helpers.actions import expand_action

from dedup.deduplicator import Deduplicator
from dedup.page import parse_page
from dedup.query import Query
from dedup.store import MemoryIndex
from index.elastic.reindex_state import WorkState
from index.elastic.slicing import handover_json, handover_source
from test_check_record import BAKERY, BRIDGE, html, short_pages, site_pages


def pages():
    extra = [("http://empty.example/", "<html><body></body></html>"),
             ("http://accents.example/", html("Café « crème » \u2014 \U0001F35E", BAKERY))]
    return site_pages() + short_pages() + extra


def test_handover_gives_back_the_pages_own_query(tmp_path):
    """Through the work folder and the bulk body, the features a slice hands over read back (as the
    final pass reads them) into the query ``check`` makes of the page: every field and array equal,
    dtypes included, the sentence simhashes apart (never handed over: no record keeps any)."""
    d = Deduplicator(MemoryIndex())
    state = WorkState(tmp_path / "work")
    want: dict[str, Query] = {}
    for n, (url, body) in enumerate(pages()):
        page = parse_page(body, url, max_text_chars=4000)
        f = d.featurizer(page)
        want[f"d{n}"] = Query.of_page(page, f)
        text = handover_json(d.query_features(page, f))
        assert text.isascii()  # its length is its size in bytes
        state.record(f"d{n}", status="unique", kept=True, record_id=n + 1, es_record_id=None, payload={},
                     after=[n], handover=text)
    handed = state.handovers()  # what a resumed slice sends: the text recorded, unchanged
    assert set(handed) == set(want)
    slots = [s for s in Query.__slots__ if s != "_chunks"]
    for sid, text in handed.items():
        action, body = expand_action({"_op_type": "index", "_index": "x-slices-features", "_id": sid,
                                      "_source": handover_source(1, text)})
        sent = JsonSerializer().dumps(body)  # what streaming_bulk puts in the request
        assert sent == handover_source(1, text) and action == {"index": {"_index": "x-slices-features", "_id": sid}}
        source = json.loads(sent)
        assert source["slice"] == 1 and set(source) == {"slice", "q"}
        got, q = Query.from_dict(source["q"]), want[sid]
        for name in slots:
            a, b = getattr(got, name), getattr(q, name)
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), (sid, name)
            else:
                assert type(a) is type(b) and a == b, (sid, name, a, b)
    state.close()


def test_handover_of_a_truncated_page_keeps_what_was_cut():
    d = Deduplicator(MemoryIndex())
    cut = parse_page(html("Bridge closes", BRIDGE + BAKERY), "http://cut.example/", max_text_chars=120)
    q = json.loads(handover_source(0, handover_json(d.query_features(cut, d.featurizer(cut)))))["q"]
    assert cut.truncated and q["truncated"] == cut.truncated
    assert d.check_query_features(q).to_dict() == d.check(cut, d.featurizer(cut)).to_dict()
