"""A Scrapy project as a user writes one, outside this repository's packages, for crawl tests and benchmarks.

``write(folder)`` makes ``folder/scrapy.cfg`` and the package ``newsbot`` with one spider, ``news``, that
yields ``{"url": response.url, "html": response.text}`` for every page and follows every link on the
page's host, and settings with the README's one line ``ADDONS = {"crawler.addon.DedupAddon": 100}``
(``-s ADDONS={}`` turns dedup off for a crawl without it). Run it from ``folder`` with ``scrapy crawl news
-a start_url=URL``; ``crawler`` must be importable (installed, or on ``PYTHONPATH``).

Cited by: docs/performance.md ("Crawling: the add-on's overhead"); the crawl tests."""
from __future__ import annotations

from pathlib import Path

SPIDER = '''import scrapy


class NewsSpider(scrapy.Spider):
    name = "news"
    allowed_domains = ["127.0.0.1"]

    def __init__(self, start_url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start_url]

    def parse(self, response):
        yield {"url": response.url, "html": response.text}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
'''

SETTINGS = '''BOT_NAME = "newsbot"
SPIDER_MODULES = ["newsbot.spiders"]
ROBOTSTXT_OBEY = False
ADDONS = {"crawler.addon.DedupAddon": 100}
# a loopback site: no politeness delays
AUTOTHROTTLE_ENABLED = False
DOWNLOAD_DELAY = 0
TELNETCONSOLE_ENABLED = False
'''


def write(folder: str | Path) -> Path:
    """Write the project into ``folder``; returns ``folder``."""
    root = Path(folder)
    (root / "newsbot" / "spiders").mkdir(parents=True, exist_ok=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = newsbot.settings\n", encoding="utf-8")
    (root / "newsbot" / "__init__.py").write_text("", encoding="utf-8")
    (root / "newsbot" / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (root / "newsbot" / "spiders" / "__init__.py").write_text("", encoding="utf-8")
    (root / "newsbot" / "spiders" / "news.py").write_text(SPIDER, encoding="utf-8")
    return root
