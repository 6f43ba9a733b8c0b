"""``dedup explain``: which sentences two pages share (seed 001's sentence-based copy detection)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any, Callable

from index import open_search

from . import DEFAULT_INDEX, dropped_log, index_uri, require_index, rounded
from .dropped import spellings
from . import cut as _cut

__all__ = ["register", "resolve_page"]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "scrapy-dedup"


def _record_page(url: str, title: str, text: str, html: Any = None, how: str = "record", fields: Any = None):
    from ...sources import Source, page_from_source  # the one path from any source to a page

    return page_from_source(Source(url, html=html or None, title=title, text=text, fields=fields, origin=how))


class _Sources:
    """Where pages are looked up: HTML files, the dropped log, the search index (opened lazily)."""

    def __init__(self, uri: str, log: Path | None, log_explicit: bool) -> None:
        self.uri = uri
        self.log_path = log
        self.log_explicit = log_explicit
        self._log: Any = None  # dedup.droplog.DropLog, or False: no log to read
        self._search: Any = None
        self._search_error: Exception | None = None

    def drop_line(self, url: str) -> dict[str, Any] | None:
        """``url``'s latest drop line in the dropped log (:func:`dedup.droplog.read_log`: events folded, bad lines
        skipped), or None: not dropped, or kept again since (its page is read from the index)."""
        if self._log is None:
            self._log = False
            if self.log_path is not None and (self.log_explicit or self.log_path.is_file()):
                from ...droplog import read_log

                self._log = read_log(self.log_path)  # FileNotFoundError, explicit and missing
        entry = self._log.get(url) if self._log else None
        return self._log.line(entry) if entry is not None and entry.state != "kept" else None

    def search(self) -> Any:
        if self._search is None and self._search_error is None:
            options = {"readonly": True} if self.uri.lower().startswith("local://") else {}
            try:
                self._search = open_search(self.uri, **options)
            except (FileNotFoundError, ValueError, OSError) as exc:
                self._search_error = exc
        return self._search

    def close(self) -> None:
        if self._search is not None:
            self._search.close()
            self._search = None


def resolve_page(ref: str, sources: _Sources) -> tuple[Any, dict[str, Any], str]:
    """``(page, verdict-or-{}, where)`` for a file path, a URL in the dropped log or in the index."""
    from ...page import parse_page

    path = Path(ref)
    if path.is_file():
        return parse_page(path.read_bytes(), path.resolve().as_uri()), {}, f"file {path}"
    rec = sources.drop_line(ref)
    if rec is not None:
        item = rec.get("item") or {}
        page = _record_page(ref, str(item.get("title") or ""), str(item.get("text") or ""), item.get("html"),
                            how="dropped-log", fields=rec.get("page"))
        return page, rec.get("verdict") or {}, f"dropped log {sources.log_path}"
    search = sources.search()
    doc = search.get(ref) if search is not None else None
    if doc is not None:
        page = _record_page(ref, str(doc.get("title") or ""), str(doc.get("text") or ""), how="index")
        return page, doc.get("dedup") or {}, f"index {sources.uri}"
    where = [f"index {sources.uri}" + (f" ({sources._search_error})" if sources._search_error else "")]
    if sources.log_path is not None:
        where.append(f"dropped log {sources.log_path}" + ("" if sources.log_path.is_file() else " (missing)"))
    near = [u for u in spellings(ref) if sources.drop_line(u) is not None or (search is not None and search.get(u))]
    hint = ("; did you mean: " + ", ".join(near)) if near else ""
    raise ValueError(f"{ref!r} is not a file and was not found in the {' nor the '.join(where)}{hint}")


def _tables(args: argparse.Namespace, sources: _Sources):
    from ...explain.sentences import cached_extension, default_tables

    base = default_tables()
    if args.no_corpus:
        return base, "shipped tables only (--no-corpus)"
    search = sources.search()
    if search is None:
        return base, f"shipped tables only (no index at {sources.uri})"
    count = search.count()
    if not count:
        return base, "shipped tables only (the index is empty)"

    def texts():
        for doc in search.iter_docs():
            yield str(doc.get("text") or "")

    tables = cached_extension(base, f"{sources.uri}\0{count}", texts, args.cache_dir or _cache_dir(),
                              label=f"index {sources.uri}")
    units = tables.provenance.get("extended", [{}])[-1].get("units", 0)
    return tables, f"shipped tables + {count} kept pages of {sources.uri} ({units} distinct sentences)"


def _side_by_side(left: str, right: str, width: int) -> list[str]:
    col = max((width - 3) // 2, 20)
    a = textwrap.wrap(" ".join(left.split()), col) or [""]
    b = textwrap.wrap(" ".join(right.split()), col) or [""]
    rows = max(len(a), len(b))
    a += [""] * (rows - len(a))
    b += [""] * (rows - len(b))
    return [f"{x:<{col}} | {y}" for x, y in zip(a, b)]


def _print_tree(tree: dict[str, Any], label: str, width: int) -> None:
    nodes = tree["nodes"]
    depth = {0: 0}
    print(f"\n{label} tree: sentences matched per node (own / whole section), linked nodes of the other page")
    for n in nodes:
        if n["parent"] is not None:
            depth[n["id"]] = depth[n["parent"]] + 1
        own = f"{n['matched']}/{len(n['sentences'])}" if n["sentences"] else "-"
        sec = f"{n['section_matched']}/{n['section_sentences']}"
        share = "" if n["section_share"] is None else f"{100 * n['section_share']:3.0f}%"
        links = ", ".join(f"#{k}\u00d7{v}" for k, v in n["partners"][:6]) + (" \u2026" if len(n["partners"]) > 6 else "")
        head = f"{'  ' * depth[n['id']]}#{n['id']} {n['kind']}"
        text = _cut(n["label"], max(width - len(head) - 40, 12))
        print(f"  {head} {text!r:<{max(width - len(head) - 40, 12) + 2}} {own:>7} {sec:>7} {share:>4}  {links}")


DOTPLOT_FORMATS = (".svg", ".png")


def _dotplot_writer(name: str) -> Callable[[Any], None]:
    """A function writing the dotplot to ``name`` in the format its extension names (.svg: the
    labelled vector plot; .png: the plain raster of :func:`dedup.explain.dotplot.dotplot_png`)."""
    from ...explain import dotplot_png, dotplot_svg

    path = Path(name)
    suffix = path.suffix.lower()
    if suffix not in DOTPLOT_FORMATS:
        raise ValueError(f"--dotplot {name}: the extension must name the format, one of "
                         f"{', '.join(DOTPLOT_FORMATS)} (got {suffix or 'none'!r})")
    if suffix == ".svg":
        return lambda e: path.write_text(dotplot_svg(e), encoding="utf-8")
    return lambda e: path.write_bytes(dotplot_png(e))


def cmd_explain(args: argparse.Namespace) -> int:
    from ...explain import explain
    from ...explain.fuzzy import Thresholds

    thresholds = Thresholds(args.permission, args.variation)  # a bad value fails before any lookup
    write_dotplot = _dotplot_writer(args.dotplot) if args.dotplot else None  # a bad name, too
    uri = index_uri(args)
    log_name, named = dropped_log(args)
    if not Path(args.a).is_file() or (args.b and not Path(args.b).is_file()):
        require_index(args)  # a URL to look up where no crawl wrote: say that, not "not found"
    sources = _Sources(uri, Path(log_name), named)
    try:
        page_a, verdict_a, where_a = resolve_page(args.a, sources)
        ref_b = args.b or verdict_a.get("nearest") or verdict_a.get("duplicate_of")  # the page it was matched with
        if not ref_b:
            raise ValueError(f"give page B: {args.a!r} carries no duplicate_of to compare with")
        page_b, _, where_b = resolve_page(ref_b, sources)
        tables, tables_note = _tables(args, sources)
    finally:
        sources.close()
    e = explain(page_a, page_b, tables=tables, thresholds=thresholds)
    if write_dotplot is not None:
        write_dotplot(e)
    if args.json:
        out = e.to_dict()
        out["sources"] = {"a": where_a, "b": where_b, "tables": tables_note}
        print(json.dumps(rounded(out), indent=1, ensure_ascii=False))
        return 0
    width = shutil.get_terminal_size((120, 20)).columns
    na, nb = len(e.sentences_a), len(e.sentences_b)
    print(f"A  {e.url_a}\n   {_cut(e.title_a, width - 3)}  [{where_a}, {na} sentences]")
    print(f"B  {e.url_b}\n   {_cut(e.title_b, width - 3)}  [{where_b}, {nb} sentences]")
    print(f"\nresemblance A\u2192B {e.resemblance_ab:.3f} ({e.matched_a}/{na})   "
          f"B\u2192A {e.resemblance_ba:.3f} ({e.matched_b}/{nb})   odds ratio {e.odds_ratio:.3f}"
          + ("  (100 = identical)" if e.odds_ratio >= 100 else ""))
    print(f"EQ: min Sim \u2265 {e.thresholds['permission']} and |Sim(a,b) \u2212 Sim(b,a)| \u2264 "
          f"{e.thresholds['variation']}; {len(e.matches)} equal pairs, {len(e.gram_matches)} pairs with equal "
          f"least-frequent 4-grams")
    print(f"tables: {tables_note} [{tables.id}]")
    if e.matches:
        print("\nmatched sentences (A# B#  Sim(a,b) Sim(b,a)), A on the left:")
        shown = e.matches if args.show is None else e.matches[: args.show]
        for (i, j, _), (s_ab, s_ba) in zip(shown, e.sims):
            same = " ".join(e.sentences_a[i].split()) == " ".join(e.sentences_b[j].split())
            print(f"  A{i + 1} B{j + 1}  {s_ab:.3f} {s_ba:.3f}" + ("  identical:" if same else ""))
            if same:
                for line in textwrap.wrap(" ".join(e.sentences_a[i].split()), width - 4):
                    print(f"    {line}")
                continue
            for line in _side_by_side(e.sentences_a[i], e.sentences_b[j], width - 4):
                print(f"    {line}")
        if len(shown) < len(e.matches):
            print(f"  \u2026 {len(e.matches) - len(shown)} more (--show)")
    if args.unmatched:
        for label, sents, nearest, matched in (("A", e.sentences_a, e.nearest_a, {m[0] for m in e.matches}),
                                               ("B", e.sentences_b, e.nearest_b, {m[1] for m in e.matches})):
            other = "B" if label == "A" else "A"
            rest = [k for k in range(len(sents)) if k not in matched]
            print(f"\nunmatched sentences of {label}: {len(rest)} (closest sentence of {other}, both Sims)")
            for k in rest:
                near = nearest[k]
                tail = f"  ~{other}{near[0] + 1} {near[1]:.3f} {near[2]:.3f}" if near else ""
                print(f"  {label}{k + 1}{tail}  {_cut(sents[k], width - 30)}")
    _print_tree(e.hierarchy["a"], "A", width)
    _print_tree(e.hierarchy["b"], "B", width)
    if args.dotplot:
        print(f"\ndotplot written to {args.dotplot}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    ex = sub.add_parser(
        "explain", help="which sentences two pages share: resemblance, odds ratio, matched pairs, tree shares",
        description="Compare page A with page B sentence by sentence (fuzzy-set EQ of seed 001). A and B are "
                    "HTML files, URLs in the dropped log, or URLs of kept pages in the search index.")
    ex.add_argument("a", help="page A: an HTML file, or a URL in the dropped log or the index")
    ex.add_argument("b", nargs="?", help="page B (default: the page A was judged a copy of)")
    ex.add_argument("--index", help=f"search index URI (default: $DEDUP_INDEX or {DEFAULT_INDEX})")
    ex.add_argument("--log", help="dropped log (JSON lines); default: $DEDUP_DROPPED_LOG, else dropped.jsonl "
                                  "beside --index, as the crawl writes it")
    ex.add_argument("--json", action="store_true", help="print the explanation as one JSON object")
    ex.add_argument("--dotplot", metavar="FILE", help="also write the dotplot of matched sentences: FILE.svg "
                                                     "(labelled) or FILE.png (plain raster)")
    ex.add_argument("--show", type=int, help="matched pairs printed (default: all)")
    ex.add_argument("--unmatched", action="store_true", help="also list unmatched sentences with their closest")
    ex.add_argument("--no-corpus", action="store_true",
                    help="use the shipped word/4-gram counts only, not those extended from the index's pages")
    ex.add_argument("--cache-dir", help="where extended counts are cached (default: ~/.cache/scrapy-dedup)")
    ex.add_argument("--permission", type=float, default=0.825, help="EQ permission threshold (0.825)")
    ex.add_argument("--variation", type=float, default=0.15, help="EQ variation threshold (0.15)")
    ex.set_defaults(func=cmd_explain)
