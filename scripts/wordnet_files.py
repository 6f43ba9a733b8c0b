"""WordNet 3.0's ``data.*`` files as Debian's ``wordnet-base`` ships them: what ``build_reference.py``
(the glosses) and ``build_sentence_tables.py`` (lemmas and gloss of each synset) read."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Iterator


def add_argument(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"),
                    help="folder of WordNet's data.* files (default: where wordnet-base puts them)")


def missing(folder: Path) -> str | None:
    """Why ``folder`` cannot be read, or None."""
    if not (folder / "data.noun").is_file():
        return f"no WordNet data under {folder}: apt-get install wordnet-base"
    return None


def synset_lines(folder: Path) -> Iterator[tuple[str, str]]:
    """``(head, gloss)`` of every synset line of the data.* files (nouns, verbs, adjectives, adverbs),
    the licence header left out; ``head`` holds the offset, lexicographer file, type, lemmas and pointers."""
    for pos in ("noun", "verb", "adj", "adv"):
        with (folder / f"data.{pos}").open(encoding="latin-1") as fh:
            for line in fh:
                if line.startswith("  ") or " | " not in line:
                    continue  # licence header
                head, gloss = line.split(" | ", 1)
                yield head, gloss
