"""Scrapy settings of the ``crawler`` project.

Polite defaults for crawling a real site; a loopback test overrides them on the
command line (``-s CONCURRENT_REQUESTS=1 -s AUTOTHROTTLE_ENABLED=False``). Every
``DEDUP_*`` setting, with its default and meaning, is documented in
:mod:`crawler.config` (``python -m crawler.config`` prints the table); only the
index location is repeated here.
"""

from index import DEFAULT_INDEX as default_index  # lower case: Scrapy takes upper-case names as settings

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

# Near-duplicate filter, switched on as any other project does it: the add-on adds
# DedupPipeline (checks, drops exact copies), IndexPipeline (writes the kept pages to the
# search index), the spool middleware (replays items an unreachable index could not take),
# the request journal (with JOBDIR, nothing lost when a crawl is killed), the honest-end
# extension and the log formatter; it also checks the DEDUP_* settings before the crawl starts.
ADDONS = {"crawler.addon.DedupAddon": 100}
DEDUP_INDEX = default_index  # the default, named here to show where pages go (crawler.config)

FEED_EXPORT_ENCODING = "utf-8"
# the site spider's transient "html"/"content_type" fields never reach a feed, even with DEDUP_ENABLED=False
FEED_EXPORT_FIELDS = ["url", "title", "text", "fetched_at", "dedup"]
# No interactive back doors into a running crawl (the remote-control extension,
# new in Scrapy 2.19, also writes job files to the user's state directory).
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
