"""Every ``DEDUP_*`` setting, in one place: defaults, meanings, parsing and validation.

:data:`SETTINGS` is the documented table (the enabling flag first, the rest
alphabetical); :func:`markdown_table` renders it for docs/settings.md
(``python -m crawler.config`` prints it; tests/test_docs.py compares the two). :func:`read_settings` turns Scrapy
:class:`~scrapy.settings.BaseSettings` into a typed :class:`DedupSettings`,
raising :class:`ValueError` that names the setting, the value it got and what it
accepts. Values given with ``-s NAME=VALUE`` arrive as strings, so every parser
accepts the string form too: ``1``/``true``, ``0.8``, ``a,b`` or ``["a", "b"]``,
``None`` for an empty optional value, a JSON object for a custom weight mapping.
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from dedup.deduplicator import ACCEPTS, STATUSES, TITLE_ANCHOR_MODES, ConfigError, DedupConfig
from dedup.extract import EXTRACTORS
from dedup.decision import DECISIONS
from dedup.tdw import PRESETS, resolve_weights
from index import DEFAULT_INDEX, default_dropped_log  # index/ owns the URI schemes; backends load lazily
from index.elastic import ES_OPTIONS, option_defaults  # the names and defaults only: imports no client

__all__ = ["Setting", "SETTINGS", "DEFAULTS", "DROPPABLE", "DedupSettings", "is_enabled", "read_settings",
           "settings_of", "markdown_table"]

#: statuses that DEDUP_DROP may list; dropping "unique" would drop every page
DROPPABLE = tuple(s for s in STATUSES if s != "unique")

#: Where the algorithm's defaults live: the table below reads them from :class:`DedupConfig` (and the
#: Elasticsearch options' from the signatures that apply them), never writes a number of its own.
_CONFIG = DedupConfig()
_ES = option_defaults()


@dataclass(frozen=True)
class Setting:
    """One row of the settings table."""

    name: str
    default: Any
    meaning: str


#: The documented table; the enabling flag first, then alphabetical.
SETTINGS: tuple[Setting, ...] = (
    Setting("DEDUP_ENABLED", True,
            "Switch the dedup pipelines on. False makes both raise `NotConfigured`."),
    Setting("DEDUP_BLOCKS", _CONFIG.blocks,
            f"Blocks of the simhash permutation tables, C(blocks, DEDUP_MAX_DISTANCE) tables "
            f"({math.comb(_CONFIG.blocks, _CONFIG.max_distance)} by default); an "
            "integer greater than `DEDUP_MAX_DISTANCE`, at most 64. An existing Elasticsearch dedup index keeps "
            "the value it was made with (another is refused); the embedded index rebuilds its tables."),
    Setting("DEDUP_DEBUG", False,
            "Log every dedup drop at INFO. By default only the first drop of a run is logged at INFO, "
            "the rest at DEBUG."),
    Setting("DEDUP_DECISION", _CONFIG.decision,
            "Whether a page's closest kept page is a copy: `logit` (the calibrated model of `dedup/decision.py`, "
            "fitted by `benchmarks/calibrate.py`; the verdict names the signals that decided it) or `containment` "
            "(the old rule: shingle containment >= `DEDUP_T2`)."),
    Setting("DEDUP_DROP", list(_CONFIG.drop),
            "Verdicts whose items are dropped (and not added to the index): a list, or a comma-separated "
            f"string, of {', '.join(f'`{s}`' for s in DROPPABLE)}. Other duplicates are kept and flagged "
            "in `item['dedup']`, and so is an `exact_duplicate` of rule `site_text` (a page whose only text is its "
            "site's footer or blurb: docs/decision.md)."),
    Setting("DEDUP_DROPPED_LOG", None,
            "JSON-lines file that gets one line per dropped item (url, time, the index it was dropped from, verdict, "
            "the item's fields with its extracted title and text but not its raw HTML, the page's tagged fields). "
            "`None`: `dropped.jsonl` in the local index directory (the working directory for other backends)."),
    Setting("DEDUP_ES_OPTIONS", {},
            "Elasticsearch connection and index options, a dict (a JSON object on the command line): "
            f"`api_key`, `ca_certs`, `verify_certs`, `request_timeout` (s, {_ES['request_timeout']:g}), "
            f"`retry_seconds` (how long a failing cluster is retried with back-off before the crawl stops, "
            f"{_ES['retry_seconds']:g}), `refresh_every` (dedup records buffered before a refresh, "
            f"{_ES['refresh_every']}), `bulk_size` (search-index writes per bulk request, {_ES['bulk_size']}), "
            f"`shards` ({_ES['shards']}), `replicas` (the cluster's default). "
            "User and password go in the URI: `https://USER:PASSWORD@HOST:9200/INDEX`."),
    Setting("DEDUP_EXTRACTOR", _CONFIG.extractor,
            f"Main-text extractor for HTML: {', '.join(f'`{e}`' for e in EXTRACTORS)}. `native` (~0.3 ms a page, "
            "the default) reads the fields and the main-content lines in one pass of our C scanner "
            "(`dedup._scan`): lines of 20 words or more and the headings over them, a listing page (search "
            "results, section fronts) read as its teasers, trafilatura where too little is left; `resiliparse` "
            "(~1 ms) takes the text from resiliparse's main-content pass instead (a second parse of each page), "
            "with the same prose, listing and fallback rules; `trafilatura` (~20 ms) alone; `auto` is "
            "`resiliparse`. The verdict's `extraction` names the one used."),
    Setting("DEDUP_HTML_FIELD", "html",
            "Item field holding raw HTML (str or bytes; an optional `content_type` field gives its charset), "
            "parsed once by `DedupPipeline`, which fills in the item's `title` and `text` where it has none; "
            "items without HTML are checked on their `url`, `title` and `text` fields."),
    Setting("DEDUP_INDEX", DEFAULT_INDEX,
            "URI of the dedup index and of the search index of kept pages: `local://PATH` "
            "(embedded), `http(s)://HOST:PORT/INDEX` or `es://HOST:PORT/INDEX` (Elasticsearch)."),
    Setting("DEDUP_KEEP_HTML", False,
            "Keep the raw HTML field (`DEDUP_HTML_FIELD`) in the items after it is parsed, so feeds and later "
            "pipelines get it. By default it is removed once the item has its `title` and `text`: the exported "
            "items and Scrapy's \"Scraped from\" log lines then carry the text, not the page's markup."),
    Setting("DEDUP_KNN", _CONFIG.knn,
            "Nearest multireference-cosine signatures fetched as candidates per page; an integer >= 0 "
            "(0 turns that search off)."),
    Setting("DEDUP_MAX_DISTANCE", _CONFIG.max_distance,
            "Largest simhash Hamming distance (bits) that makes a candidate; an integer >= 0."),
    Setting("DEDUP_MAX_PAGE_BYTES", _CONFIG.max_page_bytes,
            "Largest HTML body parsed, in bytes; a longer one is cut there before decoding and parsing, and "
            "its verdict says so (`scores.truncated.bytes` = [original, kept]). An integer >= 1024, or "
            "`None` for no limit."),
    Setting("DEDUP_MAX_TEXT_CHARS", _CONFIG.max_text_chars,
            "Longest main text featurized, in characters; longer text is cut there (at a word) and the "
            "verdict says so (`scores.truncated.chars` = [original, kept]). An integer >= 1000, or `None` "
            "for no limit."),
    Setting("DEDUP_REDUCER_JACCARD", _CONFIG.reducer_jaccard,
            "Jaccard threshold of the comparison reducer that prunes candidates before verification; "
            "a number in (0, 1]."),
    Setting("DEDUP_SENTENCE_TOLERANCE", _CONFIG.sentence_tolerance,
            "Sentence-count tolerance of the comparison reducer; an integer >= 1, or `None` for off."),
    Setting("DEDUP_SPOOL", None,
            "JSON-lines file that keeps the items an unreachable index could not decide or store; the "
            "next crawl with the same setting replays them first. `None`: `spool.jsonl` beside the dropped log."),
    Setting("DEDUP_T1", _CONFIG.t1,
            "Shingle containment at which a copy (see `DEDUP_DECISION`) is a `duplicate` rather than a "
            "`near_duplicate`; a number in (0, 1], >= `DEDUP_T2`."),
    Setting("DEDUP_T2", _CONFIG.t2,
            "With `DEDUP_DECISION = containment`: shingle containment at which a candidate makes a page a "
            "`near_duplicate`; a number in (0, 1]."),
    Setting("DEDUP_TITLE_ANCHOR", _CONFIG.title_anchor,
            f"Same-title rule: {', '.join(f'`{m}`' for m in TITLE_ANCHOR_MODES)}. `confirm` needs "
            "shingle resemblance >= `DEDUP_T1` as well, `literal` trusts the title and link count alone, `off` skips it."),
    Setting("DEDUP_WEIGHTS", _CONFIG.weights,
            f"Term weights by page field: a preset ({', '.join(f'`{p}`' for p in PRESETS)}) or a mapping "
            "(a JSON object on the command line) of field name to weight."),
    Setting("DEDUP_WORKERS", "auto",
            "Worker processes that parse pages and compute their features while the crawl process decides and "
            "writes (one writer): an integer >= 0 (0: all in the crawl process), or `auto`: one per core beyond "
            "the first, at most 4 (0 on one core)."),
)

DEFAULTS: dict[str, Any] = {s.name: s.default for s in SETTINGS}


@dataclass(frozen=True)
class DedupSettings:
    """The ``DEDUP_*`` settings, parsed and validated."""

    enabled: bool
    debug: bool
    dropped_log: str
    html_field: str
    index: str
    config: DedupConfig
    es_options: dict
    spool: str
    workers: int = 0
    keep_html: bool = False


# -- value parsers: (name, raw value) -> typed value, or ValueError naming the setting ----------

def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return value.strip().lower() in ("1", "true", "yes", "on")
    raise ValueError(f"{name} must be a boolean (True/False, 1/0), got {value!r}")


def _is_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null"))


def _numeric(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``convert(value)`` of a number or of a string (stripped), None when it fails or for any other
    value (a bool too: True is no number of anything)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return convert(value.strip() if isinstance(value, str) else value)
    except ValueError:
        return None


def _whole(value: int | float | str) -> int:
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    return int(value)


def _int(name: str, value: Any, *, minimum: int | None = None, accepted: str | None = None) -> int:
    """An integer; ``minimum``: a floor of the setting itself (the algorithm's ranges are
    :class:`DedupConfig`'s to check); ``accepted``: what the error says is accepted."""
    parsed = _numeric(value, _whole)
    if parsed is None or (minimum is not None and parsed < minimum):
        raise ValueError(f"{name} must be {accepted or f'an integer >= {minimum}'}, got {value!r}")
    return parsed


def _number(name: str, value: Any, *, accepted: str) -> float:
    """A number (its range is :class:`DedupConfig`'s to check)."""
    parsed = _numeric(value, float)
    if parsed is None or math.isnan(parsed):
        raise ValueError(f"{name} must be {accepted}, got {value!r}")
    return parsed


def _str(name: str, value: Any, *, accepted: str = "a non-empty string") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be {accepted}, got {value!r}")
    return value.strip()


def _list(name: str, value: Any) -> list[str]:
    """A list, a JSON list or a comma-separated string (as ``-s NAME=a,b`` gives)."""
    if _is_none(value):
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{name} must be a list or a comma-separated string, got {text!r} "
                                 f"(invalid JSON: {exc})") from None
        else:
            value = text.split(",")
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of strings or a comma-separated string, got {value!r}")
    return [v.strip() for v in value if v.strip()]


