"""The online (crawl-order) metric over a folder of near-duplicate clusters.

Layout: ``DIR/<cluster>/*.htm*`` — every page in a cluster copies the same story.
Pages arrive one at a time in a seeded random order; each goes through the same
:class:`~dedup.deduplicator.Deduplicator` a crawl uses (checked against what was
kept so far, then added unless dropped). A page dropped or flagged must have been
matched with a page of its own cluster (``nearest``, the page it was compared with;
``duplicate_of`` names that page's root, which is the same page unless it is itself a copy).

precision = flagged-or-dropped pages whose match (nearest) is in their cluster / flagged-or-dropped
recall    = those correct ones / pages that had an earlier page of their cluster

Page URLs are synthetic (``http://p<N>.eval.invalid/``, a host each, as the pages come from many sites) so
that folder and file names, which name the cluster, cannot leak into the URL-token feature.
"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..deduplicator import DedupConfig, Deduplicator, Verdict
from ..mrc import DEFAULT_REFERENCE_PATH, REFERENCE_ENV, ReferenceText
from ..page import parse_page
from ..store import MemoryIndex

__all__ = ["load_clusters", "evaluate", "metric", "Outcome", "reference_used"]

PAGE_SUFFIXES = (".htm", ".html", ".xhtml")


def load_clusters(folder: str | Path) -> list[tuple[str, Path]]:
    """``(cluster, path)`` for every page, sorted by path."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"no such evaluation folder: {root}")
    pages = sorted((p.parent.name, p) for p in root.glob("*/*") if p.suffix.lower() in PAGE_SUFFIXES)
    if not pages:
        raise ValueError(f"{root} holds no <cluster>/*.htm pages")
    return pages


def page_url(i: int, one_site: bool = False) -> str:
    """The synthetic URL of the ``i``-th page of a folder: ``http://p<i>.eval.invalid/``, a host of its own (the
    exact-copy rule reads hosts: dedup.deduplicator._site_text), or ``http://eval.invalid/p<i>`` on one site."""
    return f"http://eval.invalid/p{i}" if one_site else f"http://p{i}.eval.invalid/"


@dataclass
class Outcome:
    cluster: str
    path: str
    url: str
    verdict: Verdict
    had_earlier: bool
    best_cluster: str | None = None


@dataclass
class Report:
    outcomes: list[Outcome]
    seconds: float
    seed: int
    config: DedupConfig
    reference: dict[str, Any] = field(default_factory=dict)  # id, file, corpus of the reference text used


def evaluate(folder: str | Path, *, seed: int = 7, config: DedupConfig | None = None,
             progress: Callable[[int, int], None] | None = None, one_site: bool = False) -> Report:
    """Run the online metric; return every page's verdict in arrival order. Each page has a host of its own
    (:func:`page_url`), as the Gold Set's and negatives-dev's pages come from many sites; ``one_site``: all
    on one host, as a site's pages are (the same-site negatives of ``benchmarks/negsite.py``)."""
    pages = load_clusters(folder)
    order = list(range(len(pages)))
    random.Random(seed).shuffle(order)
    config = config or DedupConfig()
    dedup = Deduplicator(MemoryIndex(k=config.max_distance, blocks=config.blocks), config)
    url_cluster: dict[str, str] = {}
    seen: set[str] = set()
    outcomes: list[Outcome] = []
    start = time.perf_counter()
    for n, i in enumerate(order, 1):
        cluster, path = pages[i]
        url = page_url(i, one_site)
        url_cluster[url] = cluster
        page = parse_page(path.read_bytes(), url, extractor=config.extractor)
        verdict = dedup.process(page)
        outcomes.append(Outcome(cluster, str(path), url, verdict, cluster in seen,
                                url_cluster.get(verdict.nearest or verdict.duplicate_of or verdict.scores.get("candidate", ""))))
        seen.add(cluster)
        if progress:
            progress(n, len(order))
    return Report(outcomes, time.perf_counter() - start, seed, config,
                  reference_used(dedup.featurizer.reference))


def reference_used(ref: ReferenceText) -> dict[str, Any]:
    """``{"id", "file", "corpus"}`` of the reference text the signatures were made with: the file
    from ``$DEDUP_REFERENCE`` or the shipped one, and the corpus its provenance names."""
    chosen = os.environ.get(REFERENCE_ENV)
    return {"id": ref.id, "file": chosen or str(DEFAULT_REFERENCE_PATH),
            "from": f"${REFERENCE_ENV}" if chosen else "shipped", "corpus": ref.provenance.get("corpus")}


def metric(outcomes: Iterable[Outcome], flagged: Callable[[Outcome], bool] | None = None) -> dict[str, Any]:
    """precision / recall / F1 of the outcomes (``flagged`` decides what counts as flagged)."""
    flagged = flagged or (lambda o: o.verdict.status != "unique")
    n_flag = n_ok = n_rel = 0
    false_pos: list[Outcome] = []
    misses: list[Outcome] = []
    for o in outcomes:
        n_rel += o.had_earlier
        if flagged(o):
            n_flag += 1
            if o.best_cluster == o.cluster:
                n_ok += 1
            else:
                false_pos.append(o)
        elif o.had_earlier:
            misses.append(o)
    p = n_ok / n_flag if n_flag else 1.0
    r = n_ok / n_rel if n_rel else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4), "flagged": n_flag,
            "correct": n_ok, "relevant": n_rel, "false_positives": false_pos, "misses": misses}


def sweep(report: Report, thresholds: Iterable[float]) -> list[dict[str, Any]]:
    """The metric at other near-duplicate thresholds t2, from one run.

    Valid because t2 does not change which pages are kept (only exact duplicates
    are dropped) and so does not change any page's best candidate.
    """
    rows = []
    for t in thresholds:
        def flagged(o: Outcome, t: float = t) -> bool:
            v = o.verdict
            return v.status == "exact_duplicate" or v.scores.get("containment", 0.0) >= t

        m = metric(report.outcomes, flagged)
        rows.append({"t2": round(t, 4), **{k: m[k] for k in ("precision", "recall", "f1", "flagged")}})
    return rows
