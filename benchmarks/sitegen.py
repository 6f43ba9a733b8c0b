"""A generated loopback news site of any size, with the copies a crawler meets, for crawl benchmarks.

    python benchmarks/sitegen.py OUT_DIR --pages 2000      # writes OUT_DIR/, prints its counts

``generate(folder, pages, seed)`` writes static HTML that ``crawler.sample_site.serve(directory=...)``
serves.  Text is made of WordNet 3.0 glosses and example sentences (the ``.nltk_data`` that ``make
setup`` builds, or Debian's ``/usr/share/wordnet``), so pages read like English to trafilatura and
punkt without shipping any corpus.  Deterministic for a seed.

Of the pages, about:

* 75% articles (an original story each: headline, byline, 5-9 paragraphs, 200-650 words) in the
  site template (masthead, navigation, sidebar, footer);
* 7% print versions: the same article element in a bare print template (exact copies of text);
* 4% tracking-parameter links (``?utm_source=...``) to articles: the same page under another URL;
* 10% syndicated copies on "partner" pages: another template, a new headline, the first paragraph
  trimmed and one paragraph dropped (near-duplicates);
* the rest listing pages: one chain of section pages of 20 teasers each, plus a newsletter page
  with the tracking links, so every page is reachable from ``/``.

Cited by: docs/performance.md ("Crawling: the add-on's overhead"), docs/reliability.md."""
from __future__ import annotations

import argparse
import html
import json
import random
import re
import sys
from pathlib import Path

from common import ROOT

SECTIONS = ("town-hall", "business", "schools", "outdoors", "culture", "sport", "science", "letters")
_WORDNET_DIRS = (ROOT / ".nltk_data" / "corpora" / "wordnet", Path("/usr/share/wordnet"))
_GLOSS_OK = re.compile(r"^[A-Za-z][A-Za-z ,'()-]{25,200}$")


def load_sentences(limit: int = 60_000) -> list[str]:
    """English sentences from WordNet's glosses and examples (deterministic order)."""
    for folder in _WORDNET_DIRS:
        files = [folder / f"data.{pos}" for pos in ("noun", "verb", "adj", "adv")]
        if all(f.exists() for f in files):
            break
    else:
        raise FileNotFoundError("WordNet data not found: run `make setup` (builds .nltk_data) or "
                                "install Debian's wordnet-base")
    out: list[str] = []
    for f in files:
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue
            for part in line.split("|", 1)[1].split(";"):
                s = part.strip().strip('"').strip()
                if _GLOSS_OK.match(s):
                    out.append(s[0].upper() + s[1:] + ".")
            if len(out) >= limit * 4:
                break
    random.Random(0).shuffle(out)
    return out[:limit]


def esc(text: str) -> str:
    return html.escape(text, quote=False)


def head(title: str, description: str, keywords: str, style: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{esc(title)}</title>\n"
            f"<meta name=\"description\" content=\"{html.escape(description)}\">\n"
            f"<meta name=\"keywords\" content=\"{html.escape(keywords)}\">\n"
            f"<style>{style}</style>\n</head>\n")


