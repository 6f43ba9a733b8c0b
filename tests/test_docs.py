"""The README and docs/: the README fits on a screen or two, their links lead somewhere, the settings table
is the code's, and every command they show is run or parsed (docs/commands.md states the rule)."""
from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, clean_env
from crawler.config import markdown_table, read_settings
from crawler.spiders.site import SiteSpider
from dedup.cli import build_parser

README = ROOT / "README.md"
#: docs/notes-<branch>.md are a branch's working notes, folded into the pages at merge: not checked
PAGES = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if not p.name.startswith("notes-"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
INLINE = re.compile(r"`([^`]+)`")
ENV = re.compile(r"^[A-Z][A-Z0-9_]*=")
PLACEHOLDER = re.compile(r"^\[?([A-Z][A-Z0-9_]*)(\.\.\.)?\]?$")
#: inline code that is a command (not the name of one in a sentence): see docs/commands.md
PROGRAMS = ("python", "make", "pip", "lint-imports")
#: the README's recipe for a user's own project: its blocks are run as written, in a fresh virtualenv, by
#: tests/test_wheel.py (a project made with `scrapy startproject`), not parsed here
OWN_PROJECT = "### The add-on in your own Scrapy project"


def _section(text: str, heading: str) -> tuple[int, int]:
    """Where the section under ``heading`` starts and ends in ``text`` (up to the next heading)."""
    start = text.index(heading)
    end = re.compile(r"^#", re.M).search(text, start + len(heading))
    return start, end.start() if end else len(text)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _strip_env(words: list[str]) -> list[str]:
    while words and ENV.match(words[0]):
        words = words[1:]
    return words


def _program(words: list[str]) -> str:
    words = _strip_env(words)
    return words[0].removeprefix(".venv/bin/") if words else ""


def commands(page: Path) -> list[tuple[str, str]]:
    """``(where, command)`` for every command of ``page``: ``sh`` and ``console`` blocks, then inline code."""
    text = page.read_text(encoding="utf-8")
    found: list[tuple[str, str]] = []
    own = _section(text, OWN_PROJECT) if page == README else (0, 0)
    for block in FENCE.finditer(text):
        lang, body = block.group(1).strip(), block.group(2)
        line_no = text.count("\n", 0, block.start()) + 2
        if own[0] <= block.start() < own[1]:
            continue
        if lang == "sh":
            lines = re.sub(r"\\\n\s*", " ", body).splitlines()
            found += [(f"{_rel(page)} (block at line {line_no})", line) for line in lines if line.strip()
                      and not line.lstrip().startswith("#")]
        elif lang == "console":
            found += [(f"{_rel(page)} (block at line {line_no})", line[2:]) for line in body.splitlines()
                      if line.startswith("$ ")]
    prose = FENCE.sub("", text)
    for span in INLINE.findall(prose):
        span = " ".join(span.split())
        try:
            words = shlex.split(span)
        except ValueError:
            continue
        program = _program(words)
        rest = _strip_env(words)[1:]
        if (program in PROGRAMS or (_strip_env(words) or [""])[0].startswith(".venv/bin/")
                or (program == "dedup" and any(w.startswith("-") or PLACEHOLDER.match(w) for w in rest))):
            found.append((f"{_rel(page)} (inline)", span))
    return found


#: docs/commands.md states the rule with patterns (`make TARGET`), not commands
ALL = [(where, cmd) for page in PAGES if page.name != "commands.md" for where, cmd in commands(page)]


def _argv(command: str) -> list[str]:
    """The command's words after the environment and the program, placeholders filled in, ``...`` dropped."""
    words = _strip_env(shlex.split(command, comments=True))[1:]
    out = []
    for word in words:
        if word == "..." or word.endswith("..."):
            word = word.removesuffix("...")
            if not word:
                continue
        match = PLACEHOLDER.match(word)
        if match and match.group(1) not in ("-", ):
            out.append("1" if len(match.group(1)) == 1 else f"placeholder-{match.group(1).lower()}")
        else:
            out.append(word.strip("[]") if word.startswith("[") or word.endswith("]") else word)
    return out


# -- the pages ----------------------------------------------------------------------------------------
def test_readme_fits_on_a_screen_or_two():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_every_fence_names_its_language():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        bare = [text.count("\n", 0, m.start()) + 1 for m in FENCE.finditer(text) if not m.group(1).strip()]
        assert not bare, f"{_rel(page)}: fenced blocks without a language at lines {bare}"


def test_relative_links_lead_to_files_and_headings():
    def anchors(path: Path) -> set[str]:
        heads = re.findall(r"^#+ (.+)$", FENCE.sub("", path.read_text(encoding="utf-8")), re.M)
        return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}

    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            assert path.is_file(), f"{_rel(page)} links to {target}: no such file"
            if anchor:
                assert anchor in anchors(path), f"{_rel(page)} links to {target}: no such heading"


def test_settings_page_holds_the_table_the_code_prints():
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert markdown_table() in text
    proc = subprocess.run([sys.executable, "-m", "crawler.config"], cwd=ROOT, env=clean_env(), capture_output=True,
                          text=True, timeout=120, check=True)
    assert proc.stdout == markdown_table()


