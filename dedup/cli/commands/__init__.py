"""Sub-commands of the ``dedup`` console script, one module each.

Every module here defines ``register(sub)``, which adds its parser to the
argparse sub-parsers and sets ``func`` to a function ``(args) -> exit code``;
:func:`dedup.cli.build_parser` finds the modules by listing this package.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

from index import DEFAULT_INDEX, default_dropped_log

__all__ = ["DEFAULT_INDEX", "config_of", "config_options", "cut", "dropped_log", "index_uri", "missing_index",
           "progress", "require_index", "rounded"]


def index_uri(args: argparse.Namespace) -> str:
    """``--index``, else ``$DEDUP_INDEX``, else :data:`DEFAULT_INDEX`."""
    return args.index or os.environ.get("DEDUP_INDEX") or DEFAULT_INDEX


def dropped_log(args: argparse.Namespace) -> tuple[str, bool]:
    """``(path, named)`` of the dropped log: ``--log``, else ``$DEDUP_DROPPED_LOG``, else the
    crawl's default beside the index (:func:`index_uri`). ``named`` is False for the default,
    which a command may find missing without it being an error (e.g. two HTML files to explain).

    The same order as the crawl, which writes to ``DEDUP_DROPPED_LOG`` else beside ``DEDUP_INDEX``.
    """
    if getattr(args, "log", None):
        return str(args.log), True
    if os.environ.get("DEDUP_DROPPED_LOG"):
        return os.environ["DEDUP_DROPPED_LOG"], True
    return default_dropped_log(index_uri(args)), False


def missing_index(uri: str) -> str | None:
    """``no index at DIR ...`` when ``uri`` is an embedded index no crawl has written (its folder holds neither
    of its databases), else None; an Elasticsearch index is for the command to find missing."""
    if not uri.lower().startswith("local://"):
        return None
    path = Path(uri.split("://", 1)[1])
    if (path / "dedup.sqlite").exists() or (path / "search.sqlite").exists():
        return None
    return (f"no index at {path} ({'no such folder' if not path.exists() else 'no crawl has written there'}); "
            "--index names the crawl's DEDUP_INDEX")


def require_index(args: argparse.Namespace) -> None:
    """Raise FileNotFoundError when the command reads the dropped log beside an index that does not exist
    (the log would be missing for that reason, not because the crawl dropped nothing)."""
    log, named = dropped_log(args)
    why = None if named or Path(log).exists() else missing_index(index_uri(args))
    if why:
        raise FileNotFoundError(why)


def config_options(parser: argparse.ArgumentParser, per: str = "page") -> None:
    """``--t1``, ``--t2`` and ``--knn``: the decision's knobs a command can be given (read by :func:`config_of`)."""
    parser.add_argument("--t1", type=float, help="duplicate threshold (containment)")
    parser.add_argument("--t2", type=float, help="near-duplicate threshold (containment)")
    parser.add_argument("--knn", type=int, help=f"nearest signatures fetched per {per}")


def config_of(args: argparse.Namespace, *more: str) -> Any:
    """The :class:`~dedup.deduplicator.DedupConfig` of the knobs given on the command line (those of
    :func:`config_options` and the options named ``more``), its defaults for the others."""
    from ...deduplicator import DedupConfig

    given = {k: getattr(args, k) for k in ("t1", "t2", "knn", *more) if getattr(args, k) is not None}
    return DedupConfig(**given)


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float rounded to ``digits`` places, through dicts and lists, for
    printing: a threshold angle of 180 * (1 - 0.8) shows as 36.0, not 35.99999999999999."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    return value


def cut(text: str | None, n: int) -> str:
    """``text`` on one line (whitespace collapsed), at most ``n`` characters with an ellipsis."""
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: max(n - 1, 0)] + "\u2026"


def progress(label: str, unit: str = "page") -> Callable[[int, int], None] | None:
    """A ``show(done, total)`` callback drawing a progress bar on stderr, or None when
    stderr is not a terminal (logs and CI stay clean). The bar starts at the first count it is
    given, so what a resumed run skips counts neither in its rate nor in its ETA."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar: dict[str, tqdm] = {}

    def show(n: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, initial=n, desc=label, unit=unit, file=sys.stderr, dynamic_ncols=True)
        b = bar["bar"]
        b.total = max(total, n)
        b.update(n - b.n)
        if n >= total:
            b.close()

    return show
