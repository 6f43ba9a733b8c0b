#!/usr/bin/env python3
"""Build dedup/data/wordmap.tsv.gz: what word mapping needs from WordNet 3.0, in ~1 MB.

    NLTK_DATA=.nltk_data .venv/bin/python scripts/build_wordmap.py [OUT]

Word mapping (seed 002, :meth:`dedup.text.Normalizer.map_word`) looks a token up with WordNet's
morphy, takes the first synset of the first part of speech (noun, verb, adjective, adverb) that
has one, and keeps the shortest single-word lowercase lemma. That needs, per lemma and part of
speech, only the word that first synset maps to, plus morphy's exception lists. This script
writes both from the full WordNet that ``make setup`` builds (the Debian packages), so an
installed wheel maps words exactly as a ``make setup`` checkout does without shipping ~30 MB of
WordNet (tests/test_text_data.py compares the two). Lines, tab-separated:

    lemma  POS=MAPPED [POS=MAPPED ...]      MAPPED empty: no single-word lowercase lemma
    !POS   inflected  base [base ...]         morphy's exception list of POS
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    from nltk.corpus.reader.wordnet import POS_LIST

    from dedup.text import _load_wordnet

    out = Path(argv[0]) if argv else ROOT / "dedup" / "data" / "wordmap.tsv.gz"
    wn = _load_wordnet()
    lines = []
    for lemma in sorted(wn._lemma_pos_offset_map):
        entries = []
        for pos in POS_LIST:
            offsets = wn._lemma_pos_offset_map[lemma].get(pos)
            if not offsets:
                continue
            synset_names = wn.synset_from_pos_and_offset(pos, offsets[0]).lemma_names()
            names = [n for n in synset_names if n.isalpha() and n.islower()]
            entries.append(f"{pos}={min(names, key=lambda n: (len(n), n)) if names else ''}")
        if entries:
            lines.append("\t".join([lemma, *entries]))
    for pos in POS_LIST:
        for inflected, bases in sorted(wn._exception_map[pos].items()):
            lines.append("\t".join([f"!{pos}", inflected, *bases]))
    # mtime=0: the same input gives the same bytes
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"{out}: {len(lines)} lines, {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