def _drop(name: str, value: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_list(name, value)))  # the statuses are DedupConfig's to check


def _weights(name: str, value: Any) -> str | dict[str, float]:
    accepted = (f"a preset ({', '.join(PRESETS)}) or a mapping of field to weight "
                "(a JSON object on the command line)")
    parsed: Any = value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{name} must be {accepted}, got {value!r} (invalid JSON: {exc})") from None
        else:
            parsed = text
    if isinstance(parsed, str):
        if parsed not in PRESETS:
            raise ValueError(f"{name} must be {accepted}, got {value!r}")
        return parsed
    if not isinstance(parsed, Mapping):
        raise ValueError(f"{name} must be {accepted}, got {value!r}")
    try:
        weights = {str(k): float(v) for k, v in parsed.items()}
        resolve_weights(weights)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc} (got {value!r})") from None
    return weights


def _index(name: str, value: Any) -> str:
    uri = _str(name, value, accepted="an index URI such as local://.dedup")
    try:
        default_dropped_log(uri)  # validates the scheme and, for local://, the path
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return uri


def _es_options(name: str, value: Any) -> dict[str, Any]:
    parsed: Any = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name} must be a dict (a JSON object on the command line), got {value!r} "
                             f"(invalid JSON: {exc})") from None
    if not isinstance(parsed, Mapping):
        raise ValueError(f"{name} must be a dict (a JSON object on the command line), got {value!r}")
    unknown = sorted(set(parsed) - set(ES_OPTIONS))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {unknown}; valid: {', '.join(ES_OPTIONS)}")
    return dict(parsed)


