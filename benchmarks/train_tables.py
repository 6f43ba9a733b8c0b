#!/usr/bin/env python3
"""Seed 000's Tables 1-4 on the corpora available here, for ``dedup train-reference``.

    python benchmarks/train_tables.py              # short run (about a minute plus parsing goldset-dev)
    python benchmarks/train_tables.py --full       # seed 000's settings: population 100, 50 generations
    python benchmarks/train_tables.py --full --seeds 0,1,2 --tables 1,4

Corpora (see scripts/train_reference.py): ``handbook`` (sections of The Debian
Administrator's Handbook, Debian ``debian-handbook``), ``wordnet`` (WordNet 3.0 glosses
grouped 40 at a time, Debian ``wordnet-base``) and ``mix`` (the shipped default's
training corpus: all handbook sections + every 5th WordNet document). Out-of-domain
test sets: the other corpora, the sample site's pages (main text), and
``../shared/data/goldset-dev`` (main text of each page, as a crawl extracts it; used
for evaluation only, skipped when absent).

Every MAE is Eq. 1 over all pairs of the documents named (at most ``--eval-sample``
of them, drawn with the seed): "eval" is the 20% of the training corpus the trainer
kept apart; "tf-idf" is the top-L tf-idf 3-grams of the same fitness part (the
trainer's starting pool, no genetic algorithm). Cells over several seeds show the
mean and, in brackets, the range.

Tables:
  1  population size (50/100/150; short run 10/20/30) -> MAE and seconds per generation
  2  train = test corpus (the 20% evaluation part), trained vs tf-idf only
  3  trained on one corpus, tested on the others (seed 000's Table 3)
  4  reference length (450/600/1000) x partitions (100/150/300)

Cited by: docs/training.md."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from dedup.mrc import gram_counts  # noqa: E402
from dedup.train import TrainConfig, load_corpus, mae_of_reference, train_reference  # noqa: E402

GOLDSET = ROOT.parent / "shared" / "data" / "goldset-dev"
SAMPLE_SITE = ROOT / "crawler" / "sample_site" / "pages"


def corpora(names: list[str]) -> dict[str, list[str]]:
    import train_reference as tr

    missing = tr.missing_packages()
    if missing:
        raise SystemExit(f"missing corpus packages: apt-get install {' '.join(missing)}")
    make = {"handbook": tr.handbook_sections, "wordnet": tr.wordnet_documents, "mix": tr.training_corpus}
    return {n: make[n]() for n in names}


def test_sets(train: dict[str, list[str]], eval_sample: int, seed: int) -> dict[str, list]:
    """Gram counts of every out-of-domain test set, at most ``eval_sample`` documents each."""
    sets: dict[str, list[str]] = {}
    for name in ("handbook", "wordnet"):
        sets[name] = train[name] if name in train else corpora([name])[name]
    t = time.perf_counter()
    sets["sample-site"] = load_corpus(SAMPLE_SITE)
    if GOLDSET.is_dir():
        sets["goldset-dev"] = load_corpus(GOLDSET)
    else:
        print(f"({GOLDSET} absent: no goldset-dev column)", file=sys.stderr)
    print(f"(parsed the HTML test sets in {time.perf_counter() - t:.0f} s)", file=sys.stderr)
    out = {}
    for name, docs in sets.items():
        counts = [c for c in (gram_counts(d) for d in docs) if c[0].size]
        if len(counts) > eval_sample:
            keep = np.sort(np.random.default_rng(seed).choice(len(counts), eval_sample, replace=False))
            counts = [counts[i] for i in keep]
        out[name] = counts
    return out


class Runs:
    """Training runs, cached by (corpus, length, partitions, population, seed)."""

    def __init__(self, docs: dict[str, list[str]], tests: dict[str, list], base: TrainConfig) -> None:
        self.docs, self.tests, self.base = docs, tests, base
        self.cache: dict[tuple, dict] = {}

    def get(self, corpus: str, seed: int, **overrides) -> dict:
        cfg = TrainConfig(**{**self.base.__dict__, **overrides, "seed": seed})
        key = (corpus, seed, cfg.length, cfg.partitions, cfg.population)
        if key not in self.cache:
            r = train_reference(self.docs[corpus], cfg, corpus=corpus)
            row = {"corpus": corpus, "seed": seed, **{k: getattr(cfg, k) for k in ("length", "partitions", "population")},
                   "generations": r.history[-1].number, "fitness": r.fitness_mae, "eval": r.evaluation_mae,
                   "tfidf_eval": r.tfidf_evaluation_mae, "s_per_gen": r.seconds_per_generation, "seconds": r.seconds,
                   "tests": {n: mae_of_reference(r.reference, c) for n, c in self.tests.items() if n != corpus},
                   "tfidf_tests": {n: mae_of_reference(r.tfidf, c) for n, c in self.tests.items() if n != corpus}}
            print(f"  ran {corpus} seed {seed} {overrides or ''}: eval MAE {row['eval']:.4f}, "
                  f"{row['s_per_gen']:.2f} s/gen, {r.seconds:.0f} s", file=sys.stderr, flush=True)
            self.cache[key] = row
        return self.cache[key]


def cell(values: list[float], digits: int = 4) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def table(title: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [f"\n### {title}\n", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="seed 000's settings (population 100, 50 generations)")
    ap.add_argument("--tables", default="1,2,3,4", help="which tables (default 1,2,3,4)")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds; cells show mean [min-max] (default 0)")
    ap.add_argument("--corpus", default="mix", help="training corpus of Tables 1 and 4 (default mix)")
    ap.add_argument("--eval-sample", type=int, default=400, help="documents per test set (default 400)")
    ap.add_argument("--json", type=Path, help="also write every run as JSON here")
    args = ap.parse_args(argv)
    tables = {int(t) for t in args.tables.split(",")}
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.full:
        base, pops = TrainConfig(eval_sample=args.eval_sample), (50, 100, 150)
    else:
        base = TrainConfig(population=20, generations=10, sample=100, eval_sample=args.eval_sample)
        pops = (10, 20, 30)
    names = sorted({args.corpus} | ({"handbook", "wordnet", "mix"} if tables & {2, 3} else set()))
    docs = corpora(names)
    tests = test_sets(docs, args.eval_sample, seeds[0])
    runs = Runs(docs, tests, base)
    print(f"# Training tables ({'full' if args.full else 'short'} run: population {base.population}, "
          f"{base.generations} generations, {base.sample} documents scored per generation "
          f"({base.sample * (base.sample - 1) // 2} pairs); seeds {args.seeds})")
    print("corpora: " + ", ".join(f"{n} {len(d)} documents" for n, d in docs.items()) + "; test sets: "
          + ", ".join(f"{n} {len(c)}" for n, c in tests.items()))
    gold = "goldset-dev" if "goldset-dev" in tests else None

    if 1 in tables:
        rows = []
        for pop in pops:
            rs = [runs.get(args.corpus, s, population=pop) for s in seeds]
            rows.append([args.corpus, str(pop), cell([r["eval"] for r in rs]),
                         cell([r["tests"][gold] for r in rs]) if gold else "-",
                         cell([r["s_per_gen"] for r in rs], 2)])
        print(table("Table 1: population size", ["train corpus", "population", "MAE (eval part)",
                                                  "MAE goldset-dev", "s per generation"], rows))
    if 2 in tables:
        rows = []
        for name in ("handbook", "wordnet", "mix"):
            rs = [runs.get(name, s) for s in seeds]
            rows.append([name, name, cell([r["eval"] for r in rs]), cell([r["tfidf_eval"] for r in rs])])
        print(table("Table 2: train and test on the same corpus (20% evaluation part)",
                    ["train corpus", "test corpus", "MAE trained", "MAE tf-idf only"], rows))
    if 3 in tables:
        rows = []
        for name in ("handbook", "wordnet", "mix"):
            rs = [runs.get(name, s) for s in seeds]
            for test in tests:
                if test == name or (name == "mix" and test in ("handbook", "wordnet")):
                    continue
                rows.append([name, test, cell([r["tests"][test] for r in rs]),
                             cell([r["tfidf_tests"][test] for r in rs])])
        print(table("Table 3: trained on one corpus, tested on another",
                    ["train corpus", "test corpus", "MAE trained", "MAE tf-idf only"], rows))
    if 4 in tables:
        rows = []
        for length in (450, 600, 1000):
            for parts in (100, 150, 300):
                rs = [runs.get(args.corpus, s, length=length, partitions=parts) for s in seeds]
                rows.append([str(length), str(parts), cell([r["eval"] for r in rs]),
                             cell([r["tests"][gold] for r in rs]) if gold else "-",
                             cell([r["tfidf_eval"] for r in rs])])
        print(table(f"Table 4: reference length x partitions (trained on {args.corpus})",
                    ["length (3-grams)", "partitions", "MAE (eval part)", "MAE goldset-dev", "MAE tf-idf only (eval)"],
                    rows))
    if args.json:
        args.json.write_text(json.dumps(list(runs.cache.values()), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
