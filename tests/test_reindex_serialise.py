"""The JSON of the reindex's payloads and of the Elasticsearch client (index/elastic/serialise.py): orjson's
output reads back as the standard library's would, and what orjson refuses goes through ``json``."""
from __future__ import annotations

import datetime
import json
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from index.elastic import serialise

pytest.importorskip("orjson")


@dataclass
class Point:
    x: int


def test_dumps_reads_back_as_the_standard_librarys_json():
    when = datetime.datetime(2026, 3, 1, 12, 30)
    value = {"html": "<p>café \u2028 \u00e9t\u00e9 \U0001f600</p>", "n": [1, 2.5, None, True], "nested": {"a": {}},
             "score": np.float64(0.75), "bits": np.int64(3), "count": np.uint8(7), "when": when, "p": Point(1),
             "big": 2**63 + 5}
    got = serialise.dumps(value)
    assert json.loads(got) == {**json.loads(json.dumps(value, ensure_ascii=False, default=str)), "bits": 3,
                               "count": 7}  # numpy integers: numbers, where json's default=str wrote strings
    assert json.loads(got)["when"] == "2026-03-01 12:30:00" and json.loads(got)["p"] == "Point(x=1)"
    assert serialise.FAST


@pytest.mark.parametrize("value", [{"text": "a lone \ud800 surrogate"}, {"n": 2**70}, {1: "int key"}])
def test_what_orjson_refuses_is_written_by_json(value):
    got = serialise.dumps(value)
    assert got.decode("utf-8")  # valid UTF-8 (a lone surrogate escaped): a drop line is a line of a UTF-8 log
    assert json.loads(got) == json.loads(json.dumps(value))


def test_loads_reads_what_orjson_refuses():
    assert serialise.loads(b'{"t": "\\ud800x"}') == {"t": "\ud800x"}
    assert serialise.loads('{"a": [1, "\u00e9"]}') == {"a": [1, "\u00e9"]}


def test_client_serializer_falls_back_and_raises_the_clients_error():
    from elasticsearch.exceptions import SerializationError

    s = serialise.client_serializer()
    assert s.dumps({"a": np.float32(0.5), "d": datetime.date(2026, 1, 2)}) == b'{"a":0.5,"d":"2026-01-02"}'
    assert s.dumps({"t": "\ud800"}) == '{"t":"\ud800"}'.encode("utf-8", "surrogatepass")
    assert s.loads(b'{"t": "\\udc00"}') == {"t": "\udc00"}
    with pytest.raises(SerializationError):
        s.dumps({"x": object()})


def test_without_orjson_the_standard_library_writes_the_same(monkeypatch):
    value = {"html": "<b>caf\u00e9</b>", "n": [1, 2.5], "score": np.float64(0.25), "bits": np.int32(4),
             "when": datetime.date(2026, 1, 2)}
    fast = serialise.dumps(value)
    monkeypatch.setattr(serialise, "orjson", None)
    assert serialise.dumps(value) == fast
    assert serialise.loads(fast) == json.loads(fast)
    assert "orjson" in sys.modules  # only this module's view of it was taken away


def test_verdict_to_dict_is_asdicts_without_its_deep_copy():
    """Verdict.to_dict (written into every reindexed document) makes what dataclasses.asdict made, and
    shares no dict or list with the verdict."""
    from dataclasses import asdict

    from dedup.deduplicator import Verdict

    v = Verdict("near_duplicate", "http://a/", "containment",
                {"containment": np.float64(0.93), "angle_ok": np.bool_(True), "truncated": {"bytes": [9, 4]},
                 "pair": (1, "x"), "candidates": [{"url": "http://b/", "score": 0.5}], "n": np.int64(3)},
                {"t1": 0.8}, nearest="http://b/", replaced={"record": 4, "status": "unique"}, duplicate_id=7)
    want = asdict(v)
    del want["refetched"], want["regrouped"], want["root_hash"]  # left out when they say nothing; root_hash always
    got = v.to_dict()
    assert got == want and json.dumps(got, default=str) == json.dumps(want, default=str)
    got["scores"]["truncated"]["bytes"].append(1)
    got["scores"]["candidates"][0]["url"] = "changed"
    got["replaced"]["status"] = "changed"
    assert v.scores["truncated"]["bytes"] == [9, 4] and v.scores["candidates"][0]["url"] == "http://b/"
    assert v.replaced == {"record": 4, "status": "unique"}
    plain = Verdict("unique", None, "no_candidate").to_dict()
    assert "nearest" not in plain and "replaced" not in plain and "refetched" not in plain and "regrouped" not in plain
