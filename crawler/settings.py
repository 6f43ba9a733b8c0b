"""Scrapy settings of the ``crawler`` project.

Polite defaults for crawling a real site; a loopback test overrides them on the
command line (``-s CONCURRENT_REQUESTS=1 -s AUTOTHROTTLE_ENABLED=False``). Every
``DEDUP_*`` setting, with its default and meaning, is documented in
:mod:`crawler.config` (``python -m crawler.config`` prints the table); only the
index location is repeated here.
"""

BOT_NAME = "crawler"

SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

ROBOTSTXT_OBEY = True

# Politeness: AutoThrottle adapts the delay to the server's latency, starting
# from one second, with at most 8 parallel requests to one site.
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0.5
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0

# Near-duplicate filter: DedupPipeline checks (and drops exact copies), then
# IndexPipeline writes the kept pages to the search index. The same two entries
# are what crawler.addon.DedupAddon adds to any other project.
ITEM_PIPELINES = {
    "crawler.pipelines.DedupPipeline": 300,
    "crawler.pipelines.IndexPipeline": 800,
}
# Items an unreachable Elasticsearch index could not take are spooled and replayed first
# by the next crawl (crawler.spool).
SPIDER_MIDDLEWARES = {"crawler.spool.SpoolMiddleware": 50}
LOG_FORMATTER = "crawler.logformatter.DedupLogFormatter"
DEDUP_INDEX = "local://.dedup"

FEED_EXPORT_ENCODING = "utf-8"
# the site spider's transient "html"/"content_type" fields never reach a feed, even with DEDUP_ENABLED=False
FEED_EXPORT_FIELDS = ["url", "title", "text", "fetched_at", "dedup"]
# No interactive back doors into a running crawl (the remote-control extension,
# new in Scrapy 2.19, also writes job files to the user's state directory).
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
