"""An HTML corpus for ``dedup reindex`` benchmarks, seeded from real pages, with its ground truth.

    from reindex_corpus import corpus
    docs, groups = corpus(10_000, seed=1)       # source documents, and id -> group

The real pages are the goldset-dev clusters (every page of a folder is a copy of one story, as
another site published it) and the negatives-dev articles (each its own group), read from
``../shared/data`` at run time and never stored in the repository.  Beyond those, the corpus is
made of, in about these shares:

* **distinct pages** (70%): a real page whose every text run is rewritten with WordNet sentences
  (``sitegen.load_sentences``) of about the same length: real markup, navigation and size, text of
  its own, so a copy of no other document;
* **exact copies** (15%) of an earlier document (same HTML, another URL, crawled later);
* **edited copies** (15%): an earlier document with one paragraph left out and a sentence added.

Each document has ``url``, ``title``, ``html`` and ``crawled`` (epoch seconds; a copy is crawled
after what it copies, so ``--keep oldest`` keeps the first of each group).  ``groups`` maps each
``_id`` to its group: a document is a copy when an earlier one in keep order has its group.
Deterministic for a seed.

Used by: bench_reindex.py; cited by docs/elasticsearch.md ("Throughput").
"""
from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import common
import sitegen

__all__ = ["corpus", "real_pages", "check_data", "accuracy"]

#: ../shared/data beside the checkout, or $DEDUP_DATA (as calibrate.py reads it)
DATA = Path(os.environ.get("DEDUP_DATA") or common.ROOT.parent / "shared" / "data")
KINDS = ("goldset-dev", "negatives-dev")
_TEXT_RUN = re.compile(r">([^<>]{24,})<")
_PARA = re.compile(r"<p[\s>].*?</p>", re.S | re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.S | re.I)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def check_data(data: Path = DATA) -> None:
    """Raise FileNotFoundError, saying where the data goes, unless ``data`` holds goldset-dev and negatives-dev."""
    missing = [kind for kind in KINDS if not (data / kind).is_dir()]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not found in {data}: the reindex corpus is seeded from "
                                f"goldset-dev and negatives-dev (../shared/data beside the checkout, or set DEDUP_DATA)")


def real_pages(data: Path = DATA) -> list[tuple[str, str]]:
    """``(group, html)`` of every goldset-dev and negatives-dev page (sorted: deterministic)."""
    check_data(data)
    out = []
    for kind in KINDS:
        folder = data / kind
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            group = f"{kind}/{f.relative_to(folder).parts[0]}"
            out.append((group, _decode(f.read_bytes())))
    return out


def _rewrite(html: str, sents: list[str], rng: random.Random) -> str:
    """Every text run of ``html`` (24 characters or more) replaced by sentences of about its length."""
    def one(m: re.Match[str]) -> str:
        want, words = len(m.group(1)), []
        while sum(len(w) + 1 for w in words) < want:
            words += rng.choice(sents).split()
        return ">" + sitegen.esc(" ".join(words)[:max(want, 24)]) + "<"

    return _TEXT_RUN.sub(one, html)


def _edit(html: str, sents: list[str], rng: random.Random) -> str:
    """One paragraph left out, a sentence added to another (the page as a second site edits it)."""
    paras = list(_PARA.finditer(html))
    if len(paras) >= 3:
        cut = paras[rng.randrange(len(paras))]
        html = html[:cut.start()] + html[cut.end():]
    m = _TEXT_RUN.search(html, len(html) // 3)
    if m:
        html = html[:m.end(1)] + " " + sitegen.esc(rng.choice(sents)) + html[m.end(1):]
    return html


def corpus(n: int, seed: int = 1, data: Path = DATA) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``n`` source documents (``_id`` in ``id``) and ``_id`` -> group (see the module docstring)."""
    rng = random.Random(seed)
    real = real_pages(data)
    sents = sitegen.load_sentences(20_000)
    docs: list[dict[str, Any]] = []
    groups: dict[str, str] = {}
    start = 1_700_000_000

    def add(group: str, html: str, crawled: int) -> None:
        i = len(docs)
        sid = f"d{i:07d}"
        m = _TITLE.search(html)
        title = re.sub(r"\s+", " ", m.group(1)).strip()[:300] if m else ""
        docs.append({"id": sid, "url": f"http://corpus{i % 97}.invalid/{i:07d}.html", "title": title, "html": html,
                     "crawled": crawled})
        groups[sid] = group

    for group, html in rng.sample(real, min(n, len(real))):  # the real pages, in random time order
        add(group, html, start + rng.randrange(86_400 * 365))
    while len(docs) < n:
        roll = rng.random()
        if roll < 0.7 or len(docs) < 10:
            _, html = rng.choice(real)
            add(f"distinct/{len(docs)}", _rewrite(html, sents, rng), start + rng.randrange(86_400 * 365))
        else:
            src = docs[rng.randrange(len(docs))]
            html = src["html"] if roll < 0.85 else _edit(src["html"], sents, rng)
            add(groups[src["id"]], html, src["crawled"] + 1 + rng.randrange(86_400 * 30))
    return docs, groups


def accuracy(docs: list[dict[str, Any]], groups: dict[str, str],
             verdicts: dict[str, tuple[str, str | None]]) -> dict[str, int]:
    """Copies found and distinct documents wrongly taken for copies, in ``--keep oldest`` order.

    ``verdicts``: ``_id`` -> (status, URL of the document it copies) for every document flagged or
    dropped (others are unique).  A document is a *copy* when an earlier one (by ``crawled``, then URL)
    has its group; a copy is *found* when it is flagged or dropped naming a document of its group; a
    flagged or dropped document that is no copy, or names a document of another group, is *wrong*."""
    order = sorted(docs, key=lambda d: (d["crawled"], d["url"]))
    group_of_url = {d["url"]: groups[d["id"]] for d in docs}
    seen: set[str] = set()
    copies = found = wrong = 0
    for d in order:
        g = groups[d["id"]]
        is_copy = g in seen
        seen.add(g)
        copies += is_copy
        v = verdicts.get(d["id"])
        if v is None or v[0] == "unique":
            continue
        if is_copy and group_of_url.get(v[1] or "") == g:
            found += 1
        else:
            wrong += 1
    return {"copies": copies, "found": found, "wrong": wrong}
