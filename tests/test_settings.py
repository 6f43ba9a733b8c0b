"""DEDUP_* settings: the parser, the components they configure, and start-up failures of ``scrapy crawl``."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem, NotConfigured, UsageError
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawler import config
from crawler.addon import DedupAddon
from crawler.config import DEFAULTS, SETTINGS, markdown_table, read_settings
from crawler.logformatter import DedupLogFormatter
from crawler.pipelines import DedupPipeline, DuplicateDropped, IndexPipeline
from dedup.deduplicator import DedupConfig, Verdict
from index import open_index

ROOT = Path(__file__).resolve().parents[1]


def cmdline(**values: str) -> Settings:
    """Settings as ``-s NAME=VALUE`` gives them: strings, at cmdline priority."""
    settings = Settings()
    settings.setdict(values, priority="cmdline")
    return settings


# -- the table ------------------------------------------------------------------------------------

def test_table_order_enabling_flag_first_then_alphabetical():
    names = [s.name for s in SETTINGS]
    assert names[0] == "DEDUP_ENABLED"
    assert names[1:] == sorted(names[1:])
    assert all(s.meaning for s in SETTINGS)


def test_every_dedup_setting_used_in_the_code_is_documented():
    used = set()
    for path in (ROOT / "crawler").rglob("*.py"):
        used |= set(re.findall(r"\bDEDUP_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    assert used - set(DEFAULTS) == set()


def test_markdown_table_lists_every_setting_with_its_default(capsys):
    table = markdown_table()
    lines = table.splitlines()
    assert lines[0] == "| Setting | Default | Meaning |"
    assert [line.split("|")[1].strip(" `") for line in lines[2:]] == [s.name for s in SETTINGS]
    assert '| `DEDUP_DROP` | `["exact_duplicate"]` |' in table
    assert config.main() == 0
    assert capsys.readouterr().out == table


# -- parsing ----------------------------------------------------------------------------------------

def test_defaults_match_the_table_and_dedup_config():
    s = read_settings(Settings())
    assert s.enabled is True and s.debug is False
    assert s.index == "local://.dedup" and s.dropped_log == ".dedup/dropped.jsonl"
    assert s.html_field == "html"
    assert s.config == DedupConfig(reducer_jaccard=0.1)
    c = s.config
    assert (c.blocks, c.drop, c.knn, c.max_distance, c.reducer_jaccard, c.sentence_tolerance, c.t1, c.t2,
            c.title_anchor, c.weights) == (DEFAULTS["DEDUP_BLOCKS"], tuple(DEFAULTS["DEDUP_DROP"]),
                                           DEFAULTS["DEDUP_KNN"], DEFAULTS["DEDUP_MAX_DISTANCE"],
                                           DEFAULTS["DEDUP_REDUCER_JACCARD"], None, DEFAULTS["DEDUP_T1"],
                                           DEFAULTS["DEDUP_T2"], DEFAULTS["DEDUP_TITLE_ANCHOR"], "tdw")


def test_command_line_strings_are_parsed():
    s = read_settings(cmdline(
        DEDUP_ENABLED="true", DEDUP_DEBUG="1", DEDUP_DROP="exact_duplicate, duplicate",
        DEDUP_INDEX="local://out/idx", DEDUP_BLOCKS="8", DEDUP_MAX_DISTANCE="4", DEDUP_KNN="0",
        DEDUP_T1="0.9", DEDUP_T2="0.25", DEDUP_REDUCER_JACCARD="0.2", DEDUP_SENTENCE_TOLERANCE="2",
        DEDUP_TITLE_ANCHOR="off", DEDUP_WEIGHTS='{"title": 3, "body": 1}', DEDUP_HTML_FIELD="body_html"))
    assert s.debug is True and s.html_field == "body_html"
    assert s.dropped_log == "out/idx/dropped.jsonl"
    c = s.config
    assert c.drop == ("exact_duplicate", "duplicate")
    assert (c.blocks, c.max_distance, c.knn, c.t1, c.t2, c.reducer_jaccard) == (8, 4, 0, 0.9, 0.25, 0.2)
    assert c.sentence_tolerance == 2 and c.title_anchor == "off"
    assert c.weights == {"title": 3.0, "body": 1.0}


@pytest.mark.parametrize("value, expected", [
    ('["near_duplicate", "exact_duplicate"]', ("near_duplicate", "exact_duplicate")),
    (["duplicate"], ("duplicate",)),
    ("", ()),
    ("None", ()),
])
def test_drop_accepts_json_lists_python_lists_and_nothing(value, expected):
    assert read_settings(cmdline(DEDUP_DROP=value)).config.drop == expected


def test_python_values_from_a_settings_file():
    s = read_settings({"DEDUP_ENABLED": False, "DEDUP_T1": 1, "DEDUP_SENTENCE_TOLERANCE": None,
                       "DEDUP_DROPPED_LOG": "/tmp/x.jsonl", "DEDUP_WEIGHTS": {"body": 1.0}})
    assert s.enabled is False and s.config.t1 == 1.0 and s.dropped_log == "/tmp/x.jsonl"


BAD = [
    # (setting, value, what the message must also say)
    ("DEDUP_T1", "2", "number in (0, 1]"),
    ("DEDUP_T1", "high", "number in (0, 1]"),
    ("DEDUP_T2", "0", "number in (0, 1]"),
    ("DEDUP_REDUCER_JACCARD", "1.5", "number in (0, 1]"),
    ("DEDUP_DROP", "dup", "valid: near_duplicate, duplicate, exact_duplicate"),
    ("DEDUP_DROP", "unique", "valid: near_duplicate, duplicate, exact_duplicate"),
    ("DEDUP_DROP", "[exact_duplicate", "invalid JSON"),
    ("DEDUP_INDEX", "ftp://host/x", "valid schemes: local://, http://, https://, es://"),
    ("DEDUP_INDEX", ".dedup", "valid schemes"),
    ("DEDUP_INDEX", "local://", "needs a path"),
    ("DEDUP_WEIGHTS", "tfidf", "tdw, wwt"),
    ("DEDUP_WEIGHTS", '{"footer": 1}', "unknown TDW fields"),
    ("DEDUP_WEIGHTS", '{"title": -1}', ">= 0"),
    ("DEDUP_MAX_DISTANCE", "-1", "integer >= 0"),
    ("DEDUP_MAX_DISTANCE", "2.5", "integer >= 0"),
    ("DEDUP_MAX_DISTANCE", "6", "DEDUP_BLOCKS must be greater than DEDUP_MAX_DISTANCE"),
    ("DEDUP_BLOCKS", "3", "DEDUP_BLOCKS=3, DEDUP_MAX_DISTANCE=3"),
    ("DEDUP_BLOCKS", "65", "at most 64"),
    ("DEDUP_BLOCKS", "0", "integer >= 1"),
    ("DEDUP_KNN", "-5", "integer >= 0"),
    ("DEDUP_SENTENCE_TOLERANCE", "0", "integer >= 1"),
    ("DEDUP_TITLE_ANCHOR", "maybe", "confirm, literal, off"),
    ("DEDUP_DECISION", "vote", "logit, containment"),
    ("DEDUP_DEBUG", "sometimes", "boolean"),
    ("DEDUP_ENABLED", "yes please", "boolean"),
    ("DEDUP_HTML_FIELD", "", "non-empty string"),
    ("DEDUP_DROPPED_LOG", 5, "file path or None"),
]


@pytest.mark.parametrize("name, value, accepted", BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_bad_value_raises_naming_setting_value_and_what_is_accepted(name, value, accepted):
    with pytest.raises(ValueError) as err:
        read_settings(cmdline(**{name: value}))
    message = str(err.value)
    assert name in message
    assert accepted in message
    if name not in ("DEDUP_BLOCKS", "DEDUP_MAX_DISTANCE") or value in ("-1", "2.5", "0"):
        assert repr(value) in message


def test_t2_above_t1_names_both():
    with pytest.raises(ValueError, match=r"DEDUP_T2 must be <= DEDUP_T1, got DEDUP_T1=0.5, DEDUP_T2=0.6"):
        read_settings(cmdline(DEDUP_T1="0.5", DEDUP_T2="0.6"))


# -- components built from settings -------------------------------------------------------------

def test_disabled_pipelines_raise_not_configured_without_validating_the_rest():
    crawler = get_crawler(settings_dict={"DEDUP_ENABLED": "False", "DEDUP_T1": "2"})
    for component in (DedupPipeline, IndexPipeline):
        with pytest.raises(NotConfigured, match="DEDUP_ENABLED"):
            component.from_crawler(crawler)


def test_pipeline_from_crawler_rejects_bad_settings_before_opening_anything(tmp_path):
    crawler = get_crawler(settings_dict={"DEDUP_INDEX": f"local://{tmp_path}/index", "DEDUP_DROP": "dup"})
    with pytest.raises(ValueError, match="DEDUP_DROP: unknown status 'dup'"):
        DedupPipeline.from_crawler(crawler)
    assert not (tmp_path / "index").exists()


def _pipeline(tmp_path, **config) -> DedupPipeline:
    pipeline = DedupPipeline(index_uri=f"local://{tmp_path}/index", config=DedupConfig(**config),
                             dropped_log=tmp_path / "dropped.jsonl", html_field="body")
    pipeline.open_spider()
    return pipeline


ARTICLE = ("The council voted on Tuesday to repair the library roof before winter. "
           "Work starts in March and will take six weeks, the clerk said. "
           "Readers can use the annexe on Mill Street while the main hall is closed. "
           "The repair is paid for by a grant from the county heritage fund.")
OTHER = ("The evening ferry across the river will stop running in November, the operator said. "
         "Commuters asked for a later bus instead, and the county promised to look at the timetable. "
         "The last crossing leaves the north bank at half past six on weekdays. "
         "Season tickets bought before October will be refunded in full.")


def test_pipeline_checks_plain_items_from_any_project(tmp_path):
    """No parsed page: raw HTML from DEDUP_HTML_FIELD, else the url/title/text fields."""
    pipeline = _pipeline(tmp_path)
    try:
        html = f"<html><head><title>Roof</title></head><body><article><p>{ARTICLE}</p></article></body></html>"
        first = pipeline.process_item({"url": "http://a.example/roof", "body": html,
                                       "fetched_at": "2024-05-01T10:00:00Z"})
        assert first["dedup"]["status"] == "unique"
        other = pipeline.process_item({"url": "http://a.example/ferry", "title": "Ferry", "text": OTHER})
        assert other["dedup"]["status"] == "unique"
        with pytest.raises(DropItem) as err:
            pipeline.process_item({"url": "http://a.example/roof?utm=x", "body": html})
        assert isinstance(err.value, DuplicateDropped)
        assert str(err.value) == ("http://a.example/roof?utm=x: exact_duplicate of http://a.example/roof "
                                  "(rule content_hash)")
        assert err.value.log_level == "DEBUG"
    finally:
        pipeline.close_spider()
    lines = [json.loads(line) for line in (tmp_path / "dropped.jsonl").read_text().splitlines()]
    assert [line["url"] for line in lines] == ["http://a.example/roof?utm=x"]
    # the log keeps what a restore needs (title, extracted text, tagged fields), not the raw HTML,
    # and the verdict once; it names the index the page was dropped from
    assert "body" not in lines[0]["item"] and "dedup" not in lines[0]["item"]
    assert lines[0]["item"]["title"] == "Roof" and lines[0]["item"]["text"] == ARTICLE
    assert lines[0]["verdict"]["duplicate_of"] == "http://a.example/roof"
    assert lines[0]["index"] == f"local://{tmp_path}/index"
    assert first["title"] == "Roof" and first["text"] == ARTICLE  # an html-only item gets its text
    assert lines[0]["time"].endswith("Z")
    index = open_index(f"local://{tmp_path}/index")
    try:
        assert index.by_url("http://a.example/roof").fetched_at == 1714557600.0  # the ISO time, as epoch
        assert len(index) == 2
    finally:
        index.close()


def test_a_drop_message_names_the_page_matched_when_it_is_not_the_groups_kept_page(tmp_path):
    """helper-21: "X: exact_duplicate of R (rule content_hash)" where X's text is that of C, a page flagged as a
    copy of R: the verdict names the group's kept page, and the message now names the page matched too."""
    pipeline = _pipeline(tmp_path)
    page = "<html><head><title>Roof</title></head><body><article><p>{}</p></article></body></html>"
    edited = ARTICLE + " The library will stay open during the works, its manager added on Wednesday."
    try:
        pipeline.process_item({"url": "http://a.example/roof", "body": page.format(ARTICLE * 2)})
        near = pipeline.process_item({"url": "http://b.example/roof", "body": page.format(edited + ARTICLE)})
        assert near["dedup"]["duplicate_of"] == "http://a.example/roof", near["dedup"]
        with pytest.raises(DuplicateDropped) as err:
            pipeline.process_item({"url": "http://c.example/roof", "body": page.format(edited + ARTICLE)})
    finally:
        pipeline.close_spider()
    assert str(err.value) == ("http://c.example/roof: exact_duplicate of http://a.example/roof (rule content_hash, "
                              "matched with http://b.example/roof, a page of its group)")



