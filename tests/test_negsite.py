"""``benchmarks/negsite.py``: same-site negatives (issue 16), one cluster per page.

What is asserted is the shape the false-positive measurement relies on: deterministic for a
seed, one page per cluster folder, every kind of page present, and no two pages with the same
<main> element (which would be true copies, not negatives). The false-positive rate itself is a
measurement (README), not a test.
"""
from __future__ import annotations

import hashlib
import sys

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def negsite():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import negsite
        yield negsite
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _digest(folder):
    return {p.parent.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*/page.html"))}


def test_deterministic_one_page_per_cluster(negsite, tmp_path):
    counts = negsite.generate(tmp_path / "a", pages=120, seed=3)
    negsite.generate(tmp_path / "b", pages=120, seed=3)
    a, b = _digest(tmp_path / "a"), _digest(tmp_path / "b")
    assert a == b and len(a) == sum(counts.values()) == 120
    assert {"news", "formula", "archive", "tag", "section", "brief"} <= set(counts)
    assert len(set(a.values())) == len(a), "two generated pages are byte-identical"


def test_no_two_pages_share_their_main_element(negsite, tmp_path):
    import lxml.html

    negsite.generate(tmp_path, pages=120, seed=3)
    texts = {}
    for path in sorted(tmp_path.glob("*/page.html")):
        main = lxml.html.fromstring(path.read_bytes()).find(".//main")
        text = " ".join(main.text_content().split())
        texts.setdefault(hashlib.sha1(text.encode()).hexdigest(), []).append(path.parent.name)
    assert all(len(v) == 1 for v in texts.values()), [v for v in texts.values() if len(v) > 1]


def test_no_two_items_share_a_sentence_of_their_own(negsite, tmp_path):
    """News items and briefs are distinct: no 8-word run of their paragraphs is on another page's."""
    import lxml.html

    negsite.generate(tmp_path, pages=600, seed=2)
    seen: dict[tuple[str, ...], str] = {}
    shared = []
    for path in sorted([*tmp_path.glob("news-*/page.html"), *tmp_path.glob("brief-*/page.html")]):
        article = lxml.html.fromstring(path.read_bytes()).find(".//article")
        words = " ".join(p.text_content() for p in article.findall("p")
                         if p.get("class") not in ("byline", "tags")).split()
        for gram in {tuple(words[i:i + 8]) for i in range(len(words) - 7)}:
            if seen.setdefault(gram, path.parent.name) != path.parent.name:
                shared.append((seen[gram], path.parent.name))
    assert not shared, sorted(set(shared))[:5]
