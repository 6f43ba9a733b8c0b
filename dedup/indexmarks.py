"""The parts of a page its author marks as not for a search index, left out before it is read.

Sites that ran their own site search marked their templates' widgets, ads and promotions with comments
their indexer skipped, and some still do:

* ``<!--stopindex-->`` ... ``<!--startindex-->`` (site-search indexers of the 2000s; a news template of many
  TV stations' sites puts its story between ``startindex`` and ``stopindex`` and its sidebar after);
* ``<!--googleoff: index-->`` ... ``<!--googleon: index-->`` (Google Search Appliance; also ``all``);
* ``<!--noindex-->`` ... ``<!--/noindex-->`` (Yandex).

A marked part runs from its opening comment to the next closing one of its kind (``startindex``, ``googleon``,
``/noindex``), or to the end of the page. The part is cut from
the HTML before the scanner reads it, so the main text, the fields and the links all leave it out, as the
page's own search would. ``<noindex>`` elements are not read (an HTML element, not a comment; none of the
measured pages needed it).

Measured (docs/accuracy.md, "Where the misses are"): on goldset-dev a sidebar's promotion ("Sign up for
... E-mail Alerts", "Premium Weather") kept in the extract of a two-paragraph brief held its containment in
the same brief of another station at 0.35-0.48; one held-out page an arrival order at seeds 1-6 was missed so.
"""
from __future__ import annotations

import re

__all__ = ["unindexed"]

#: an opening marker (group 1: its kind) or a closing one (group 2), spaces inside allowed, lowercase as the
#: tools that read them write them. dedup._scan says whether a page has an opening one (``marked``, met while
#: it reads the page's comments anyway), so a page without one is not searched here: a search of the text
#: costs ~1 ns a character (~90 us a 67 KB page of non-ASCII text)
_MARK = re.compile(r"<!--\s*(?:(stopindex|googleoff:\s*(?:index|all)|noindex)|"
                   r"(startindex|googleon:\s*(?:index|all)|/noindex))\s*-->")
_KIND = {"stopindex": "startindex", "googleoff": "googleon", "noindex": "/noindex"}


def _kind(mark: str) -> str:
    return mark.split(":")[0].strip()


def unindexed(html: str) -> str:
    """``html`` without the parts it marks as not for indexing; ``html`` itself (the same object) when it
    marks none."""
    out, at, off = [], 0, None  # off: the closing kind awaited, while inside a marked part
    for m in _MARK.finditer(html):
        if off is None:
            if m.group(1):
                out.append(html[at:m.start()])
                off = _KIND[_kind(m.group(1))]
        elif m.group(2) and _kind(m.group(2)) == off:
            off, at = None, m.end()
    if not out:  # no part opened
        return html
    if off is None:
        out.append(html[at:])
    return "".join(out)