def _workers(name: str, value: Any) -> int:
    from dedup.workers import default_workers

    if isinstance(value, str) and value.strip().lower() == "auto":
        return default_workers()
    try:
        return _int(name, value, minimum=0)
    except ValueError:
        raise ValueError(f"{name} must be an integer >= 0 or 'auto', got {value!r}") from None


#: DedupConfig's knobs that a DEDUP_* setting gives as it is (DEDUP_<KNOB>), parsed by type here and
#: checked by DedupConfig only: (knob, parser)
_KNOBS: dict[str, Callable[[str, Any, str], Any]] = {
    "t1": lambda n, v, acc: _number(n, v, accepted=acc),
    "t2": lambda n, v, acc: _number(n, v, accepted=acc),
    "reducer_jaccard": lambda n, v, acc: _number(n, v, accepted=acc),
    "max_distance": lambda n, v, acc: _int(n, v, accepted=acc),
    "blocks": lambda n, v, acc: _int(n, v, accepted=acc),
    "knn": lambda n, v, acc: _int(n, v, accepted=acc),
    "sentence_tolerance": lambda n, v, acc: None if _is_none(v) else _int(n, v, accepted=acc),
    "title_anchor": lambda n, v, acc: _str(n, v, accepted=acc),
    "extractor": lambda n, v, acc: _str(n, v, accepted=acc),
    "decision": lambda n, v, acc: _str(n, v, accepted=acc),
}


