"""The pages the decision is fitted and checked on, run once through the deduplicator and cached.

Every page of a stream goes through :func:`dedup.cli.evaluate.evaluate` (seeded online order, the
deduplicator a crawl uses); what is kept per page is its cluster, whether an earlier page of its
cluster arrived, the verdict's status and rule, the cluster and page of its best candidate and the best
candidate's scores.  Any decision that changes neither what is dropped (only exact duplicates are)
nor which candidate is best can then be replayed from these rows without running the pages again.

The rows are cached as JSON under ``$DEDUP_CALIB_CACHE`` (default ``/tmp/dedup-calib``), keyed by
the pages, the seed, the extractor and the source of ``dedup/`` (a change in features or
extraction recomputes them; a change only in ``dedup/decision.py`` does not).

Used by: calibrate.py, misses.py (the rows they fit and classify).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CACHE = Path(os.environ.get("DEDUP_CALIB_CACHE", "/tmp/dedup-calib"))
#: the rules of the verdicts the decision made (the logit's, and the containment rule's): the rows it is fitted on
DECIDED = ("decision", "below_decision", "containment>=t1", "containment>=t2", "below_t2")
#: what cannot change a row: the decision (replayed from the rows) and the application on top
#: (commands, report, dropped log; dedup/cli/ once they move there). Everything else keys the cache.
_NOT_KEYED = {"decision.py", "report.py", "droplog.py", "cli.py", "train.py"}
_NOT_KEYED_DIRS = {"commands", "cli"}


def source_key() -> str:
    h = hashlib.sha1()
    code = [p for pattern in ("*.py", "*.c", "*.h") for p in (ROOT / "dedup").rglob(pattern)]  # C modules too
    for path in sorted(code):
        if path.name not in _NOT_KEYED and not _NOT_KEYED_DIRS & set(path.relative_to(ROOT / "dedup").parts[:-1]):
            h.update(path.relative_to(ROOT).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _pages_key(folders: list[Path]) -> str:
    h = hashlib.sha1()
    for folder in folders:
        for p in sorted(folder.glob("*/*")):
            st = p.stat()
            h.update(f"{p.relative_to(folder.parent)}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    return h.hexdigest()[:12]


def mixed_folder(name: str, folders: list[Path]) -> Path:
    """One folder whose cluster sub-folders are symlinks to those of ``folders`` (one stream)."""
    out = CACHE / "streams" / name
    out.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        for cluster in sorted(p for p in folder.iterdir() if p.is_dir()):
            link = out / cluster.name
            if not link.exists():
                link.symlink_to(cluster.resolve(), target_is_directory=True)
    return out


def same_site(seed: int, pages: int = 600) -> Path:
    """The same-site negatives of ``negsite.py`` (generated once per seed under the cache)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from negsite import generate

    code = hashlib.sha1(b"".join((ROOT / "benchmarks" / f).read_bytes() for f in ("negsite.py", "sitegen.py")))
    out = CACHE / "negsite" / f"seed{seed}-{pages}-{code.hexdigest()[:8]}"  # a changed generator: new pages
    if not (out / ".done").exists():
        generate(out, pages, seed)
        (out / ".done").write_text("")
    return out


def replayer(folder: Path, seed: int) -> tuple[list, list[int], Any, Any]:
    """``(pages, order, deduplicator, unsketched)`` for replaying ``folder`` as ``dedup evaluate`` does in
    ``seed``'s order: its pages and arrival order, a deduplicator on a fresh MemoryIndex, and a featurizer of
    the same settings keeping every shingle hash (no sketch), for exact containments."""
    import random

    from dedup.cli.evaluate import load_clusters
    from dedup.deduplicator import DedupConfig, Deduplicator
    from dedup.store import MemoryIndex

    pages = load_clusters(folder)
    order = list(range(len(pages)))
    random.Random(seed).shuffle(order)
    config = DedupConfig()
    dedup = Deduplicator(MemoryIndex(k=config.max_distance, blocks=config.blocks), config)
    featurizer = dedup.featurizer
    unsketched = type(featurizer)(weights=config.weights, shingle=config.shingle, sketch=1 << 30,
                                  reference=featurizer.reference, normalizer=featurizer.normalizer)
    return pages, order, dedup, unsketched


