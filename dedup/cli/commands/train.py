"""``dedup train-reference``: train a reference text with seed 000's genetic algorithm."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import progress

__all__ = ["register"]


def _generation_printer(total: int):
    """Per-generation report on stderr: a tqdm bar on a terminal, one line per generation otherwise."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=total, desc="train-reference", unit="gen", file=sys.stderr, dynamic_ncols=True)

        def show(g, _total: int) -> None:
            bar.set_postfix_str(f"best MAE {g.best:.4f}  {g.seconds:.2f} s/gen", refresh=False)
            if g.number:
                bar.update(1)
            else:
                bar.refresh()

        return show, bar.close

    def line(g, total: int) -> None:
        what = "initial population" if g.number == 0 else f"generation {g.number}/{total}"
        print(f"{what}: best MAE {g.best:.4f}, mean {g.mean:.4f}, {g.seconds:.2f} s", file=sys.stderr, flush=True)

    return line, lambda: None


def cmd_train(args: argparse.Namespace) -> int:
    import numpy as np

    from ...mrc import gram_counts
    from ...train import TrainConfig, load_corpus, mae_of_reference, train_reference

    config = TrainConfig(length=args.length, partitions=args.partitions, population=args.population,
                         generations=args.generations, pool=args.pool, mutation=args.mutation,
                         mutation_rate=args.mutation_rate, sample=args.sample, eval_sample=args.eval_sample,
                         holdout=args.holdout, target=args.target, seed=args.seed)
    config.check()
    docs = load_corpus(args.corpus, field=args.field, progress=progress("reading corpus"))
    if not args.json:
        print(f"{len(docs)} documents from {args.corpus}", file=sys.stderr)
    show, close = _generation_printer(config.generations)
    try:
        result = train_reference(docs, config, corpus=args.name or Path(args.corpus).name, on_generation=show)
    finally:
        close()
    ref = result.reference
    tests = []
    for path in args.test or ():
        test_docs = load_corpus(path, field=args.field, progress=progress(f"reading {Path(path).name}"))
        counts = [c for c in (gram_counts(d) for d in test_docs) if c[0].size]
        if len(counts) > args.eval_sample:
            keep = np.sort(np.random.default_rng(args.seed).choice(len(counts), args.eval_sample, replace=False))
            counts = [counts[i] for i in keep]
        tests.append({"corpus": str(path), "documents": len(counts),
                      "mae": round(mae_of_reference(ref, counts), 6),
                      "tfidf_mae": round(mae_of_reference(result.tfidf, counts), 6)})
    if tests:
        ref.provenance["tests"] = tests
    ref.save(args.output)
    summary = {"id": ref.id, "output": str(args.output), "documents": len(docs),
               "generations": result.history[-1].number, "fitness_mae": round(result.fitness_mae, 6),
               "evaluation_mae": round(result.evaluation_mae, 6),
               "tfidf_fitness_mae": round(result.tfidf_fitness_mae, 6),
               "tfidf_evaluation_mae": round(result.tfidf_evaluation_mae, 6),
               "seconds": round(result.seconds, 2),
               "seconds_per_generation": round(result.seconds_per_generation, 3), "tests": tests}
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{ref.id} -> {args.output}")
    print(f"generations {summary['generations']}  {summary['seconds_per_generation']} s/generation  "
          f"({summary['seconds']} s in all)")
    print("MAE (Eq. 1)      trained   tf-idf only")
    print(f"fitness part     {result.fitness_mae:7.4f}   {result.tfidf_fitness_mae:7.4f}")
    print(f"evaluation part  {result.evaluation_mae:7.4f}   {result.tfidf_evaluation_mae:7.4f}")
    for t in tests:
        print(f"{t['corpus']} ({t['documents']} documents)  {t['mae']:7.4f}   {t['tfidf_mae']:7.4f}")
    print(f"use it: DEDUP_REFERENCE={args.output} (new indexes only: an index keeps the reference it was built with)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    tr = sub.add_parser(
        "train-reference", help="train a multireference-cosine reference text on a corpus (seed 000's genetic algorithm)",
        description="Train a reference text: top tf-idf 3-grams of CORPUS, single-cut crossover, 10% mutation, "
                    "fitness = mean absolute error between the multireference cosine and the full 3-gram cosine "
                    "over document pairs (Eq. 1); 80% of the corpus scores, 20% evaluates the winner.")
    tr.add_argument("corpus", help="a folder (every *.txt/*.md file is a document, every *.htm/*.html page's main "
                                   "text is one), a JSON-lines file (one object per line, text in --field, e.g. a "
                                   "crawl's -O items.jsonl), a JSON list, or a text file (one document per line)")
    tr.add_argument("-o", "--output", required=True, type=Path, help="reference-text file to write (JSON)")
    tr.add_argument("--length", type=int, default=1000, help="3-grams per reference text, L (default 1000)")
    tr.add_argument("--partitions", type=int, default=150, help="partitions, P = signature size (default 150)")
    tr.add_argument("--population", type=int, default=100, help="reference texts per generation (default 100)")
    tr.add_argument("--generations", type=int, default=50, help="generations at most, G (default 50)")
    tr.add_argument("--pool", type=int, default=9000, help="top tf-idf 3-grams the texts are made of (default 9000)")
    tr.add_argument("--mutation", type=float, default=0.1, help="share of a text's 3-grams a mutation replaces (0.1)")
    tr.add_argument("--mutation-rate", type=float, default=1.0, help="share of children mutated (default 1.0)")
    tr.add_argument("--sample", type=int, default=200,
                    help="documents of the fitness part scored pairwise each generation (default 200)")
    tr.add_argument("--eval-sample", type=int, default=400,
                    help="documents of the evaluation part (and of each --test corpus) scored at the end (default 400)")
    tr.add_argument("--holdout", type=float, default=0.2, help="share of the corpus kept for evaluation (default 0.2)")
    tr.add_argument("--target", type=float, help="stop once the best fitness MAE is at or below this")
    tr.add_argument("--seed", type=int, default=0, help="random seed (default 0): same corpus + seed = same text")
    tr.add_argument("--field", default="text", help="text field of JSON documents (default text)")
    tr.add_argument("--name", help="corpus name recorded in the provenance (default: CORPUS's file name)")
    tr.add_argument("--test", action="append", metavar="CORPUS",
                    help="also report the MAE on this corpus (not used for training); repeatable")
    tr.add_argument("--json", action="store_true", help="print one JSON object")
    tr.set_defaults(func=cmd_train)