def test_the_own_project_recipe_is_run_by_the_wheel_test():
    text = README.read_text(encoding="utf-8")
    start, end = _section(text, OWN_PROJECT)
    assert [m.group(1) for m in FENCE.finditer(text, start, end)] == ["sh", "python", "sh"]
    assert "OWN_PROJECT" in (ROOT / "tests" / "test_wheel.py").read_text(encoding="utf-8")


def test_every_page_is_reachable_from_the_readme():
    linked = set(re.findall(r"\(docs/([\w\-]+\.md)", README.read_text(encoding="utf-8")))
    assert {p.name for p in PAGES if p != README} <= linked


# -- each command, by its program (docs/commands.md) -----------------------------------------------------
def _check_make(argv: list[str]) -> None:
    env = {k: v for k, v in clean_env().items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    proc = subprocess.run(["make", "-n", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _check_dedup(argv: list[str], elided: bool) -> None:
    if elided:  # arguments left out: the sub-command and the options named must exist
        parser, options = build_parser(), [w for w in argv if w.startswith("-")]
        for word in (w for w in argv if not w.startswith("-")):
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if not subs or word not in subs[0].choices:
                break
            parser = subs[0].choices[word]
        missing = [o for o in options if o.split("=")[0] not in parser._option_string_actions]
        assert not missing, f"dedup {' '.join(argv)}: {parser.prog} has no option {missing}"
        return
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"dedup {' '.join(argv)}: the parser refuses it (exit {exc.code})") from None


def _check_scrapy(argv: list[str], elided: bool) -> None:
    assert argv[:2] == ["crawl", SiteSpider.name], argv
    spider_args, settings = {}, {}
    for option, value in zip(argv, argv[1:]):
        if option == "-a":
            key, _, val = value.partition("=")
            spider_args[key] = val
        elif option == "-s" and value.startswith("DEDUP_"):
            key, _, val = value.partition("=")
            settings[key] = val
    if not elided:
        SiteSpider(**spider_args)  # raises on a missing start_url or a bad max_pages
    read_settings(settings)


def _check_script(words: list[str], options: list[str]) -> None:
    cmd = [sys.executable, *words, "--help"]
    proc = subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    missing = [o for o in options if o not in proc.stdout]
    assert not missing, f"{' '.join(words)} --help does not name {missing}"


def _check_pip(argv: list[str]) -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for word in argv:
        match = re.match(r"^\.\[([\w,\-]+)\]$", word)
        if match:
            assert set(match.group(1).split(",")) <= set(extras), word


@pytest.mark.parametrize("where, command", ALL, ids=[f"{w}: {c[:60]}" for w, c in ALL])
def test_command_parses_or_runs(where, command):
    program = _program(shlex.split(command, comments=True))
    argv = _argv(command)
    elided = "..." in shlex.split(command, comments=True)
    if program == "make":
        _check_make(argv)
    elif program == "dedup":
        _check_dedup(argv, elided)
    elif program == "scrapy":
        _check_scrapy(argv, elided)
    elif program == "python":
        if argv[:2] == ["-m", "crawler.config"]:
            return  # run for real by test_settings_page_holds_the_table_the_code_prints
        words = argv[:2] if argv[0] == "-m" else argv[:1]
        assert words[-1] != "-c", f"{where}: a python -c one-liner is not a command to document"
        _check_script(words, [w.split("=")[0] for w in argv if w.startswith("--")])
    elif program == "pip":
        _check_pip(argv)
    elif program == "lint-imports":
        assert "lint-imports" in (ROOT / "tests" / "test_layers.py").read_text()
    else:
        raise AssertionError(f"{where}: {command!r}: no rule checks a {program!r} command (docs/commands.md)")


# -- the README's recipes, run for real on a demo crawl's index -------------------------------------------
def _readme_block(after: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = FENCE.search(text, text.index(after))
    lines = re.sub(r"\\\n\s*", " ", block.group(2)).splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.crawl
def test_readme_inspect_recipe_runs_on_a_demo_crawl(tmp_path):
    out = tmp_path / "demo"
    env = clean_env()
    subprocess.run([sys.executable, "-m", "crawler.demo", "--out", str(out)], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=300)
    dropped = [json.loads(line) for line in (out / "index" / "dropped.jsonl").read_text().splitlines()]
    url = dropped[0]["url"]
    uri = f"local://{out / 'index'}"
    recipe = _readme_block("### Inspect, explain and restore")
    search = next(line for line in _readme_block("### Crawl a site") if " search " in line)
    assert len(recipe) >= 5
    for line in [*recipe, search]:
        words = shlex.split(line.replace("local://out/demo/index", uri).replace("local://.dedup", uri)
                            .replace("out/demo/", f"{out}/"))
        assert words[0] == ".venv/bin/dedup", line
        argv = [url if w == "URL" else w for w in words[1:]]
        proc = subprocess.run([sys.executable, "-m", "dedup.cli", *argv], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
        if "restore" in argv:
            assert "restored" in proc.stdout
    assert (out / "report.html").stat().st_size > 10_000