def _setting(knob: str) -> str:
    return f"DEDUP_{knob.upper()}"


def _config(settings: Any, **given: Any) -> DedupConfig:
    """The :class:`DedupConfig` of ``settings``: each knob's string parsed here, its value checked
    once, by DedupConfig, whose :class:`ConfigError` is told again in the settings' names and values."""
    raw = {knob: _get(settings, _setting(knob)) for knob in _KNOBS}
    values = {knob: parse(_setting(knob), raw[knob], ACCEPTS[knob]) for knob, parse in _KNOBS.items()}
    raw_bytes = _get(settings, "DEDUP_MAX_PAGE_BYTES")
    raw_chars = _get(settings, "DEDUP_MAX_TEXT_CHARS")
    # floors of the settings alone (a typo such as 5000 bytes would cut most pages); DedupConfig takes >= 1
    values["max_page_bytes"] = None if _is_none(raw_bytes) else _int("DEDUP_MAX_PAGE_BYTES", raw_bytes, minimum=1024)
    values["max_text_chars"] = None if _is_none(raw_chars) else _int("DEDUP_MAX_TEXT_CHARS", raw_chars, minimum=1000)
    try:
        return DedupConfig(**values, **given)
    except ConfigError as exc:
        names = {knob: _setting(knob) for knob in (*_KNOBS, *exc.fields)}
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")

        def rename(text: str) -> str:
            return pattern.sub(lambda m: names[m.group(1)], text)

        first = exc.fields[0]
        if exc.accepted is not None:  # about one value: quote the setting's own spelling of it
            value = raw.get(first, _get(settings, _setting(first)))
            raise ValueError(f"{_setting(first)} must be {rename(exc.accepted)}, got {value!r}") from None
        raise ValueError(rename(str(exc))) from None