def test_pipeline_keeps_an_item_it_cannot_check_with_an_error_verdict(tmp_path, caplog):
    pipeline = _pipeline(tmp_path)
    try:
        with caplog.at_level(logging.ERROR, logger="crawler.pipelines"):
            item = pipeline.process_item({"url": "http://a.example/bad", "body": 12345})
        assert item["dedup"]["status"] == "error" and item["dedup"]["kept"] is True
        assert "http://a.example/bad" in caplog.text and caplog.records[0].exc_info is not None
        ok = pipeline.process_item({"url": "http://a.example/ok", "title": "t", "text": ARTICLE})
        assert ok["dedup"]["status"] == "unique"
    finally:
        pipeline.close_spider()


def _verdict() -> Verdict:
    return Verdict("exact_duplicate", "http://a/1", "content_hash", kept=False)


@pytest.mark.parametrize("debug, levels", [(False, [logging.INFO, logging.DEBUG, logging.DEBUG]),
                                           (True, [logging.INFO, logging.INFO, logging.INFO])])
def test_log_formatter_logs_the_first_dedup_drop_at_info_or_all_with_dedup_debug(debug, levels):
    crawler = get_crawler(Spider, settings_dict={"DEDUP_DEBUG": debug})
    formatter = DedupLogFormatter.from_crawler(crawler)
    spider = Spider("s")
    spider.crawler = crawler
    results = [formatter.dropped({"url": f"http://a/{i}"}, DuplicateDropped(f"http://a/{i}: x", _verdict()),
                                 None, spider) for i in range(3)]
    assert [r["level"] for r in results] == levels
    assert ("DEDUP_DEBUG" in results[0]["msg"]) is not debug
    assert all("item" not in r["args"] for r in results)  # a drop line names the url, not the whole page