def rows(name: str, folders: list[Path], *, seed: int = 7, extractor: str | None = None,
         knn: int | None = None, sentences: bool = False, exact: bool = False,
         verbose: bool = True) -> list[dict[str, Any]]:
    """The cached rows of the stream of ``folders`` (computed when absent). ``extractor``, ``knn``:
    DedupConfig's unless given (a knn other than the default keys the cache too). ``sentences``: each
    decided row's ``chunks`` filled from the pages (:func:`sentence_shares`). ``exact``: each decided row's
    containment measured on the two pages' whole shingle sets, not the sketches (:func:`exact_containments`)."""
    out = _rows(name, folders, seed=seed, extractor=extractor, knn=knn, verbose=verbose)
    out = sentence_shares(out, extractor) if sentences else out
    return exact_containments(out, extractor) if exact else out


def file_features(path: str | Path, config: Any) -> Any:
    """The features of the page in file ``path`` as a crawl makes them with ``config`` (a DedupConfig: its
    extractor, limits and featurizer settings): :func:`dedup.sources.features_from_source`, whose featurizer
    is made once a process for those settings."""
    from dedup.sources import Source, features_from_source

    return features_from_source(Source(url="http://eval.invalid/", html=Path(path).read_bytes()), config)[1]


def sentence_shares(out: list[dict[str, Any]], extractor: str | None = None) -> list[dict[str, Any]]:
    """Seed 003's sentence-chunk share (``scores["chunks"]``, :func:`dedup.deduplicator.chunk_share`) of each
    row's page and its best candidate's page, made from the two pages: a record keeps no sentence simhashes,
    so the deduplicator leaves it None (issue 31's what-if: would records that kept them decide better?).
    The pages' simhashes are cached under ``$DEDUP_CALIB_CACHE/chunks``, keyed as the rows."""
    import pickle

    from dedup.deduplicator import DedupConfig, chunk_share

    config = DedupConfig(**({"extractor": extractor} if extractor else {}))
    path = CACHE / "chunks" / f"{config.extractor}-{source_key()}.pkl"
    made: dict[str, Any] = pickle.loads(path.read_bytes()) if path.exists() else {}
    before = len(made)

    def chunks(page: str) -> Any:
        if page not in made:
            made[page] = file_features(page, config).chunks
        return made[page]

    for r in out:
        if r.get("nearest_path") and r["rule"] in DECIDED:
            r["scores"]["chunks"] = round(chunk_share(chunks(r["path"]), chunks(r["nearest_path"])), 4)
    if len(made) > before:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(made))
    return out


def exact_containments(out: list[dict[str, Any]], extractor: str | None = None) -> list[dict[str, Any]]:
    """Each decided row's ``containment`` measured on its page's and its best candidate's page's whole sets
    of shingles (a featurizer keeping every shingle hash), in place of the sketches' estimate: a what-if of how
    much the sketch (256 keys a page, 128 a record) costs the decision. A pair of which a page has fewer
    than ``min_shingles`` keeps its row's figure (resemblance stands in there, as in a check)."""
    from dedup.deduplicator import DedupConfig, containment

    whole = DedupConfig(**({"extractor": extractor} if extractor else {}), sketch=1 << 30)
    made: dict[str, Any] = {}

    def shingles(page: str) -> Any:
        if page not in made:
            made[page] = file_features(page, whole).shingles
        return made[page]

    for r in out:
        if r.get("nearest_path") and r["rule"] in DECIDED and "containment" in r["scores"]:
            a, b = shingles(r["path"]), shingles(r["nearest_path"])
            if min(a.size, b.size) >= whole.min_shingles:  # whole sets: the check's estimate is exact on them
                r["scores"] = {**r["scores"], "containment": round(containment(a, a.size, b, b.size)[0], 4)}
    return out


def _rows(name: str, folders: list[Path], *, seed: int, extractor: str | None, knn: int | None,
          verbose: bool) -> list[dict[str, Any]]:
    from dedup.deduplicator import DedupConfig
    from dedup.cli.evaluate import evaluate

    config = DedupConfig(**({"extractor": extractor} if extractor else {}), **({"knn": knn} if knn is not None else {}))
    knn_key = "" if config.knn == DedupConfig().knn else f"-knn{config.knn}"
    key = f"{name}-s{seed}-{config.extractor}{knn_key}-{source_key()}-{_pages_key(folders)}"
    path = CACHE / "rows" / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    folder = folders[0] if len(folders) == 1 else mixed_folder(name, folders)
    t0 = time.perf_counter()
    report = evaluate(folder, seed=seed, config=config, one_site=name.startswith("site"))
    out = []
    path_of = {o.url: o.path for o in report.outcomes}
    for o in report.outcomes:
        v = o.verdict
        nearest = v.nearest or v.duplicate_of or v.scores.get("candidate", "")
        out.append({"cluster": o.cluster, "path": o.path, "had_earlier": o.had_earlier, "status": v.status,
                    "rule": v.rule, "best_cluster": o.best_cluster, "extraction": v.extraction,
                    "nearest_path": path_of.get(nearest),
                    "scores": {k: val for k, val in v.scores.items() if k != "candidate"}})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(path)
    if verbose:
        print(f"# {name}: {len(out)} pages run through the deduplicator in {time.perf_counter() - t0:.0f} s "
              f"(cached: {path})", file=sys.stderr)
    return out


