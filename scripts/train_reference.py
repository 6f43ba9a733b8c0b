#!/usr/bin/env python3
"""Build the shipped default reference text with seed 000's genetic algorithm.

    python scripts/train_reference.py [-o dedup/data/reference.json] [--check]

Training corpus, from two Debian packages (both free to use and redistribute):

* every section of *The Debian Administrator's Handbook* (English HTML of Debian's
  ``debian-handbook``; GPL-2+ or CC-BY-SA-3.0): the prose paragraphs under one heading
  make one document (code listings and screen captures left out), sections under 400
  characters dropped;
* every fifth document of WordNet 3.0's glosses (Debian ``wordnet-base``, WordNet
  licence) grouped 40 at a time in file order, which keeps neighbouring glosses of one
  lexicographer file together.

Two genres, so that the signature is scored on pairs of similar and of dissimilar texts.
Then ``dedup.train.train_reference`` with the defaults of seed 000 (L 1000, P 150,
population 100, 50 generations, 9,000 tf-idf 3-grams, 10% mutation, 80/20 split) and
seed 0. Same packages + same numpy results = the same file; ``--check`` rebuilds it and
says whether it equals the shipped one (byte for byte).

Needs ``apt-get install debian-handbook wordnet-base`` (``make setup`` installs the latter).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HANDBOOK = Path("/usr/share/doc/debian-handbook/html/en-US")
WORDNET = Path("/usr/share/wordnet")
_WS = re.compile(r"\s+")

CORPUS_NAME = ("WordNet 3.0 glosses (Debian wordnet-base, every 5th group of 40) + The Debian Administrator's "
               "Handbook sections (Debian debian-handbook, en-US)")
LICENCES = {"WordNet 3.0": "WordNet 3.0 licence (Princeton University)",
            "The Debian Administrator's Handbook": "GPL-2+ or CC-BY-SA-3.0 (Raphael Hertzog, Roland Mas)"}


def handbook_sections(folder: Path = HANDBOOK, min_chars: int = 400) -> list[str]:
    """One document per heading of the handbook's English HTML: the text of its ``div.para`` paragraphs."""
    import lxml.html

    docs: list[str] = []
    for path in sorted(folder.glob("*.html")):
        current: list[str] = []

        def flush() -> None:
            text = " ".join(current).strip()
            if len(text) >= min_chars:
                docs.append(text)
            current.clear()

        for el in lxml.html.parse(str(path)).iter():
            if not isinstance(el.tag, str):
                continue
            if el.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
                flush()
            elif el.tag == "div" and "para" in (el.get("class") or "").split():
                current.append(_WS.sub(" ", el.text_content()).strip())
        flush()
    return docs


def wordnet_documents(folder: Path = WORDNET, per_document: int = 40, every: int = 1) -> list[str]:
    """Glosses grouped ``per_document`` at a time (within each part of speech); every ``every``-th group."""
    docs: list[str] = []
    for pos in ("noun", "verb", "adj", "adv"):
        with (folder / f"data.{pos}").open(encoding="latin-1") as fh:  # lines of two spaces: licence header
            glosses = [line.split(" | ", 1)[1].strip() for line in fh if not line.startswith("  ") and " | " in line]
        docs.extend(" ".join(glosses[i:i + per_document]) for i in range(0, len(glosses), per_document))
    return docs[::every]


def training_corpus() -> list[str]:
    """The default training corpus (see the module docstring), in a fixed order."""
    return handbook_sections() + wordnet_documents(every=5)


def missing_packages() -> list[str]:
    missing = []
    if not (HANDBOOK / "index.html").is_file():
        missing.append("debian-handbook")
    if not (WORDNET / "data.noun").is_file():
        missing.append("wordnet-base")
    return missing


def main(argv=None) -> int:
    from dedup.mrc import DEFAULT_REFERENCE_PATH
    from dedup.train import TrainConfig, train_reference

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", type=Path, default=DEFAULT_REFERENCE_PATH)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true",
                    help="rebuild into a temporary file and compare it with --output; exit 1 when they differ")
    args = ap.parse_args(argv)
    missing = missing_packages()
    if missing:
        print(f"missing corpus packages: apt-get install {' '.join(missing)}", file=sys.stderr)
        return 2
    docs = training_corpus()
    print(f"{len(docs)} documents", file=sys.stderr)
    config = TrainConfig(seed=args.seed)

    def show(g, total):
        print(f"generation {g.number}/{total}: best MAE {g.best:.4f} ({g.seconds:.2f} s)", file=sys.stderr, flush=True)

    start = time.perf_counter()
    result = train_reference(docs, config, corpus=CORPUS_NAME, on_generation=show,
                             provenance={"licences": LICENCES, "built_by": "scripts/train_reference.py"})
    ref = result.reference
    print(f"{ref.id}: evaluation MAE {result.evaluation_mae:.4f} (tf-idf only {result.tfidf_evaluation_mae:.4f}), "
          f"{result.seconds_per_generation:.2f} s/generation, {time.perf_counter() - start:.0f} s")
    if args.check:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "reference.json"
            ref.save(fresh)
            same = args.output.is_file() and fresh.read_bytes() == args.output.read_bytes()
        print(f"{args.output}: {'identical' if same else 'DIFFERS from the rebuilt text'}")
        return 0 if same else 1
    ref.save(args.output)
    print(f"-> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
