import logging

import pytest

from dedup import text as text_mod
from dedup.text import Normalizer, split_sentences, tokenize
from dedup.workers import ProcessState


def test_tokenize_unicode_scripts():
    assert tokenize("Привет, мир! Straße") == ["привет", "мир", "straße"]
    assert tokenize("مرحبا بالعالم") == ["مرحبا", "بالعالم"]
    # CJK runs become overlapping character bigrams instead of one giant token
    assert tokenize("東京都") == ["東京", "京都"]
    assert tokenize("日") == ["日"]
    assert tokenize("don't stop") == ["don't", "stop"]


def test_marks_typed_for_an_apostrophe_are_one_inside_a_word():
    # goldset-dev's Media_Savvy pages: "Bindi‘s" (a left quote, cp1252 0x91) on one site, "Bindi's" on another
    for word in ("Bindi's", "Bindi’s", "Bindi‘s", "Bindiʼs", "Bindi´s", "Bindi`s"):
        assert tokenize(f"{word} father") == ["bindi's", "father"], word
    # a quote mark outside a word still separates as before
    assert tokenize("‘quoted’ and `ticked` ´accent´") == ["quoted", "and", "ticked", "accent"]
    assert tokenize("rock ‘n’ roll") == ["rock", "n", "roll"]


def test_normalizer_stopwords_stemming_and_mapping():
    n = Normalizer()
    assert n.terms("the of and") == []
    if n.word_mapping:
        # seed 002: shortest lowercase single-word synonym of the first synset, then Porter
        assert n.map_word("automobile") == "car"
        assert n.terms("automobiles") == ["car"]
    assert Normalizer(word_mapping=False).terms("running cars") == ["run", "car"]


def test_original_porter_algorithm():
    n = Normalizer(word_mapping=False)
    # the original algorithm keeps "generously" -> "gener"; NLTK's extensions give "generous"
    assert n.term("generously") == "gener"


def _no_wordnet():
    # stands in for an NLTK data path without WordNet (cannot be staged in-process once loaded)
    raise LookupError("Resource wordnet not found")


def test_missing_wordnet_warns_once(monkeypatch, caplog):
    monkeypatch.setattr(text_mod, "_load_packaged_wordnet", _no_wordnet)
    monkeypatch.setattr(text_mod, "_load_wordnet", _no_wordnet)
    monkeypatch.setattr(text_mod, "this_process", ProcessState())  # a process that has warned of nothing yet
    with caplog.at_level(logging.WARNING, logger="dedup.text"):
        assert not Normalizer(stopwords=False).word_mapping
        assert not Normalizer(stopwords=False).word_mapping
    assert sum("word mapping is off" in r.getMessage() for r in caplog.records) == 1


def test_required_wordnet_missing_raises(monkeypatch):
    monkeypatch.setattr(text_mod, "_load_packaged_wordnet", _no_wordnet)
    monkeypatch.setattr(text_mod, "_load_wordnet", _no_wordnet)
    with pytest.raises(LookupError, match="make setup"):
        Normalizer(word_mapping=True, stopwords=False)


def test_split_sentences():
    got = split_sentences("Dr. Smith arrived. He left at 5 p.m. on Monday!\nA new line here")
    assert got[-1] == "A new line here"
    assert len(got) >= 3


