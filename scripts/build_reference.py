#!/usr/bin/env python3
"""Build the shipped default reference text: the top tf-idf 3-grams of WordNet 3.0 glosses.

Corpus: the ~117,000 glosses (definitions and example sentences) in the data.*
files of WordNet 3.0, as shipped by Debian's ``wordnet-base`` package (WordNet
licence: free to use, copy and distribute). Each gloss is one document.

    python scripts/build_reference.py [--wordnet /usr/share/wordnet] [-o dedup/data/reference.json]

The genetic trainer (``dedup train-reference``) improves on this tf-idf-only text.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dedup.mrc import ReferenceText  # noqa: E402
from wordnet_files import add_argument, missing, synset_lines  # noqa: E402


def glosses(folder: Path):
    for _, gloss in synset_lines(folder):
        yield gloss.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_argument(ap)
    ap.add_argument("-o", "--output", type=Path, default=Path("dedup/data/reference.json"))
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=150)
    args = ap.parse_args(argv)
    problem = missing(args.wordnet)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    docs = list(glosses(args.wordnet))
    ref = ReferenceText.from_tfidf(
        docs, args.length, args.partitions,
        provenance={"method": "tfidf", "corpus": "WordNet 3.0 glosses (Debian wordnet-base)",
                    "documents": len(docs), "length": args.length, "partitions": args.partitions},
    )
    ref.save(args.output)
    print(f"{ref.id}: {len(docs)} glosses -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
