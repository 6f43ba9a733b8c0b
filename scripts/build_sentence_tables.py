#!/usr/bin/env python3
"""Build the shipped sentence tables of seed 001 (``dedup/data/sentence_tables.npz``).

Corpus: the 117,659 synsets of WordNet 3.0 as shipped by Debian's ``wordnet-base``
(WordNet licence: free to use, copy and distribute). One synset is one unit
(document): its lemmas followed by its gloss, refined by :class:`dedup.explain.sentences.Refiner`
(stop words out, Porter stems). Counted per unit, identical units once:

* unit frequency of every word and of every character 4-gram (the least-frequent
  4-gram representation);
* co-occurrence counts of word pairs (the fuzzy-set correlation c_ij).

To keep the file small, word pairs seen in fewer than 2 synsets or with c_ij < 0.01
are left out (c_ij below that moves a word-sentence correlation by < 1 % per word), and
so are 4-grams seen once (they rank as rarest either way).

    python scripts/build_sentence_tables.py [--wordnet /usr/share/wordnet] [-o dedup/data/sentence_tables.npz]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dedup.explain.sentences import Refiner, SentenceTables  # noqa: E402
from wordnet_files import add_argument, missing, synset_lines  # noqa: E402

_SENSE = re.compile(r"\([a-z]+\)$")  # adjective markers such as "(a)", "(p)"


def synsets(folder: Path):
    """``lemmas ; gloss`` of every synset in WordNet's data.* files."""
    for head, gloss in synset_lines(folder):
        fields = head.split()
        count = int(fields[3], 16)
        lemmas = [_SENSE.sub("", fields[4 + 2 * i]).replace("_", " ") for i in range(count)]
        yield ", ".join(lemmas) + "; " + gloss.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_argument(ap)
    ap.add_argument("-o", "--output", type=Path, default=Path("dedup/data/sentence_tables.npz"))
    ap.add_argument("--min-pair", type=int, default=2, help="co-occurrences below this give c = 0 (default 2)")
    ap.add_argument("--prune-c", type=float, default=0.01, help="pairs with a smaller c are not shipped (0.01)")
    args = ap.parse_args(argv)
    problem = missing(args.wordnet)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    docs = list(synsets(args.wordnet))
    refine = Refiner()
    tables = SentenceTables.from_units(
        (refine(d) for d in docs), min_pair=args.min_pair, prune_pairs=args.min_pair, prune_c=args.prune_c,
        prune_grams=2,
        provenance={"corpus": "WordNet 3.0 synsets, lemmas + gloss (Debian wordnet-base)", "documents": len(docs)})
    tables.save(args.output)
    print(f"{tables.id}: {len(docs)} synsets, {tables.units} distinct units, {len(tables.words)} words, "
          f"{tables.pair_keys.size} pairs, {len(tables.grams)} 4-grams -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
