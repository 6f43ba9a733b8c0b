"""Same-site negatives: pages of one site that are NOT copies of each other, but share a template.

    python benchmarks/negsite.py OUT_DIR [--pages 600] [--seed 1]     # writes OUT_DIR/<page>/page.html
    dedup evaluate OUT_DIR                                             # every flag is a false positive

The Gold Set and ``negatives-dev`` hold articles from many sites; what a crawler of one site meets
is different: many short, distinct items in one heavy template, and listing pages whose item lists
overlap.  Each generated page is its own cluster (the layout ``dedup evaluate`` reads), so any page
flagged or dropped is a false positive.  Deterministic for a seed; text from WordNet glosses, as in
``sitegen.py``.  Of the pages, about:

* 45% short news items (40-160 words) in the site template: masthead, a 60-link mega-menu, a
  "most read" sidebar of 10 teasers that is the same on every page, a link-farm footer;
* 15% formulaic items: council minutes, police blotter, match reports and weather notes, written
  from a few sentence templates with different facts (names, numbers, places) filled in;
* 25% listing pages: a "latest" archive paginated 20 teasers a page and sliding by 10, so pages k
  and k+1 share half their items; section pages; tag pages whose item sets overlap;
* 15% very short pages: briefs of one or two sentences and photo captions.

No sentence of WordNet is drawn twice for a site's own text (bodies, briefs, deks): the items are
distinct, so the only text they share is the template's, the formulas' and the teasers'. Drawing with
replacement (until 2026-11-27) put ~47 sentences on two pages each; a two-sentence item then shared half
its text with another (``news-0047`` and ``news-0066`` of seed 2: one 28-word gloss), a partial copy
rather than a negative.

Cited by: docs/accuracy.md, docs/decision.md."""
from __future__ import annotations

import argparse
import html
import random
import sys
from pathlib import Path

from sitegen import load_sentences

__all__ = ["generate"]

SECTIONS = ("city", "county", "schools", "business", "sport", "arts", "opinion", "weather")
TAGS = ("budget", "roads", "housing", "parks", "library", "police", "fire", "election", "river", "festival",
        "tax", "transit", "hospital", "farm", "bridge", "museum")
NAMES = ("Ada Moss", "Ben Ito", "Cara Lund", "Dev Kim", "Eli Hale", "Fay Juarez", "Gus Ortiz", "Hana Berg",
         "Ivo Sato", "Jun Park", "Kai Novak", "Lea Roth", "Max Diaz", "Noor Aziz", "Oda Finch", "Pia Wells")
PLACES = ("Elm Street", "the river walk", "Mill Road", "the north park", "Oak Avenue", "the old depot",
          "Station Square", "Bridge Lane", "the county fairground", "Harbor Drive")
TEAMS = ("Hawks", "Mariners", "Foxes", "Rovers", "Pilots", "Comets", "Badgers", "Otters")

_FORMULAS = {
    "council": ("The city council met on {day} and voted {a} to {b} to approve {n} items, including {thing}.",
                "Council member {name} asked staff to report back on {thing2} by {month}.",
                "The next regular meeting is on {day2} at {hour} p.m. in the council chamber."),
    "blotter": ("Police were called to {place} at {hour}:{minute} p.m. on {day} after a report of {thing}.",
                "Officers spoke with {name}, {age}, and no arrest was made.",
                "Anyone with information is asked to call the non-emergency line."),
    "match": ("The {team} beat the {team2} {a}-{b} on {day} at home.",
              "{name} scored {n} points and the {team} now lead the league by {m} games.",
              "They play the {team3} away on {day2}."),
    "weather": ("Expect a high of {a} degrees and a low of {b} on {day}, with {n} percent chance of rain.",
                "Winds from the {wind} at {m} miles per hour will ease by {hour} p.m.",
                "The weekend looks {sky} with highs near {c}."),
}
_THINGS = ("a new roof for the library", "repairs to the bridge", "a parking study", "the summer festival budget",
           "a loud party", "a stolen bicycle", "a car blocking a driveway", "fireworks", "a water main break",
           "bus shelter repairs", "two new crosswalks", "a tree fallen on a fence")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


