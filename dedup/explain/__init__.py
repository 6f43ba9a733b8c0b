"""Why two pages are copies, sentence by sentence (seed 001): a research tool beside the algorithms.

:mod:`~dedup.explain.sentences` (sentence representations and the word tables behind them),
:mod:`~dedup.explain.fuzzy` (fuzzy-set sentence equality), :mod:`~dedup.explain.hierarchy`
(semantic hierarchies), :mod:`~dedup.explain.explanation` (:func:`explain`, the comparison of two
pages) and :mod:`~dedup.explain.dotplot` (the picture of it). It uses the algorithms of ``dedup``
(page, text) and nothing above them; the crawl's decision never depends on it.
"""
from __future__ import annotations

from .dotplot import dotplot_png, dotplot_svg
from .explanation import METHOD, Explanation, explain

__all__ = ["Explanation", "explain", "dotplot_svg", "dotplot_png", "METHOD"]
