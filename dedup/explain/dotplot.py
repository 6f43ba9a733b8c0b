"""Dotplot views of matched sentences (seed 001, section 3.4; Helfman 1996).

The x axis is page A's sentence positions, the y axis page B's, origin at the top
left; a dot at (i, j) says sentence i of A equals sentence j of B. A copy draws a
diagonal from the upper left down to the lower right, a moved block a diagonal
shifted sideways, an insertion a horizontal or vertical gap. Each axis is scaled to
its own page, so pages of very different length still fill the square.

:func:`dotplot_svg` writes a standalone SVG document by hand (each dot carries a
``<title>`` with both sentences, shown on hover); :func:`dotplot_png` a plain raster
(dots, frame and section lines, no text) with the standard library's zlib.
"""
from __future__ import annotations

import struct
import zlib
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import numpy as np

if TYPE_CHECKING:
    from .explanation import Explanation

__all__ = ["dotplot_svg", "dotplot_png"]

_FUZZY = "#1f5fbf"
_GRAM = "#d9730d"


def _attr(text: str) -> str:
    return escape(text, {'"': "&quot;"})


def _cut(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _ticks(n: int) -> list[int]:
    """1-based sentence numbers to label: about six round steps."""
    if n <= 1:
        return [1] if n else []
    step = 1
    for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        step = s
        if n / s <= 8:
            break
    return [1] + [k for k in range(step, n + 1, step) if k != 1]


def _heading_starts(tree: dict[str, Any]) -> list[int]:
    return sorted({node["sentences"][0] for node in tree.get("nodes", [])
                   if node.get("kind") == "heading" and node.get("sentences") and node["sentences"][0] > 0})


def dotplot_svg(explanation: "Explanation", *, size: int = 480, grams: bool = True, tips: bool = True) -> str:
    """The dotplot of ``explanation`` as an SVG document; ``size`` is the plot square's side in
    pixels (default 480). ``grams`` also marks the pairs with equal least-frequent 4-grams. ``tips``: each
    dot's ``<title>`` (both sentences, shown on hover); False for an SVG shown as an image, which shows none."""
    if size < 64:
        raise ValueError(f"dotplot size must be >= 64 pixels (got {size})")
    e = explanation
    na, nb = len(e.sentences_a), len(e.sentences_b)
    left, top, right, bottom = 64, 56, 24, 76
    width, height = left + size + right, top + size + bottom
    sx = size / max(na, 1)
    sy = size / max(nb, 1)
    radius = max(1.5, min(6.0, 0.42 * min(sx, sy)))

    def x(i: float) -> float:
        return left + (i + 0.5) * sx

    def y(j: float) -> float:
        return top + (j + 0.5) * sy

    scores = (f"resemblance A\u2192B {e.resemblance_ab:.3f}, B\u2192A {e.resemblance_ba:.3f}, "
              f"odds ratio {e.odds_ratio:.3g}")
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(f'Dotplot of matched sentences: {_cut(e.title_a or e.url_a, 60)} / {_cut(e.title_b or e.url_b, 60)}')}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{left}" y="18" font-size="13" font-weight="bold">'
        f"{escape(f'{e.matched_a}/{na} sentences of A and {e.matched_b}/{nb} of B matched')}</text>",
        f'<text x="{left}" y="36">{escape(scores)}</text>',
    ]
    # sections (heading nodes) as faint lines, so the dots can be read against the tree
    for i in _heading_starts(e.hierarchy.get("a", {})):
        out.append(f'<line x1="{left + i * sx:.2f}" y1="{top}" x2="{left + i * sx:.2f}" y2="{top + size}" '
                   'stroke="#e4e4e4" stroke-width="1"/>')
    for j in _heading_starts(e.hierarchy.get("b", {})):
        out.append(f'<line x1="{left}" y1="{top + j * sy:.2f}" x2="{left + size}" y2="{top + j * sy:.2f}" '
                   'stroke="#e4e4e4" stroke-width="1"/>')
    out.append(f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#444" stroke-width="1"/>')
    for k in _ticks(na):
        tx = x(k - 1)
        out.append(f'<line x1="{tx:.2f}" y1="{top}" x2="{tx:.2f}" y2="{top - 4}" stroke="#444"/>')
        out.append(f'<text x="{tx:.2f}" y="{top - 6}" text-anchor="middle" fill="#444">{k}</text>')
    for k in _ticks(nb):
        ty = y(k - 1)
        out.append(f'<line x1="{left}" y1="{ty:.2f}" x2="{left - 4}" y2="{ty:.2f}" stroke="#444"/>')
        out.append(f'<text x="{left - 6}" y="{ty + 4:.2f}" text-anchor="end" fill="#444">{k}</text>')
    if grams:
        half = radius + 1.5
        for i, j in e.gram_matches:
            out.append(f'<rect x="{x(i) - half:.2f}" y="{y(j) - half:.2f}" width="{2 * half:.2f}" '
                       f'height="{2 * half:.2f}" fill="none" stroke="{_GRAM}" stroke-width="1">'
                       + (f"<title>{escape(f'A {i + 1} / B {j + 1}: equal least-frequent 4-grams')}</title>" if tips
                          else "") + "</rect>")
    for (i, j, score), (s_ab, s_ba) in zip(e.matches, e.sims or [(m[2], m[2]) for m in e.matches]):
        opacity = 0.45 + 0.55 * min(1.0, max(0.0, (score - 0.8) / 0.2))
        tip = (f"<title>{escape(f'A {i + 1} / B {j + 1}: Sim(a,b) {s_ab:.3f}, Sim(b,a) {s_ba:.3f}')}\n"
               f"{escape(f'A: {_cut(e.sentences_a[i], 200)}')}\n{escape(f'B: {_cut(e.sentences_b[j], 200)}')}</title>"
               if tips else "")
        out.append(f'<circle cx="{x(i):.2f}" cy="{y(j):.2f}" r="{radius:.2f}" fill="{_FUZZY}" '
                   f'fill-opacity="{opacity:.2f}">{tip}</circle>')
    chars = max(int(size / 6.5) - 16, 8)  # about 6.5 px per character at 11 px
    out.append(f'<text x="{left + size / 2:.1f}" y="{top + size + 20}" text-anchor="middle">'
               f"{escape(f'sentence of A: {_cut(e.title_a or e.url_a, chars)}')}</text>")
    out.append(f'<text transform="translate(16 {top + size / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f"{escape(f'sentence of B: {_cut(e.title_b or e.url_b, chars)}')}</text>")
    ly = top + size + 44
    out.append(f'<circle cx="{left + 6}" cy="{ly - 4}" r="4" fill="{_FUZZY}"/>')
    permission = e.thresholds.get("permission", 0.825)
    variation = e.thresholds.get("variation", 0.15)
    legend = f"fuzzy-set EQ (min Sim \u2265 {permission}, |\u0394Sim| \u2264 {variation})"
    out.append(f'<text x="{left + 16}" y="{ly}">{escape(legend)}</text>')
    if grams:
        out.append(f'<rect x="{left + 2}" y="{ly + 10}" width="9" height="9" fill="none" stroke="{_GRAM}"/>')
        out.append(f'<text x="{left + 16}" y="{ly + 19}">equal three least-frequent 4-grams</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _png(pixels: np.ndarray) -> bytes:
    """Encode an ``h x w x 3`` uint8 array as PNG (8-bit RGB, no interlace)."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[r].tobytes() for r in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def dotplot_png(explanation: "Explanation", *, size: int = 480) -> bytes:
    """The dotplot as PNG bytes: a ``size`` x ``size`` plot with an 8-pixel margin, no labels."""
    if size < 16:
        raise ValueError(f"dotplot size must be >= 16 pixels (got {size})")
    e = explanation
    na, nb = max(len(e.sentences_a), 1), max(len(e.sentences_b), 1)
    pad = 8
    img = np.full((size + 2 * pad, size + 2 * pad, 3), 255, dtype=np.uint8)
    sx, sy = size / na, size / nb
    for i in _heading_starts(e.hierarchy.get("a", {})):
        img[pad : pad + size, pad + int(i * sx)] = 228
    for j in _heading_starts(e.hierarchy.get("b", {})):
        img[pad + int(j * sy), pad : pad + size] = 228
    img[pad, pad : pad + size + 1] = img[pad + size, pad : pad + size + 1] = 68
    img[pad : pad + size + 1, pad] = img[pad : pad + size + 1, pad + size] = 68
    r = max(1.5, min(6.0, 0.42 * min(sx, sy)))
    yy, xx = np.mgrid[0 : img.shape[0], 0 : img.shape[1]]
    color = np.array([0x1F, 0x5F, 0xBF], dtype=np.uint8)
    for i, j, _ in e.matches:
        cx, cy = pad + (i + 0.5) * sx, pad + (j + 0.5) * sy
        x0, x1 = int(max(cx - r - 1, 0)), int(min(cx + r + 2, img.shape[1]))
        y0, y1 = int(max(cy - r - 1, 0)), int(min(cy + r + 2, img.shape[0]))
        disc = (xx[y0:y1, x0:x1] - cx) ** 2 + (yy[y0:y1, x0:x1] - cy) ** 2 <= r * r
        img[y0:y1, x0:x1][disc] = color
    return _png(img)
