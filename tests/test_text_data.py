"""Issue 15 item 6: an installed wheel normalises text exactly as a ``make setup`` checkout does.

Word mapping reads the packaged table (dedup/data/wordmap.tsv.gz), sentences the punkt model of
the PyPI package, stop words the built-in Snowball list; each is compared here with the NLTK data
``make setup`` builds (skipped when it is absent)."""
from __future__ import annotations

import re

import pytest

from crawler.sample_site import PAGES_DIR
from dedup import text


def _nltk_has(resource: str) -> bool:
    try:
        text._nltk().data.find(resource)
        return True
    except LookupError:
        return False


def _mapped(names: list[str], word: str) -> str:
    names = [n for n in names if n.isalpha() and n.islower()]
    return min(names, key=lambda n: (len(n), n)) if names else word


def _vocabulary(wordnet) -> list[str]:
    words = set(re.findall(r"[a-z]+", " ".join(p.read_text(encoding="utf-8").lower()
                                                for p in PAGES_DIR.rglob("*.html"))))
    words |= {w for w in wordnet._lemma_pos_offset_map if w.isalpha()}
    for exceptions in wordnet._exception_map.values():
        words |= {w for w in exceptions if w.isalpha()}
    # inflected forms morphy has to undo
    words |= {w + s for w in list(words)[:20000] for s in ("s", "es", "ed", "ing", "er", "est")}
    return sorted(words)


@pytest.mark.skipif(not _nltk_has("corpora/wordnet"), reason="no NLTK WordNet (make setup builds it)")
def test_packaged_word_map_maps_every_word_as_wordnet_does():
    full = text._load_wordnet()
    packaged = text.PackagedWordNet(text.WORDMAP)
    words = _vocabulary(full)
    assert len(words) > 150_000
    differ = [w for w in words
              if _mapped(full.first_lemma_names(w), w) != _mapped(packaged.first_lemma_names(w), w)]
    assert differ == [], differ[:20]


class _FormerPackagedWordNet:
    """The former PackagedWordNet (a dict a lemma, nltk's own ``_morphy``): the reference the compact
    tables and their direct lookup are compared with."""

    def __init__(self, path) -> None:
        import gzip

        from nltk.corpus.reader.wordnet import POS_LIST, WordNetCorpusReader

        self.MORPHOLOGICAL_SUBSTITUTIONS = WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS
        self._morphy_of = WordNetCorpusReader._morphy
        self._pos_list = POS_LIST
        self._lemma_pos_offset_map: dict[str, dict[str, str]] = {}
        self._exception_map: dict[str, dict[str, list[str]]] = {pos: {} for pos in POS_LIST}
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                fields = line.rstrip("\n").split("\t")
                if fields[0].startswith("!"):
                    self._exception_map[fields[0][1:]][fields[1]] = fields[2:]
                else:
                    self._lemma_pos_offset_map[fields[0]] = dict(f.split("=", 1) for f in fields[1:])

    def first_lemma_names(self, word: str) -> list[str]:
        word = word.lower()
        for pos in self._pos_list:
            for form in self._morphy_of(self, word, pos, True):
                mapped = self._lemma_pos_offset_map[form].get(pos)
                if mapped is not None:
                    return [mapped] if mapped else []
        return []


def test_packaged_word_map_maps_every_word_as_the_former_nltk_morphy_lookup():
    """The compact per-part-of-speech tables with their direct morphy give, for every alphabetic word
    (every lemma, every exception-list word, the sample site's words, inflected forms of all of them,
    words no rule or list knows), what nltk's ``_morphy`` over the former dict a lemma gave."""
    former = _FormerPackagedWordNet(text.WORDMAP)
    packaged = text.PackagedWordNet(text.WORDMAP)
    words = _vocabulary(former)
    words += [w + s for w in words[::7] for s in ("ies", "ves", "men", "ches", "shes", "xes", "zes", "ses")]
    words += ["s", "es", "ed", "ing", "ies", "men", "qzxv", "automobiles", "comics", "Geese", "CHILDREN"]
    assert len(words) > 200_000
    differ = [w for w in words if _mapped(former.first_lemma_names(w), w) != _mapped(packaged.first_lemma_names(w), w)]
    assert differ == [], differ[:20]
    normalizer = text.Normalizer()
    assert [w for w in words if normalizer.map_word(w) != (_mapped(former.first_lemma_names(w), w)
                                                            if w.isalpha() else w)] == []


def test_packaged_word_map_is_small_and_used_by_default():
    assert text.WORDMAP.stat().st_size < 2_000_000
    normalizer = text.Normalizer()
    assert isinstance(normalizer.wordnet, text.PackagedWordNet)
    assert normalizer.map_word("automobiles") == "car"


@pytest.mark.skipif(not _nltk_has("tokenizers/punkt_tab/english/"), reason="no NLTK punkt_tab")
def test_packaged_punkt_splits_as_nltk_punkt():
    import nltk

    split = text._packaged_punkt()
    assert split
    pages = [p.read_text(encoding="utf-8") for p in sorted(PAGES_DIR.rglob("*.html"))]
    sample = " ".join(re.sub(r"<[^>]+>", " ", page) for page in pages)
    sample += " Mr. Smith met Dr. Jones at 5 p.m. on Jan. 3. They left. U.S. officials agreed."
    assert split(sample) == nltk.sent_tokenize(sample)


@pytest.mark.skipif(not _nltk_has("corpora/stopwords"), reason="no NLTK stop words")
def test_built_in_stop_words_are_nltks_list():
    assert text._nltk().corpus.stopwords.words("english") == text._SNOWBALL