def _nltk_wordnet():
    """WordNet as nltk itself loads it (only the multilingual mapping skipped, as ours does)."""
    import warnings

    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class Reference(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Reference(text_mod._nltk().data.find("corpora/wordnet"), None)


def test_fast_wordnet_reader_loads_what_nltk_loads():
    # our reader parses WordNet's index and adjective files with plain I/O (4x faster start-up):
    # the maps must be nltk's; _first_offset() must be where synsets()[0] is, and first_lemma_names()
    # (read straight from the data file) its lemma names; "fairest" is an adjective with a marker
    try:
        ours = text_mod._load_wordnet()
    except LookupError:
        pytest.skip("WordNet not built (make setup)")
    ref = _nltk_wordnet()
    assert ours.satellite_offsets == ref.satellite_offsets
    assert dict(ours._lemma_pos_offset_map) == dict(ref._lemma_pos_offset_map)
    words = ["automobiles", "running", "better", "geese", "happily", "was", "ran", "news", "quickest",
             "children", "data", "xyzzy", "united", "bank", "saw", "leaves", "fairest", "axes"]
    for word in words:
        expected = ref.synsets(word)
        found = ours._first_offset(word)
        assert (found[1] if found else None) == (expected[0].offset() if expected else None), word
        assert ours.first_lemma_names(word) == (expected[0].lemma_names() if expected else []), word


def test_porter_stemmer_equals_nltk_original_on_wordnet_lemmas():
    # the C stemmer must give nltk's PorterStemmer(mode=ORIGINAL_ALGORITHM) on every alphabetic lemma
    import pytest
    from nltk.stem.porter import PorterStemmer

    from dedup.text import _PorterStemmer

    try:
        from nltk.corpus import wordnet
        words = sorted({w.lower() for w in wordnet.all_lemma_names() if w.isalpha()})
    except LookupError:
        pytest.skip("WordNet not installed")
    ours, nltk_stem = _PorterStemmer(), PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)
    assert len(words) > 70_000
    assert [w for w in words if ours.stem(w) != nltk_stem.stem(w)] == []
    assert ours.stem("café") == nltk_stem.stem("café")



def test_porter_stemmer_equals_nltk_original_on_non_ascii_words():
    """A non-ASCII word that does not end in an ASCII letter is only lowercased (no rule of Porter's applies):
    the same as nltk's steps on random words of ASCII and other letters, and on capitals whose lowercase is
    ASCII (the Kelvin sign) or longer (a dotted capital I)."""
    import random

    from nltk.stem.porter import PorterStemmer

    from dedup.text import _PorterStemmer

    ours, nltk_stem = _PorterStemmer(), PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)
    rng = random.Random(5)
    letters = list("aeiouyslzbcdgnrtw") + list("éèüñßøçİΣσςдж日本ह\u212a\u0301")
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 9))) for _ in range(20_000)]
    words += ["café", "condé", "systèmes", "阅读", "ह", "naïve", "\u212a", "ab\u212a", "caf\u00c9", "İs", "sİ"]
    words = [w for w in words if not w.isascii()]
    assert len(words) > 15_000
    assert [w for w in words if ours.stem(w) != nltk_stem.stem(w)] == []
    assert any(not ("a" <= w.lower()[-1] <= "z") for w in words) and any("a" <= w.lower()[-1] <= "z" for w in words)

def test_language_data_is_loaded_once_per_process_and_kept_by_it():
    """punkt, WordNet and the reference text are kept by the process's ProcessState, not module globals:
    every Normalizer and every split shares them; a SentenceSplitter keeps its own line cache."""
    from dedup.mrc import default_reference
    from dedup.workers import this_process

    split_sentences("Warm up. Please.")
    first, ref = Normalizer(), default_reference()
    kept = len(this_process)
    assert Normalizer().wordnet is first.wordnet and default_reference() is ref
    assert split_sentences("One here. Two there.") == ["One here.", "Two there."]
    assert len(this_process) == kept
    mine = text_mod.SentenceSplitter()
    assert mine.split("Dr. Smith arrived. He left.\nA new line") == split_sentences("Dr. Smith arrived. He left.\nA new line")
    assert mine._line_sentences.cache_info().currsize == 2  # its own cache, not the process splitter's


def test_nltk_is_imported_without_scipy_stats_which_imports_afterwards():
    """nltk's package import would load scipy.stats (its collocation metrics' Fisher test, ~1.4 s a process);
    the normaliser and the sentence splitter import nltk without it, and scipy.stats imports normally after."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("scipy")
    code = ("import sys\n"
            "from dedup.text import Normalizer, split_sentences\n"
            "Normalizer().terms('The cats were running home.')\n"
            "assert split_sentences('One. Two three.') \n"
            "assert 'nltk' in sys.modules and 'scipy.stats' not in sys.modules, sorted(sys.modules)\n"
            "import scipy.stats\n"
            "assert scipy.stats.fisher_exact([[1, 2], [3, 4]]).pvalue > 0\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