class Site:
    def __init__(self, pages: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sentences = load_sentences()
        self.pages = pages
        n_articles = max(4, int(pages * 0.75))
        self.articles = [self._article(i) for i in range(n_articles)]
        self.files: dict[str, str] = {}

    def _article(self, i: int) -> dict:
        rng, sents = self.rng, self.sentences
        paragraphs = []
        for _ in range(rng.randint(5, 9)):
            paragraphs.append(" ".join(rng.choice(sents) for _ in range(rng.randint(4, 7))))
        head_words = rng.choice(sents).rstrip(".").split()[:rng.randint(5, 9)]
        return {"id": i, "slug": f"story-{i:05d}", "section": SECTIONS[i % len(SECTIONS)],
                "headline": " ".join(head_words).capitalize(), "dek": rng.choice(sents),
                "author": f"{rng.choice(['Ann', 'Ben', 'Cara', 'Dev', 'Eli', 'Fay'])} "
                          f"{rng.choice(['Hale', 'Ito', 'Juarez', 'Kim', 'Lund', 'Moss'])}",
                "date": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}", "paragraphs": paragraphs}

    # -- templates ----------------------------------------------------------------------------
    def nav(self) -> str:
        links = [("/", "Home")] + [(f"/section/{s}/page-1.html", s.replace("-", " ").title()) for s in SECTIONS]
        links.append(("/newsletter.html", "Newsletter"))
        return "<nav><ul>" + "".join(f'<li><a href="{p}">{esc(t)}</a></li>' for p, t in links) + "</ul></nav>"

    # -- boilerplate of real news pages (goldset-dev pages: 48 KB of HTML, ~110 links and ~30
    #    scripts on average): inline scripts and styles, a mega-menu, sidebars, a link-farm
    #    footer, comments.  Generated once per site and reused, as a site template is.
    def _script(self, i: int, site: str) -> str:
        rng = self.rng
        keys = ",".join(f"{rng.choice(['slot', 'unit', 'zone', 'pos', 'cb', 'ref'])}{k}:'{rng.getrandbits(48):012x}'"
                        for k in range(rng.randint(12, 30)))
        return (f"<script type=\"text/javascript\">(function(w,d){{var c=w.__{site}{i}=w.__{site}{i}||{{{keys}}};"
                f"var s=d.createElement('script');s.async=true;s.src='/static/{site}/m{i}.js?v='+c.ref1;"
                f"if(w.performance&&w.performance.now){{c.t0=w.performance.now();}}"
                f"d.getElementsByTagName('head')[0].appendChild(s);}})(window,document);</script>")

    def _template(self, site: str) -> dict[str, str]:
        rng = self.rng
        style = "".join(f".{site}-c{k}{{margin:{rng.randint(0, 9)}px {rng.randint(0, 20)}px;color:#{rng.getrandbits(24):06x};"
                        f"font-size:{rng.randint(10, 18)}px}}" for k in range(60))
        scripts = "\n".join(self._script(i, site) for i in range(26))
        return {"style": style, "scripts": scripts}

    def menu(self) -> str:
        items = []
        for s in SECTIONS:
            subs = "".join(f'<li><a href="/section/{s}/page-{j}.html">{esc(s.title())} page {j}</a></li>'
                           for j in range(1, min(self.listing_pages.get(s, 1), 6) + 1))
            items.append(f'<li class="menu-section"><a href="/section/{s}/page-1.html">{esc(s.title())}</a>'
                         f'<ul class="submenu">{subs}</ul></li>')
        return f'<nav class="mega-menu"><ul>{"".join(items)}</ul></nav>'

    def footer(self) -> str:
        static = [("/about.html", "About us"), ("/contact.html", "Contact"), ("/terms.html", "Terms of use"),
                  ("/privacy.html", "Privacy"), ("/advertise.html", "Advertise"), ("/newsletter.html", "Newsletter")]
        cols = "".join(f'<li><a href="/section/{s}/page-1.html">{esc(s.title())} news</a></li>' for s in SECTIONS)
        links = "".join(f'<li><a href="{p}">{t}</a></li>' for p, t in static)
        return (f'<footer class="site-footer"><div class="cols"><ul>{cols}</ul><ul>{links}</ul></div>'
                "<p>Generated text for scrapy-dedup benchmarks, from WordNet 3.0 glosses (WordNet licence). "
                "Copyright 2024 The Valley Ledger, a fictional newspaper.</p></footer>")

    def sidebar(self, section: str) -> str:
        picks = self.most_read.get(section, [])
        items = "".join(f'<li><a href="/articles/{a["slug"]}.html">{esc(a["headline"])}</a>'
                        f'<p class="dek">{esc(a["dek"])}</p></li>' for a in picks)
        return (f'<aside class="sidebar"><section class="most-read"><h2>Most read in {esc(section)}</h2>'
                f'<ol>{items}</ol></section><div class="ad-slot" id="ad-right-1"></div>'
                '<section class="weather"><h2>Weather</h2><p>Dry and bright, a light breeze from the west; '
                'frost possible in the hollows overnight.</p></section><div class="ad-slot" id="ad-right-2"></div>'
                '</aside>')

    def more_stories(self, section: str) -> str:
        """A block of teasers (image, headline, two sentences, meta) and a ticker of headlines."""
        rng = self.rng
        picks = rng.sample(self.articles, min(16, len(self.articles)))
        teasers = "".join(
            f'<div class="teaser"><div class="thumb"><a href="/articles/{a["slug"]}.html"><img src="/img/{a["id"]}.jpg" '
            f'alt="" width="120" height="80"></a></div><div class="teaser-body"><h3><a href="/articles/{a["slug"]}.html">'
            f'{esc(a["headline"])}</a></h3><p>{esc(a["dek"])} {esc(rng.choice(self.sentences))}</p>'
            f'<span class="meta">{esc(a["section"])} &middot; {a["date"]}</span></div></div>' for a in picks)
        ticker = "".join(f'<li><span class="time">{rng.randint(6, 22)}:{rng.randint(0, 59):02d}</span> '
                         f'<a href="/articles/{a["slug"]}.html">{esc(a["headline"])}</a></li>'
                         for a in rng.sample(self.articles, min(20, len(self.articles))))
        return (f'<section class="more-stories"><h2>More from {esc(section)}</h2>{teasers}</section>'
                f'<section class="ticker"><h2>Latest</h2><ul>{ticker}</ul></section>')

    def comments(self) -> str:
        rng = self.rng
        out = []
        for _ in range(rng.randint(2, 6)):
            who = f"{rng.choice(['river', 'oak', 'kite', 'fern', 'slate'])}{rng.randint(1, 999)}"
            out.append(f'<div class="comment"><p class="who">{who} wrote:</p><p>{esc(rng.choice(self.sentences))}</p></div>')
        return f'<section class="comments"><h2>Comments</h2>{"".join(out)}</section>'

    def site_page(self, title: str, description: str, keywords: str, main: str, section: str = "") -> str:
        t = self.templates["ledger"]
        section = section or SECTIONS[0]
        return (head(f"{title} - The Valley Ledger", description, keywords,
                     "body{font-family:Georgia,serif}.layout{display:flex}main{flex:3}aside{flex:1}" + t["style"])
                .replace("</head>", t["scripts"] + "\n</head>")
                + "<body>\n<header><p class=\"site-name\"><a href=\"/\">The Valley Ledger</a></p>"
                + self.nav() + self.menu() + "</header>\n<div class=\"ad-slot\" id=\"ad-top\"></div>\n"
                + "<div class=\"layout\">\n<main>\n" + main + "\n</main>\n" + self.sidebar(section) + "\n</div>\n"
                + self.more_stories(section)
                + self.footer() + "\n</body>\n</html>\n")

    @staticmethod
    def article_element(a: dict, paragraphs: list[str], headline: str | None = None, prefix: str = "") -> str:
        body = "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
        return (f"<article>\n<h1>{esc(headline or a['headline'])}</h1>\n<p class=\"byline\">{prefix}By "
                f"{esc(a['author'])} &middot; <time datetime=\"{a['date']}\">{a['date']}</time></p>\n"
                f"{body}\n</article>")

    def article_page(self, a: dict, with_print: bool) -> str:
        tools = f'\n<p class="tools"><a href="/print/{a["slug"]}.html">Print this article</a></p>' if with_print else ""
        tags = "".join(f'<li><a href="/section/{s}/page-1.html">{s}</a></li>' for s in (a["section"], "letters"))
        main = (self.article_element(a, a["paragraphs"]) + tools + f'\n<ul class="tags">{tags}</ul>\n'
                + self.comments())
        return self.site_page(a["headline"], a["dek"], a["section"], main, a["section"])

    def print_page(self, a: dict) -> str:
        return (head(f"{a['headline']} (print)", a["dek"], a["section"], "body{max-width:40em}")
                + "<body class=\"print\">\n<p>The Valley Ledger &middot; print edition</p>\n"
                + self.article_element(a, a["paragraphs"])
                + f"\n<p><a href=\"/articles/{a['slug']}.html\">Back to the full page</a></p>\n</body>\n</html>\n")

    def partner_page(self, a: dict) -> str:
        paras = list(a["paragraphs"])
        first = re.split(r"(?<=\.) ", paras[0])
        paras[0] = " ".join(first[: max(1, len(first) - 1)])
        del paras[self.rng.randrange(1, len(paras))]
        headline = "Valley report: " + a["headline"].lower()
        main = self.article_element(a, paras, headline, prefix="Syndicated from The Valley Ledger &middot; ")
        related = "".join(f'<li><a href="/partner/{b["slug"]}.html">{esc(b["headline"])}</a></li>'
                          for b in self.partner[:12])
        t = self.templates["network"]
        return (head(f"{headline} | Hill Country Network", a["dek"], a["section"], "body{font-family:Verdana}" + t["style"])
                .replace("</head>", t["scripts"] + "\n</head>")
                + "<body>\n<div class=\"network-header\"><p>Hill Country Network</p>"
                  "<a href=\"/\">Partner home</a></div>\n" + self.menu()
                + f"<div id=\"story\">{main}</div>\n<div class=\"related\"><h2>More from the network</h2>"
                  f"<ul>{related}</ul></div>\n" + self.comments() + self.more_stories(a["section"])
                + "<div class=\"network-footer\"><p>Shared under the network's syndication agreement.</p></div>\n"
                + self.footer() + "\n</body>\n</html>\n")

    # -- the site -----------------------------------------------------------------------------
    def build(self) -> dict[str, int]:
        rng, arts = self.rng, self.articles
        n = len(arts)
        printed = set(rng.sample(range(n), max(1, int(self.pages * 0.07))))
        self.partner = [arts[i] for i in sorted(rng.sample(range(n), max(1, int(self.pages * 0.10))))]
        tracked = sorted(rng.sample(range(n), max(1, int(self.pages * 0.04))))
        self.templates = {"ledger": self._template("ledger"), "network": self._template("network")}
        by_section: dict[str, list[dict]] = {s: [] for s in SECTIONS}
        for a in arts:
            by_section[a["section"]].append(a)
        self.most_read = {s: rng.sample(v, min(8, len(v))) for s, v in by_section.items()}
        self.listing_pages = {s: max(1, -(-(len(v) + sum(1 for k in range(len(self.partner))
                                                        if SECTIONS[k % len(SECTIONS)] == s)) // 20))
                              for s, v in by_section.items()}
        for a in arts:
            self.files[f"articles/{a['slug']}.html"] = self.article_page(a, a["id"] in printed)
        for i in sorted(printed):
            self.files[f"print/{arts[i]['slug']}.html"] = self.print_page(arts[i])
        for a in self.partner:
            self.files[f"partner/{a['slug']}.html"] = self.partner_page(a)
        # listing pages: per section, a chain of pages of 20 teasers; partner copies are linked
        # from the listings too (the "network" box), so they are all reachable
        per_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
        for a in arts:
            per_section[a["section"]].append(f'<li><a href="/articles/{a["slug"]}.html">{esc(a["headline"])}</a>'
                                             f"<p>{esc(a['dek'])}</p></li>")
        for k, a in enumerate(self.partner):
            per_section[SECTIONS[k % len(SECTIONS)]].append(
                f'<li><a href="/partner/{a["slug"]}.html">Network: {esc(a["headline"])}</a></li>')
        listings = 0
        for s, items in per_section.items():
            chunks = [items[i:i + 20] for i in range(0, len(items), 20)] or [[]]
            for j, chunk in enumerate(chunks, 1):
                nxt = f'<p><a href="/section/{s}/page-{j + 1}.html">Older stories</a></p>' if j < len(chunks) else ""
                main = f"<h1>{s.replace('-', ' ').title()}, page {j}</h1>\n<ul>{''.join(chunk)}</ul>{nxt}"
                self.files[f"section/{s}/page-{j}.html"] = self.site_page(f"{s} page {j}", f"Stories in {s}", s, main, s)
                listings += 1
        links = "".join(f'<li><a href="/articles/{arts[i]["slug"]}.html?utm_source=newsletter&amp;utm_medium='
                        f'email">{esc(arts[i]["headline"])}</a></li>' for i in tracked)
        self.files["newsletter.html"] = self.site_page("Newsletter", "This week's picks", "newsletter",
                                                       f"<h1>This week's newsletter</h1><ul>{links}</ul>")
        for i, (name, title) in enumerate((("about", "About us"), ("contact", "Contact"), ("terms", "Terms of use"),
                                           ("privacy", "Privacy"), ("advertise", "Advertise"))):
            text = " ".join(self.sentences[6 * i:6 * i + 6])
            self.files[f"{name}.html"] = self.site_page(title, title, name, f"<h1>{title}</h1><p>{esc(text)}</p>")
        front = "".join(f'<li><a href="/articles/{a["slug"]}.html">{esc(a["headline"])}</a></li>' for a in arts[:15])
        self.files["index.html"] = self.site_page("Home", "Local news", "news", f"<h1>Top stories</h1><ul>{front}</ul>")
        counts = {"articles": n, "print": len(printed), "partner": len(self.partner), "tracking_links": len(tracked),
                  "listings": listings + 7}
        counts["urls"] = sum(counts.values())
        return counts


def generate(folder: str | Path, pages: int = 2000, seed: int = 7) -> dict[str, int]:
    """Write a site of about ``pages`` URLs into ``folder``; return its counts (``urls``: the total)."""
    site = Site(pages, seed)
    counts = site.build()
    root = Path(folder)
    for rel, text in site.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "site.json").write_text(json.dumps(counts, indent=1), encoding="utf-8")
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    print(json.dumps(generate(args.folder, args.pages, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
