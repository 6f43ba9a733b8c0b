"""The ``dedup`` console script; each sub-command lives in :mod:`dedup.cli.commands`.

This package is the application layer: the only part of ``dedup`` that imports the storage
layer (``index``); the algorithms below it never do (pyproject.toml, [tool.importlinter])."""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
from typing import Sequence

from . import commands

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dedup", description="Near-duplicate filter for crawls and search indexes.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"dedup: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C in any command: one line, not a traceback (reindex says what it kept)
        print("dedup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `dedup ... | head`: the reader left; not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's final flush of stdout must not fail too
        return 0