def _get(settings: Any, name: str) -> Any:
    value = settings.get(name) if settings is not None else None
    return DEFAULTS[name] if value is None else value


def is_enabled(settings: Any) -> bool:
    """``DEDUP_ENABLED``, read alone: a disabled component skips validating the rest."""
    return _bool("DEDUP_ENABLED", _get(settings, "DEDUP_ENABLED"))


def read_settings(settings: Any) -> DedupSettings:
    """Parse and validate the ``DEDUP_*`` entries of ``settings`` (a Scrapy ``BaseSettings`` or a dict).

    Missing entries take their defaults from :data:`SETTINGS`. Raises :class:`ValueError`
    naming the first bad setting.
    """
    def get(name: str, parse: Callable[[str, Any], Any]) -> Any:
        return parse(name, _get(settings, name))

    enabled = is_enabled(settings)
    debug = get("DEDUP_DEBUG", _bool)
    index = get("DEDUP_INDEX", _index)
    raw_log = _get(settings, "DEDUP_DROPPED_LOG")
    if _is_none(raw_log):
        dropped_log = default_dropped_log(index)
    else:
        dropped_log = _str("DEDUP_DROPPED_LOG", raw_log, accepted="a file path or None")
    html_field = get("DEDUP_HTML_FIELD", _str)
    es_options = get("DEDUP_ES_OPTIONS", _es_options)
    raw_spool = _get(settings, "DEDUP_SPOOL")
    if _is_none(raw_spool):
        spool = str(Path(dropped_log).with_name("spool.jsonl"))
    else:
        spool = _str("DEDUP_SPOOL", raw_spool, accepted="a file path or None")

    config = _config(settings, weights=get("DEDUP_WEIGHTS", _weights), drop=get("DEDUP_DROP", _drop))
    return DedupSettings(enabled=enabled, debug=debug, dropped_log=dropped_log, html_field=html_field,
                         index=index, config=config, es_options=es_options, spool=spool,
                         workers=get("DEDUP_WORKERS", _workers), keep_html=get("DEDUP_KEEP_HTML", _bool))


def settings_of(crawler: Any) -> DedupSettings:
    """The crawler's :class:`DedupSettings`, parsed once per crawler and kept on it: the pipelines, the
    spool, the journal and the log formatter of one crawl share them. Before the crawler's settings are
    frozen (a test changing them) they are parsed at each call."""
    settings = crawler.settings
    if not getattr(settings, "frozen", False):
        return read_settings(settings)
    parsed = getattr(crawler, "_dedup_settings", None)
    if parsed is None:
        parsed = crawler._dedup_settings = read_settings(settings)
    return parsed


def _format_default(value: Any) -> str:
    if value is None:
        return "`None`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, list):
        return "`[" + ", ".join(f'"{v}"' for v in value) + "]`"
    if isinstance(value, dict):
        return "`" + json.dumps(value) + "`"
    return f"`{value}`"


def markdown_table() -> str:
    """The settings table as Markdown, for docs/settings.md."""
    rows = ["| Setting | Default | Meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {_format_default(s.default)} | {s.meaning} |" for s in SETTINGS]
    return "\n".join(rows) + "\n"


def main() -> int:
    sys.stdout.write(markdown_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
