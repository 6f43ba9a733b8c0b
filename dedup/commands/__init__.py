"""Sub-commands of the ``dedup`` console script, one module each.

Every module here defines ``register(sub)``, which adds its parser to the
argparse sub-parsers and sets ``func`` to a function ``(args) -> exit code``;
:func:`dedup.cli.build_parser` finds the modules by listing this package.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

__all__ = ["DEFAULT_INDEX", "cut", "index_uri", "progress"]

DEFAULT_INDEX = "local://.dedup"


def index_uri(args: argparse.Namespace) -> str:
    """``--index``, else ``$DEDUP_INDEX``, else :data:`DEFAULT_INDEX`."""
    return args.index or os.environ.get("DEDUP_INDEX") or DEFAULT_INDEX


def cut(text: str | None, n: int) -> str:
    """``text`` on one line (whitespace collapsed), at most ``n`` characters with an ellipsis."""
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: max(n - 1, 0)] + "\u2026"


def progress(label: str) -> Callable[[int, int], None] | None:
    """A ``show(done, total)`` callback drawing a progress bar on stderr, or None when
    stderr is not a terminal (logs and CI stay clean)."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar: dict[str, tqdm] = {}

    def show(n: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, desc=label, unit="page", file=sys.stderr, dynamic_ncols=True)
        b = bar["bar"]
        if total != b.total:
            b.total = total
        b.update(n - b.n)
        if n >= total:
            b.close()

    return show
