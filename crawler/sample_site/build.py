"""Generate the static sample site (``pages/``) and its manifest (``expected.json``).

The files are committed; rerun this only after editing ``content.py`` or the
templates below::

    python -m crawler.sample_site.build           # rewrite pages/ and expected.json
    python -m crawler.sample_site.build --check   # exit 1 if they are out of date

Generating the copies (rather than hand-editing HTML) is what guarantees that
the exact copies carry byte-identical ``<article>`` elements (the mirror's, once the part it marks
as not for indexing, its appeal, is left out).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path

from . import content as C

HERE = Path(__file__).resolve().parent
PAGES_DIR = HERE / "pages"
EXPECTED_PATH = HERE / "expected.json"

SESSION_ID = "ABC123"
SID = "7f3a9c2e41"
UTM = "utm_source=newsletter&utm_medium=email"

# Originals that get exact URL variants / print versions / mirror copies.
PRINTED = ["library-roof", "sourdough-prize", "river-cleanup"]
MIRRORED = ["library-roof", "sourdough-prize"]
MOST_READ = ["library-roof", "river-cleanup", "robotics-team"]  # sidebar, ;jsessionid
SESSION_IN_PATH = ["library-roof", "river-cleanup"]
SESSION_IN_QUERY = ["sourdough-prize"]  # archive page, ?sid=
NEWSLETTER = ["library-roof", "river-cleanup"]  # ?utm_source=...

NAV = [
    ("/", "Home"),
    ("/section/town-hall.html", "Town Hall"),
    ("/section/business.html", "Business"),
    ("/section/schools.html", "Schools"),
    ("/section/outdoors.html", "Outdoors"),
    ("/section/culture.html", "Culture"),
    ("/archive.html", "Archive"),
    ("/search.html", "Search"),
    ("/newsletter.html", "Newsletter"),
    ("/about.html", "About"),
]

STYLE = (
    "body{font-family:Georgia,serif;margin:0;color:#222}"
    "header,footer{background:#f3efe6;padding:.5em 1em}"
    "nav ul{list-style:none;padding:0;margin:0}nav li{display:inline;margin-right:1em}"
    ".layout{display:flex;gap:2em;padding:1em}main{flex:3}aside{flex:1}"
    ".byline,.meta{color:#666;font-size:.9em}"
)

_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?]\u201d))\s+(?=[A-Z\u201c<])")
_TAG = re.compile(r"<[^>]+>")


# ---------------------------------------------------------------- helpers

def esc(text: str) -> str:
    """Escape element text."""
    return html.escape(text, quote=False)


def plain(fragment: str) -> str:
    """HTML fragment -> plain text."""
    return html.unescape(_TAG.sub("", fragment))


def attr(fragment: str) -> str:
    """HTML fragment -> escaped attribute value."""
    return html.escape(plain(fragment), quote=True)


def sentences(fragment: str) -> list[str]:
    return [p for p in _SENTENCE_END.split(fragment.strip()) if p]


def edit_label(slug: str) -> str:
    """'Corrected 24 April 2024' for an edited copy."""
    return C.EDITS[slug]["byline_suffix"].strip(" \u00b7")


def article_path(slug: str) -> str:
    return f"/articles/{slug}.html"


def href(path: str) -> str:
    return html.escape(path, quote=True)


def file_for(path: str) -> str:
    path = path.split("?", 1)[0].split(";", 1)[0]
    return "index.html" if path == "/" else path.lstrip("/")


def words(fragment_blocks) -> int:
    return sum(len(plain(t).split()) for kind, t in fragment_blocks if kind == "p")


# ---------------------------------------------------------------- fragments

def byline(a: dict, prefix: str = "", suffix: str = "") -> str:
    iso, text = a["date"]
    return (
        f'<p class="byline">{prefix}By <span class="author">{esc(a["author"])}</span>'
        f' \u00b7 <time datetime="{iso}">{text}</time>{suffix}</p>'
    )


def article_element(headline: str, byline_html: str, body, note: str | None = None) -> str:
    lines = ["<article>", f"<h1>{esc(headline)}</h1>", byline_html]
    for kind, text in body:
        lines.append(f"<h2>{text}</h2>" if kind == "h2" else f"<p>{text}</p>")
    if note:
        lines.append(f'<p class="correction">{note}</p>')
    lines.append("</article>")
    return "\n".join(lines)


def teaser(slug: str, path: str | None = None, headline: str | None = None) -> str:
    a = C.ARTICLES[slug]
    section = C.SECTIONS[a["section"]]["title"]
    return (
        '<li class="teaser">'
        f'<h3><a href="{href(path or article_path(slug))}">{esc(headline or a["headline"])}</a></h3>'
        f'<p>{a["dek"]}</p>'
        f'<p class="meta">{section} \u00b7 {a["date"][1]}</p></li>'
    )


def head(title: str, description: str, keywords: str, style: str = STYLE) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n"
        f'<meta name="description" content="{attr(description)}">\n'
        f'<meta name="keywords" content="{attr(keywords)}">\n'
        f"<style>{style}</style>\n</head>\n"
    )


def courier_page(title: str, description: str, keywords: str, main: str) -> str:
    nav = "\n".join(f'<li><a href="{href(p)}">{esc(t)}</a></li>' for p, t in NAV)
    most_read = "\n".join(
        f'<li><a href="{href(mr_path(s))}">{esc(C.ARTICLES[s]["headline"])}</a></li>'
        for s in MOST_READ
    )
    return (
        head(title, description, keywords)
        + "<body>\n<header class=\"masthead\">\n"
        f'<p class="site-name"><a href="/">{esc(C.SITE_NAME)}</a></p>\n'
        f'<p class="tagline">{esc(C.SITE_TAGLINE)}</p>\n'
        f"<nav><ul>\n{nav}\n</ul></nav>\n</header>\n"
        '<div class="layout">\n<main id="content">\n'
        f"{main}\n</main>\n"
        '<aside class="sidebar">\n<section class="most-read">\n<h2>Most read</h2>\n'
        f"<ol>\n{most_read}\n</ol>\n</section>\n"
        '<section class="weather">\n<h2>Weather</h2>\n'
        "<p>Showers clearing by the afternoon, light westerly wind. River levels at "
        "the town quay are normal for the season.</p>\n</section>\n</aside>\n</div>\n"
        "<footer>\n<p>"
        '<a href="/about.html">About the Courier</a> \u00b7 '
        '<a href="/mirror/index.html">Archive mirror</a> \u00b7 '
        '<a href="/partner/index.html">Partner network</a></p>\n'
        "<p>Copyright \u00a9 2024 The Wrenfield Courier, a fictional newspaper. "
        "Sample text written for scrapy-dedup and dedicated to the public domain "
        "(CC0 1.0).</p>\n</footer>\n</body>\n</html>\n"
    )


def mr_path(slug: str) -> str:
    if slug in SESSION_IN_PATH:
        return f"{article_path(slug)};jsessionid={SESSION_ID}"
    return article_path(slug)


# ---------------------------------------------------------------- article copies

def original_article(slug: str) -> str:
    a = C.ARTICLES[slug]
    return article_element(a["headline"], byline(a), a["body"])


def edited_body(slug: str):
    a, e = C.ARTICLES[slug], C.EDITS[slug]
    body = []
    pending_replace = list(e["replace"])
    pending_drop = list(e["drop_sentences"])
    pending_add = list(e["add_sentences"])
    for kind, text in a["body"]:
        for old, new in e["replace"]:
            if old in text:
                assert text.count(old) == 1, old
                text = text.replace(old, new)
                pending_replace.remove((old, new))
        if kind == "p":
            out = []
            for s in sentences(text):
                if s in e["drop_sentences"]:
                    pending_drop.remove(s)
                    continue
                out.append(s)
                for after, new in e["add_sentences"]:
                    if s.endswith(after):
                        out.append(new)
                        pending_add.remove((after, new))
            text = " ".join(out)
        body.append((kind, text))
    assert not (pending_replace or pending_drop or pending_add), (
        slug, pending_replace, pending_drop, pending_add)
    return body


def edited_article(slug: str) -> str:
    a, e = C.ARTICLES[slug], C.EDITS[slug]
    return article_element(
        a["headline"], byline(a, suffix=e["byline_suffix"]), edited_body(slug), e["note"]
    )


def syndicated_body(slug: str):
    a, s = C.ARTICLES[slug], C.SYNDICATED[slug]
    body = []
    for i, (kind, text) in enumerate(a["body"]):
        if i in s["drop_paragraphs"]:
            continue
        if i == 0 and s["trim_first_paragraph"]:
            text = " ".join(sentences(text)[: s["trim_first_paragraph"]])
        body.append((kind, text))
    return body


def syndicated_article(slug: str) -> str:
    a, s = C.ARTICLES[slug], C.SYNDICATED[slug]
    by = byline(a, prefix=f"Syndicated from {esc(C.SITE_NAME)} \u00b7 ")
    return article_element(s["headline"], by, syndicated_body(slug))


# ---------------------------------------------------------------- page templates

def article_page(slug: str, article: str, *, with_print_link: bool, notice: str = "") -> str:
    a = C.ARTICLES[slug]
    tools = ""
    if with_print_link:
        tools = (f'\n<p class="tools"><a href="/print/{slug}.html">Print this article</a></p>')
    return courier_page(
        f"{a['headline']} - {C.SITE_NAME}", a["dek"], a["keywords"],
        article + tools + notice,
    )


def print_page(slug: str) -> str:
    a = C.ARTICLES[slug]
    return (
        head(f"{a['headline']} (print version) - {C.SITE_NAME}", a["dek"], a["keywords"],
             style="body{font-family:serif;max-width:40em;margin:2em auto}")
        + "<body class=\"print\">\n"
        f'<p class="print-masthead">{esc(C.SITE_NAME)} \u00b7 print edition</p>\n'
        f"{original_article(slug)}\n"
        f'<p class="print-note">Printed from the online edition. '
        f'<a href="{href(article_path(slug))}">Return to the full page</a>.</p>\n'
        "</body>\n</html>\n"
    )


def mirror_page(title: str, description: str, keywords: str, main: str) -> str:
    nav = [("/mirror/index.html", "Archive home")] + [
        (f"/mirror/{s}.html", C.ARTICLES[s]["headline"]) for s in MIRRORED
    ] + [("/", "Original publisher")]
    nav_html = " | ".join(f'<a href="{href(p)}">{esc(t)}</a>' for p, t in nav)
    return (
        head(title, description, keywords,
             style="body{font-family:Helvetica,Arial,sans-serif;background:#fafafa}"
                   ".ad{border:1px dashed #999;padding:.5em;font-size:.85em}")
        + "<body>\n<div id=\"archive-bar\">\n"
        f"<p><b>{esc(C.MIRROR_NAME)}</b> \u2014 preserved copies of valley newspapers</p>\n"
        f'<div class="archive-nav">{nav_html}</div>\n</div>\n'
        '<div class="ad">\n<p>Advertisement</p>\n'
        f"<p>{esc(C.MIRROR_AD)}</p>\n</div>\n"
        f'<div id="main">\n{main}\n</div>\n'
        '<div id="archive-footer">\n'
        f"<p>Preserved by the {esc(C.MIRROR_NAME)} with the publisher's permission. "
        "Original text by The Wrenfield Courier (fictional), dedicated to the public "
        "domain. Archive copies are shown exactly as published.</p>\n"
        "</div>\n</body>\n</html>\n"
    )


def mirror_article(slug: str) -> str:
    a = C.ARTICLES[slug]
    main = (
        '<p class="archive-note">Archived copy. Originally published by '
        f'{esc(C.SITE_NAME)} on {a["date"][1]}.</p>\n'
        # the archive's appeal at the end of the story, marked for search engines to skip: a copy of the
        # original's text only when the marked part is left out (dedup.indexmarks)
        + original_article(slug).replace(
            "\n</article>", '<!--googleoff: index-->\n<div class="appeal">'
            f"<p>{esc(C.MIRROR_APPEAL)}</p></div>\n<!--googleon: index-->\n</article>")
    )
    return mirror_page(f"{a['headline']} | {C.MIRROR_NAME}", a["dek"], a["keywords"], main)


def mirror_index() -> str:
    items = "\n".join(
        f'<li><a href="/mirror/{s}.html">{esc(C.ARTICLES[s]["headline"])}</a> '
        f'<span class="meta">({C.ARTICLES[s]["date"][1]})</span></li>' for s in MIRRORED
    )
    main = (
        f"<h1>{esc(C.MIRROR_NAME)}: The Wrenfield Courier</h1>\n"
        f"<p>{esc(C.MIRROR_ABOUT)}</p>\n"
        f"<h2>Preserved stories</h2>\n<ul>\n{items}\n</ul>"
    )
    return mirror_page(
        f"The Wrenfield Courier | {C.MIRROR_NAME}", C.MIRROR_ABOUT,
        "archive, preservation, local news, Tamsel valley", main,
    )


def partner_page(title: str, description: str, keywords: str, main: str, related: str) -> str:
    return (
        head(title, description, keywords,
             style="body{font-family:Verdana,sans-serif}.related{background:#eef}")
        + "<body>\n<div class=\"network-header\">\n"
        f'<p class="network-name">{esc(C.PARTNER_NAME)}</p>\n'
        '<ul class="network-nav">\n'
        '<li><a href="/partner/index.html">Network home</a></li>\n'
        f'<li><a href="/">{esc(C.SITE_NAME)}</a></li>\n'
        "</ul>\n</div>\n"
        f'<div class="story">\n{main}\n</div>\n'
        f'<div class="related">\n<h3>Related</h3>\n<ul>\n{related}\n</ul>\n</div>\n'
        '<div class="network-footer">\n'
        f"<p>{esc(C.PARTNER_NAME)} \u2014 sharing community journalism along the "
        "Tamsel since 2009. Stories remain the work of their original publishers.</p>\n"
        "</div>\n</body>\n</html>\n"
    )


def partner_article(slug: str) -> str:
    a, s = C.ARTICLES[slug], C.SYNDICATED[slug]
    others = [o for o in C.SYNDICATED if o != slug]
    related = "\n".join(
        [f'<li><a href="{href(article_path(slug))}">Read the original at {esc(C.SITE_NAME)}</a></li>']
        + [f'<li><a href="/partner/{o}.html">{esc(C.SYNDICATED[o]["headline"])}</a></li>'
           for o in others]
        + [f'<li><a href="/section/{a["section"]}.html">More from '
           f'{esc(C.SITE_NAME)}: {esc(C.SECTIONS[a["section"]]["title"])}</a></li>']
    )
    return partner_page(
        f"{s['headline']} - {C.PARTNER_NAME}", a["dek"], a["keywords"],
        syndicated_article(slug), related,
    )


def partner_index() -> str:
    items = "\n".join(teaser(s, f"/partner/{s}.html", C.SYNDICATED[s]["headline"])
                      for s in C.SYNDICATED)
    main = (
        f"<h1>{esc(C.PARTNER_NAME)}</h1>\n<p>{esc(C.PARTNER_ABOUT)}</p>\n"
        f"<h2>Shared this week</h2>\n<ul>\n{items}\n</ul>"
    )
    related = f'<li><a href="/">Visit {esc(C.SITE_NAME)}</a></li>'
    return partner_page(
        C.PARTNER_NAME, C.PARTNER_ABOUT, "news network, syndication, Tamsel valley",
        main, related,
    )


# ---------------------------------------------------------------- listing pages

def by_date(slugs):
    return sorted(slugs, key=lambda s: C.ARTICLES[s]["date"][0], reverse=True)


def index_page() -> str:
    stories = "\n".join(teaser(s) for s in by_date(C.ARTICLES))
    fixes = "\n".join(
        f'<li><a href="{href(article_path(e["slug"]))}">{esc(C.ARTICLES[s]["headline"])}</a>'
        f' <span class="meta">({esc(edit_label(s))})</span></li>'
        for s, e in C.EDITS.items()
    )
    partner = "\n".join(
        f'<li><a href="/partner/{s}.html">{esc(C.SYNDICATED[s]["headline"])}</a></li>'
        for s in C.SYNDICATED
    )
    main = (
        "<h1>Latest news</h1>\n"
        f"<p>{esc(C.HOME_INTRO)}</p>\n"
        f'<h2>Top stories</h2>\n<ul class="stories">\n{stories}\n</ul>\n'
        f"<h2>Corrections and updates</h2>\n<ul>\n{fixes}\n</ul>\n"
        "<h2>Across the valley</h2>\n"
        f'<p>Stories we shared with the <a href="/partner/index.html">{esc(C.PARTNER_NAME)}</a>:</p>\n'
        f"<ul>\n{partner}\n</ul>"
    )
    return courier_page(
        f"{C.SITE_NAME} - {C.SITE_TAGLINE}", C.HOME_INTRO,
        "Wrenfield, Tamsel valley, local news, newspaper", main,
    )


def section_page(key: str) -> str:
    sec = C.SECTIONS[key]
    slugs = by_date(s for s, a in C.ARTICLES.items() if a["section"] == key)
    items = "\n".join(teaser(s) for s in slugs)
    main = (
        f"<h1>{esc(sec['title'])}</h1>\n<p>{esc(sec['intro'])}</p>\n"
        f'<ul class="stories">\n{items}\n</ul>'
    )
    return courier_page(
        f"{sec['title']} - {C.SITE_NAME}", sec["intro"],
        f"Wrenfield, {sec['title'].lower()}, local news", main,
    )


def archive_page() -> str:
    entries = []
    for s in C.ARTICLES:
        a = C.ARTICLES[s]
        path = article_path(s) + (f"?sid={SID}" if s in SESSION_IN_QUERY else "")
        entries.append((a["date"][0], path, a["headline"], a["date"][1]))
    for s, e in C.EDITS.items():
        a = C.ARTICLES[s]
        entries.append((a["date"][0] + "b", article_path(e["slug"]),
                        a["headline"] + " (" + edit_label(s).lower() + ")",
                        a["date"][1]))
    entries.sort(reverse=True)
    items = "\n".join(
        f'<li><a href="{href(p)}">{esc(h)}</a> <span class="meta">{d}</span></li>'
        for _, p, h, d in entries
    )
    main = f"<h1>Archive</h1>\n<p>{esc(C.ARCHIVE_INTRO)}</p>\n<ul>\n{items}\n</ul>"
    return courier_page(
        f"Archive - {C.SITE_NAME}", C.ARCHIVE_INTRO, "archive, back issues, Wrenfield", main
    )


def newsletter_page() -> str:
    items = "\n".join(
        f'<li><a href="{href(article_path(s) + "?" + UTM)}">{esc(C.ARTICLES[s]["headline"])}</a>'
        f' \u2014 {C.ARTICLES[s]["dek"]}</li>' for s in NEWSLETTER
    )
    paras = "\n".join(f"<p>{t}</p>" for t in C.NEWSLETTER_TEXT)
    main = (
        "<h1>The Wrenfield Weekly newsletter</h1>\n"
        f"{paras}\n<h2>Last week's edition</h2>\n"
        f'<ul class="newsletter-edition">\n{items}\n</ul>'
    )
    return courier_page(
        f"Newsletter - {C.SITE_NAME}", C.NEWSLETTER_TEXT[0],
        "newsletter, email, Wrenfield Weekly", main,
    )


def about_page() -> str:
    paras = "\n".join(f"<p>{t}</p>" for t in C.ABOUT_TEXT)
    main = f"<h1>About the Courier</h1>\n{paras}"
    return courier_page(
        f"About - {C.SITE_NAME}", C.ABOUT_TEXT[0], "about, newsroom, fictional newspaper", main
    )


def search_page() -> str:
    items = "\n".join(f'<li><a href="/search/{t}.html">{esc(t)}</a></li>' for t in C.SEARCH_TERMS)
    main = (
        "<h1>Search the archive</h1>\n"
        f"<p>{esc(C.SEARCH_INTRO)}</p>\n<h2>Popular searches</h2>\n<ul>\n{items}\n</ul>"
    )
    return courier_page(f"Search - {C.SITE_NAME}", C.SEARCH_INTRO, "search, archive", main)


SEARCH_RESULTS_PER_PAGE = 3
SEARCH_RESULTS_TITLE = f"Search results - {C.SITE_NAME}"


def search_hits() -> dict[str, list[tuple[str, str]]]:
    """term -> [(slug, snippet sentence)]; every snippet sentence is used once."""
    used, hits = set(), {}
    for term in C.SEARCH_TERMS:
        pat = re.compile(rf"\b{re.escape(term)}\b", re.I)
        found = []
        for slug in by_date(C.ARTICLES):
            for kind, text in C.ARTICLES[slug]["body"]:
                if kind != "p":
                    continue
                s = next((x for x in sentences(plain(text)) if pat.search(x) and x not in used), None)
                if s:
                    found.append((slug, s))
                    used.add(s)
                    break
            if len(found) == SEARCH_RESULTS_PER_PAGE:
                break
        assert len(found) == SEARCH_RESULTS_PER_PAGE, (term, found)
        hits[term] = found
    return hits


def search_results_page(term: str, hits) -> str:
    pat = re.compile(rf"\b({re.escape(term)})\b", re.I)
    results = []
    for slug, sentence in hits:
        a = C.ARTICLES[slug]
        snippet = pat.sub(r"<strong>\1</strong>", esc(sentence))
        results.append(
            f'<li><h2><a href="{href(article_path(slug))}">{esc(a["headline"])}</a></h2>\n'
            f'<p class="snippet">\u2026 {snippet} \u2026</p>\n'
            f'<p class="meta">{C.SECTIONS[a["section"]]["title"]} \u00b7 {a["date"][1]}</p></li>'
        )
    i = C.SEARCH_TERMS.index(term)
    related = [C.SEARCH_TERMS[(i + k) % len(C.SEARCH_TERMS)] for k in (1, 2)]
    main = (
        "<h1>Search results</h1>\n"
        f'<p class="summary">Showing {len(hits)} stories that mention <b>{esc(term)}</b>.</p>\n'
        '<ol class="results">\n' + "\n".join(results) + "\n</ol>\n"
        '<p class="related-searches">Related searches: '
        + ", ".join(f'<a href="/search/{t}.html">{esc(t)}</a>' for t in related)
        + "</p>"
    )
    return courier_page(
        SEARCH_RESULTS_TITLE, f"Stories in the Courier archive that mention {term}.",
        f"search, {term}", main,
    )


# ---------------------------------------------------------------- site + manifest

def render() -> tuple[dict[str, str], dict]:
    """Return ({file relative to pages/: html}, manifest)."""
    for slug, a in C.ARTICLES.items():
        n = words(a["body"])
        assert 250 <= n <= 600, (slug, n)

    pages: dict[str, str] = {}  # manifest path (no query/params) -> html

    def add(path: str, text: str) -> None:
        assert path not in pages, path
        pages[path] = text

    add("/", index_page())
    add("/about.html", about_page())
    add("/archive.html", archive_page())
    add("/newsletter.html", newsletter_page())
    add("/search.html", search_page())
    for key in C.SECTIONS:
        add(f"/section/{key}.html", section_page(key))
    for slug in C.ARTICLES:
        near_note = ""
        if slug in C.EDITS:
            e = C.EDITS[slug]
            near_note = (f'\n<p class="notice">A newer version of this story is available: '
                         f'<a href="{href(article_path(e["slug"]))}">read the '
                         f'{esc(edit_label(slug).split()[0].lower())} article</a>.</p>')
        add(article_path(slug), article_page(
            slug, original_article(slug), with_print_link=slug in PRINTED, notice=near_note))
    for slug, e in C.EDITS.items():
        add(article_path(e["slug"]), article_page(slug, edited_article(slug), with_print_link=False))
    for slug in PRINTED:
        add(f"/print/{slug}.html", print_page(slug))
    add("/mirror/index.html", mirror_index())
    for slug in MIRRORED:
        add(f"/mirror/{slug}.html", mirror_article(slug))
    add("/partner/index.html", partner_index())
    for slug in C.SYNDICATED:
        add(f"/partner/{slug}.html", partner_article(slug))
    hits = search_hits()
    for term in C.SEARCH_TERMS:
        add(f"/search/{term}.html", search_results_page(term, hits[term]))

    groups = []
    for slug in C.ARTICLES:
        orig = article_path(slug)
        copies = {orig: "original"}
        if slug in NEWSLETTER:
            copies[f"{orig}?{UTM}"] = "tracking_params"
        if slug in SESSION_IN_PATH:
            copies[f"{orig};jsessionid={SESSION_ID}"] = "session_id_path_param"
        if slug in SESSION_IN_QUERY:
            copies[f"{orig}?sid={SID}"] = "session_id_query"
        if slug in PRINTED:
            copies[f"/print/{slug}.html"] = "print_version"
        if slug in MIRRORED:
            copies[f"/mirror/{slug}.html"] = "mirror"
        if len(copies) > 1:
            groups.append({"name": slug, "kind": "exact", "canonical": orig,
                           "paths": list(copies), "copies": copies})
    for slug in C.ARTICLES:
        if slug in C.EDITS or slug in C.SYNDICATED:
            orig = article_path(slug)
            copies = {orig: "original"}
            if slug in C.EDITS:
                copies[article_path(C.EDITS[slug]["slug"])] = "edited"
            if slug in C.SYNDICATED:
                copies[f"/partner/{slug}.html"] = "syndicated"
            groups.append({"name": slug, "kind": "near", "canonical": orig,
                           "paths": list(copies), "copies": copies})
    groups.append({
        "name": "search-results", "kind": "distinct_same_title",
        "title": SEARCH_RESULTS_TITLE,
        "paths": [f"/search/{t}.html" for t in C.SEARCH_TERMS],
    })
    grouped = {p for g in groups for p in g["paths"]}
    unique = [p for p in pages if p not in grouped]
    manifest = {
        "site": C.SITE_NAME,
        "description": (
            "Ground truth for crawler/sample_site. Paths are what a crawler sees "
            "(path, ;params and ?query, no scheme/host). 'exact': identical main "
            "text, keep one and drop the rest as exact duplicates; 'near': the same "
            "story edited or syndicated, keep one and flag the rest as near "
            "duplicates; 'distinct_same_title': same <title> and link count but "
            "different text, all unique; 'unique': everything else."
        ),
        "start": "/",
        "max_depth": 3,
        "groups": groups,
        "unique": unique,
    }
    all_paths = [p for g in groups for p in g["paths"]] + unique
    assert len(all_paths) == len(set(all_paths))
    assert {file_for(p) for p in all_paths} == {file_for(p) for p in pages}

    files = {file_for(p): text for p, text in pages.items()}
    return files, manifest


def manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def build(pages_dir: Path = PAGES_DIR, expected_path: Path = EXPECTED_PATH) -> None:
    files, manifest = render()
    for old in pages_dir.rglob("*.html"):
        if old.relative_to(pages_dir).as_posix() not in files:
            old.unlink()
    for rel, text in files.items():
        out = pages_dir / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8", newline="\n")
    expected_path.write_text(manifest_text(manifest), encoding="utf-8", newline="\n")


def check(pages_dir: Path = PAGES_DIR, expected_path: Path = EXPECTED_PATH) -> list[str]:
    """Return a list of problems (empty when pages/ and expected.json are current)."""
    files, manifest = render()
    problems = []
    on_disk = {p.relative_to(pages_dir).as_posix() for p in pages_dir.rglob("*.html")}
    problems += [f"stale file: {f}" for f in sorted(on_disk - set(files))]
    for rel, text in files.items():
        path = pages_dir / rel
        if not path.is_file():
            problems.append(f"missing file: {rel}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"out of date: {rel}")
    if not expected_path.is_file() or expected_path.read_text(encoding="utf-8") != manifest_text(manifest):
        problems.append(f"out of date: {expected_path.name}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m crawler.sample_site.build", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report whether the files are current")
    args = ap.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    build()
    files, _ = render()
    print(f"wrote {len(files)} pages to {PAGES_DIR} and {EXPECTED_PATH.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