def candidate_rows(name: str, folders: list[Path], *, seed: int = 7, verbose: bool = True) -> list[dict[str, Any]]:
    """Every page of the stream with all its candidates, not only the best (issue 31's what-ifs of
    ``calibrate.py --group``): per page its cluster, URL, status, rule, ``nearest`` (the best candidate's
    URL) and ``kept``, the query's sketch size (``qkeys``, ``qtotal``), and per candidate the reducer passed:
    its URL, cluster, the scores a verdict gives its best candidate, ``hit`` (the positions of the page's
    sketch keys it holds) and ``cut`` (how many of the page's sketch keys lie within its sketch's range).
    Cached under ``$DEDUP_CALIB_CACHE/cands`` as :func:`rows` (DedupConfig's defaults)."""
    import numpy as np

    from dedup.cli.evaluate import page_url
    from dedup.decision import title_similarity
    from dedup.deduplicator import containment_many
    from dedup.page import parse_page

    key = f"{name}-s{seed}-{source_key()}-{_pages_key(folders)}"
    path = CACHE / "cands" / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    folder = folders[0] if len(folders) == 1 else mixed_folder(name, folders)
    pages, order, dedup, _ = replayer(folder, seed)
    stash: dict[str, Any] = {}
    pruned = dedup._pruned

    def keep(q: Any, records: list) -> list[bool]:  # the candidates the reducer passed, with the page's query
        out = pruned(q, records)
        stash["q"], stash["recs"] = q, [r for r, o in zip(records, out) if not o]
        return out

    dedup._pruned = keep  # type: ignore[method-assign]
    url_cluster: dict[str, str] = {}
    seen: set[str] = set()
    out = []
    t0 = time.perf_counter()
    for i in order:
        cluster, file = pages[i]
        url = page_url(i, name.startswith("site"))  # as dedup.cli.evaluate names them
        url_cluster[url] = cluster
        page = parse_page(file.read_bytes(), url, extractor=dedup.config.extractor)
        stash.clear()
        v = dedup.process(page)
        cands, q = [], stash.get("q")
        if q is not None and stash["recs"]:
            recs, qa = stash["recs"], np.asarray(q.shingles)
            found = containment_many(q.shingles, q.shingle_count, [r.shingles for r in recs],
                                     [r.shingle_count for r in recs], min_size=dedup.config.min_shingles)
            for rec, (cont, res) in zip(recs, found):
                s = dedup._scores(q, rec, cont, res, q.cosine(rec))
                s["title"] = round(title_similarity(q.title, rec.title), 4)
                s["listing"] = max(q.list_share, float(rec.extra.get("list_share", 0.0)))
                rb = np.asarray(rec.shingles)
                full = rec.shingle_count <= rb.size or not rb.size
                cands.append({"url": rec.url, "cluster": url_cluster[rec.url], "scores": s,
                              "hit": np.flatnonzero(np.isin(qa, rb)).tolist(),
                              "cut": int(qa.size) if full else int(np.searchsorted(qa, rb[-1], side="right"))})
        nearest = v.nearest or v.duplicate_of or v.scores.get("candidate", "")
        out.append({"cluster": cluster, "path": str(file), "url": url, "had_earlier": cluster in seen,
                    "status": v.status, "rule": v.rule, "kept": v.kept, "nearest": nearest,
                    "best_cluster": url_cluster.get(nearest), "cands": cands,
                    **({"qkeys": int(np.asarray(q.shingles).size), "qtotal": int(q.shingle_count)} if q is not None else {})})
        seen.add(cluster)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(path)
    if verbose:
        print(f"# {name}: {len(out)} pages and their candidates in {time.perf_counter() - t0:.0f} s (cached: {path})",
              file=sys.stderr)
    return out