class NegativeSite:
    def __init__(self, pages: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sentences = load_sentences()
        self.pages = pages
        self.used: set[str] = set()
        rng = self.rng
        n_items = max(40, int(pages * 0.6))
        self.items = [self._item(i) for i in range(n_items)]
        self.most_read = rng.sample(self.items, 10)
        self.menu = "".join(f'<li><a href="/{s}/{t}.html">{_esc(t.title())}</a></li>'
                            for s in SECTIONS for t in rng.sample(TAGS, 7))
        self.footer = " | ".join(f'<a href="/about/{k}.html">{_esc(w)}</a>' for k, w in
                                 enumerate(("About us", "Contact", "Advertise", "Jobs", "Privacy", "Terms",
                                            "Corrections", "Newsletters", "Archive", "Subscribe", "Help",
                                            "Site map", "Accessibility", "Cookies", "Staff", "Ethics")))

    def sentence(self) -> str:
        """A sentence no other page's own text has (drawn again on a repeat)."""
        while True:
            s = self.rng.choice(self.sentences)
            if s not in self.used:
                self.used.add(s)
                return s

    def _item(self, i: int) -> dict:
        rng, sents = self.rng, self.sentences
        words = rng.choice(sents).rstrip(".").split()[: rng.randint(4, 8)]
        return {"id": i, "slug": f"item-{i:05d}", "section": SECTIONS[i % len(SECTIONS)],
                "tags": rng.sample(TAGS, rng.randint(1, 3)), "headline": " ".join(words).capitalize(),
                "dek": self.sentence(), "author": rng.choice(NAMES), "date": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}"}

    # -- template ---------------------------------------------------------------------------------
    def page(self, title: str, body: str) -> str:
        sidebar = "".join(f'<li><a href="/news/{it["slug"]}.html">{_esc(it["headline"])}</a> '
                          f'<span>{_esc(it["dek"])}</span></li>' for it in self.most_read)
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{_esc(title)} | Riverside Courier</title>"
                "<meta name=\"description\" content=\"Local news from the Riverside Courier\"></head><body>"
                "<header><div class=\"masthead\"><a href=\"/\">Riverside Courier</a> "
                "<span>Your town, every day since 1891</span></div>"
                f"<nav><ul class=\"mega\">{self.menu}</ul></nav></header>"
                f"<main>{body}</main>"
                f"<aside><h2>Most read</h2><ol>{sidebar}</ol>"
                "<div class=\"promo\">Subscribe to the morning newsletter for the day's headlines, "
                "weather and events in your inbox before breakfast.</div></aside>"
                f"<footer><p>{self.footer}</p><p>Copyright 2025 Riverside Courier Media. All rights "
                "reserved. Reproduction without permission is prohibited.</p></footer></body></html>")

    def teaser(self, it: dict) -> str:
        return (f'<li><h3><a href="/news/{it["slug"]}.html">{_esc(it["headline"])}</a></h3>'
                f'<p>{_esc(it["dek"])}</p><small>{it["date"]} by {_esc(it["author"])}</small></li>')

    # -- page kinds -------------------------------------------------------------------------------
    def news(self, it: dict) -> str:
        rng = self.rng
        paragraphs = [" ".join(self.sentence() for _ in range(rng.randint(1, 3)))
                      for _ in range(rng.randint(2, 5))]
        tags = " ".join(f'<a href="/tag/{t}.html">{t}</a>' for t in it["tags"])
        body = (f'<article><h1>{_esc(it["headline"])}</h1><p class="byline">By {_esc(it["author"])}, '
                f'{it["date"]}</p>' + "".join(f"<p>{_esc(p)}</p>" for p in paragraphs)
                + f'<p class="tags">Tags: {tags}</p></article>')
        return self.page(it["headline"], body)

    def formula(self, kind: str, it: dict) -> str:
        rng = self.rng
        a, b = sorted((rng.randint(0, 9), rng.randint(0, 9)), reverse=True)
        slots = {"day": rng.choice(_DAYS), "day2": rng.choice(_DAYS), "a": a, "b": b, "c": rng.randint(50, 90),
                 "n": rng.randint(2, 30), "m": rng.randint(2, 12), "thing": rng.choice(_THINGS),
                 "thing2": rng.choice(_THINGS), "name": rng.choice(NAMES), "month": rng.choice(("May", "June", "July")),
                 "hour": rng.randint(1, 11), "minute": f"{rng.randint(0, 59):02d}", "place": rng.choice(PLACES),
                 "age": rng.randint(19, 70), "team": rng.choice(TEAMS), "team2": rng.choice(TEAMS),
                 "team3": rng.choice(TEAMS), "wind": rng.choice(("north", "south", "east", "west")),
                 "sky": rng.choice(("sunny", "cloudy", "mixed", "wet"))}
        text = " ".join(s.format(**slots) for s in _FORMULAS[kind])
        title = f'{kind.title()}: {slots["day"]} {it["date"]}'
        body = (f'<article><h1>{_esc(title)}</h1><p class="byline">By {_esc(it["author"])}</p>'
                f"<p>{_esc(text)}</p></article>")
        return self.page(title, body)

    def listing(self, title: str, items: list[dict], nav: str = "") -> str:
        body = f"<h1>{_esc(title)}</h1><ul class=\"teasers\">" + "".join(map(self.teaser, items)) + f"</ul>{nav}"
        return self.page(title, body)

    def brief(self, k: int) -> str:
        rng = self.rng
        headline = " ".join(rng.choice(self.sentences).rstrip(".").split()[: rng.randint(4, 8)]).capitalize()
        text = " ".join(self.sentence() for _ in range(rng.randint(1, 2)))
        body = f'<article><h1>{_esc(headline)}</h1><p>{_esc(text)}</p></article>'
        return self.page(headline, body)

    def build(self) -> dict[str, str]:
        rng, items, n = self.rng, self.items, self.pages
        out: dict[str, str] = {}
        kinds = list(_FORMULAS)
        n_news, n_formula, n_list = int(n * 0.45), int(n * 0.15), int(n * 0.25)
        for k, it in enumerate(items[:n_news]):
            out[f"news-{k:04d}"] = self.news(it)
        for k in range(n_formula):
            out[f"formula-{k:04d}"] = self.formula(kinds[k % len(kinds)], rng.choice(items))
        lists: list[tuple[str, str, list[dict]]] = []
        # "latest" archive: 20 a page, sliding by 10 (pages k and k+1 share 10 teasers)
        for k in range(min(n_list // 2, (len(items) - 20) // 10 + 1)):  # no window twice: those would be copies
            start = k * 10
            lists.append((f"archive-{k:04d}", f"Latest news, page {k + 1}", items[start:start + 20]))
        for t in TAGS:
            lists.append((f"tag-{t}", f"Stories tagged {t}", [it for it in items if t in it["tags"]][:20]))
        for s in SECTIONS:
            for page in range(1, 4):
                chosen = [it for it in items if it["section"] == s][(page - 1) * 15:(page - 1) * 15 + 20]
                lists.append((f"section-{s}-{page}", f"{s.title()} news, page {page}", chosen))
        for key, title, chosen in lists[:n_list]:
            if chosen:
                out[key] = self.listing(title, chosen, f'<p class="pager"><a href="?p=next">Next page</a></p>')
        for k in range(n - len(out)):
            out[f"brief-{k:04d}"] = self.brief(k)
        return out


def generate(folder: str | Path, pages: int = 600, seed: int = 1) -> dict[str, int]:
    """Write the site under ``folder`` (one sub-folder per page); return page counts by kind."""
    root = Path(folder)
    counts: dict[str, int] = {}
    for key, text in NegativeSite(pages, seed).build().items():
        (root / key).mkdir(parents=True, exist_ok=True)
        (root / key / "page.html").write_text(text, encoding="utf-8")
        kind = key.split("-", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write (one sub-folder per page)")
    ap.add_argument("--pages", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    counts = generate(args.out, args.pages, args.seed)
    print(f"{sum(counts.values())} pages in {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
