"""Main-text extraction: trafilatura first, with a fallback for the pages it gets wrong."""
from __future__ import annotations

import logging
import re

import lxml.html

__all__ = ["main_text"]

logger = logging.getLogger(__name__)
_WS = re.compile(r"[ \t\r\f\v]+")


def _fold(line: str) -> str:
    """Runs of blanks (space, tab, CR, FF, VT) to one space, ends stripped; most lines have none."""
    if "  " in line or "\t" in line or "\r" in line or "\f" in line or "\v" in line:
        line = _WS.sub(" ", line)
    return line.strip()


def main_text(tree: lxml.html.HtmlElement, html: str) -> tuple[str, str]:
    """Return ``(text, method)``: the page's main text with boilerplate removed."""
    from trafilatura import extract

    try:
        text = extract(tree, include_comments=False, include_tables=True, deduplicate=False) or ""
    except Exception:  # trafilatura raises a zoo of lxml/Value errors on hostile markup
        logger.debug("trafilatura failed", exc_info=True)
        text = ""
    text = "\n".join(_fold(line) for line in text.splitlines() if line.strip())
    return text, "trafilatura" if text else "none"
