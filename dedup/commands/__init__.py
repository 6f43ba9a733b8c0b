"""Sub-commands of the ``dedup`` console script, one module each.

Every module here defines ``register(sub)``, which adds its parser to the
argparse sub-parsers and sets ``func`` to a function ``(args) -> exit code``;
:func:`dedup.cli.build_parser` finds the modules by listing this package.
"""
from __future__ import annotations

import sys
from typing import Callable

__all__ = ["progress"]


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