def test_log_formatter_leaves_other_drops_alone():
    crawler = get_crawler(Spider)
    spider = Spider("s")
    spider.crawler = crawler
    formatter = DedupLogFormatter.from_crawler(crawler)
    result = formatter.dropped({"a": 1}, DropItem("missing price", log_level="ERROR"), None, spider)
    assert result["level"] == logging.ERROR and result["args"]["item"] == {"a": 1}


class PricePipeline:
    """A project's own pipeline."""


def test_addon_adds_pipelines_and_formatter_without_overriding_user_entries():
    crawler = get_crawler(Spider, settings_dict={"ADDONS": {DedupAddon: 100}})
    crawler._apply_settings()
    pipelines = crawler.settings.getdict("ITEM_PIPELINES")
    assert pipelines == {DedupPipeline: 300, IndexPipeline: 800}
    assert isinstance(crawler.logformatter, DedupLogFormatter)

    crawler = get_crawler(Spider, settings_dict={
        "ADDONS": {DedupAddon: 100}, "LOG_FORMATTER": "scrapy.logformatter.LogFormatter",
        "ITEM_PIPELINES": {"crawler.pipelines.IndexPipeline": None, PricePipeline: 100}})
    crawler._apply_settings()
    pipelines = crawler.settings.getdict("ITEM_PIPELINES")
    assert pipelines == {"crawler.pipelines.IndexPipeline": None, PricePipeline: 100, DedupPipeline: 300}
    assert type(crawler.logformatter).__name__ == "LogFormatter"


# -- scrapy crawl fails at start-up ----------------------------------------------------------------

STARTUP = [
    ("DEDUP_T1", "2"),
    ("DEDUP_DROP", "exact_duplicate,dup"),
    ("DEDUP_INDEX", "ftp://127.0.0.1/x"),
    ("DEDUP_WEIGHTS", "tfidf"),
    ("DEDUP_MAX_DISTANCE", "-1"),
    ("DEDUP_BLOCKS", "2"),
]


@pytest.mark.crawl
@pytest.mark.parametrize("name, value", STARTUP, ids=[f"{n}={v}" for n, v in STARTUP])
def test_scrapy_crawl_fails_at_start_up(name, value, site_url, crawl, tmp_path):
    """Issue 15 item 4: one line naming the setting, the value and what is allowed; no traceback."""
    result = crawl(site_url, tmp_path, f"{name}={value}", "LOG_LEVEL=DEBUG")
    assert result.returncode != 0
    last = result.log.strip().splitlines()[-1]
    assert last.startswith("scrapy-dedup: ") and name in last, last
    assert "Traceback" not in result.log, result.log[-2000:]
    assert "Spider opened" not in result.log and "Crawled (" not in result.log
    assert not (tmp_path / "index").exists() and not (tmp_path / "items.jsonl").exists()


@pytest.mark.crawl
def test_scrapy_crawl_stops_when_the_local_index_cannot_be_made(site_url, crawl, tmp_path):
    """A user's report: DEDUP_INDEX under a file crashed the pipelines' open with ~120 lines of traceback
    (NotADirectoryError, then Scrapy's AssertionError in CoreStats) after the spider opened."""
    (tmp_path / "afile").write_text("not a folder")
    result = crawl(site_url, tmp_path, "LOG_LEVEL=INFO", index=tmp_path / "afile" / "index")
    assert result.returncode == 1, result.log[-2000:]
    assert result.log.strip().splitlines() == [
        f"scrapy-dedup: the local dedup index '{tmp_path / 'afile' / 'index'}' cannot be made: "
        f"'{tmp_path / 'afile'}' is a file, not a folder"], result.log[-2000:]
    assert not (tmp_path / "items.jsonl").exists()


def test_cannot_make_creates_nothing(tmp_path):
    from index.local.lock import cannot_make

    assert cannot_make(tmp_path / "a" / "b" / "index") is None
    assert not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("")
    assert "'" + str(tmp_path / "f") + "' is a file, not a folder" in cannot_make(tmp_path / "f" / "index")
    assert "is a file, not a folder" in cannot_make(tmp_path / "f")


# -- issue 15 item 4: unknown names --------------------------------------------------------------

def test_unknown_dedup_setting_names_the_closest_known_one(caplog):
    from scrapy.settings import Settings

    from crawler.addon import check_settings, unknown_settings, warn_unknown

    settings = Settings({"DEDUP_ENABLE": "False", "DEDUP_MAX_DISTANSE": 2, "DEDUP_ZZZ": 1, "DEDUP_T1": 0.9})
    assert unknown_settings(settings) == [("DEDUP_ENABLE", "DEDUP_ENABLED"),
                                          ("DEDUP_MAX_DISTANSE", "DEDUP_MAX_DISTANCE"), ("DEDUP_ZZZ", None)]
    with pytest.raises(UsageError, match=r"DEDUP_ENABLE='False'; did you mean DEDUP_ENABLED\?"):
        check_settings(settings)
    with caplog.at_level(logging.WARNING, logger="crawler.addon"):
        warn_unknown(settings)
    messages = [r.getMessage() for r in caplog.records]
    assert any("DEDUP_ENABLE=" in m and "did you mean DEDUP_ENABLED?" in m for m in messages), messages
    assert any("DEDUP_ZZZ" in m and "DEDUP_INDEX" in m for m in messages), messages
    check_settings(Settings({"DEDUP_ZZZ": 1}))  # close to no known name: a warning only


@pytest.mark.crawl
def test_scrapy_crawl_stops_at_a_misspelt_setting(site_url, crawl, tmp_path):
    """Issue 30 item 3: a misspelt name used to be a warning, and the crawl ran without the setting."""
    result = crawl(site_url, tmp_path, "DEDUP_ENABLE=False", "LOG_LEVEL=INFO")
    assert result.returncode == 1, result.log[-2000:]
    assert result.log.strip().splitlines() == [
        "scrapy-dedup: unknown setting DEDUP_ENABLE='False'; did you mean DEDUP_ENABLED? (nothing was crawled)"]
    assert not (tmp_path / "index").exists() and not (tmp_path / "items.jsonl").exists()


def test_settings_are_parsed_once_per_crawler():
    from crawler.config import settings_of

    class Unbuilt:  # a crawler whose settings may still change
        settings = Settings({"DEDUP_T1": "0.9"})

    assert settings_of(Unbuilt) is not settings_of(Unbuilt)
    crawler = get_crawler(settings_dict={"DEDUP_T1": "0.9"})
    crawler.settings.freeze()
    first = settings_of(crawler)
    assert first is settings_of(crawler) and first.config.t1 == 0.9
    assert settings_of(get_crawler(settings_dict={"DEDUP_T1": "0.9"})) is not first  # each crawler its own


@pytest.mark.parametrize("keep_html", [False, True])
def test_log_lines_about_items_leave_their_raw_html_out(keep_html):
    """Issue 30 item 2: Scrapy's "Scraped from" and "Dropped:" lines print the whole item; an item still
    holding its HTML (one dropped or passed on before it was parsed) is printed without it."""
    item = {"url": "http://a.example/", "html": "<html><body>" + "x" * 5000 + "</body></html>", "title": "A"}
    fmt = DedupLogFormatter(html_field="html", keep_html=keep_html)
    spider = Spider.from_crawler(get_crawler(Spider), name="s")
    for result in (fmt.scraped(item, None, spider), fmt.dropped(item, DropItem("fetched again"), None, spider)):
        shown = result["args"]["item"]
        assert ("<html>" in str(shown)) is keep_html and shown["url"] == item["url"] and shown["title"] == "A"
    assert "html" in item  # the item itself is untouched
