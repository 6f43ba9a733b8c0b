"""The item the ``site`` spider yields and the dedup pipelines fill in."""
from __future__ import annotations

import scrapy

__all__ = ["PageItem"]


class PageItem(scrapy.Item):
    """One fetched HTML page.

    ``url``         the response URL, exactly as fetched (query and ``;params`` kept).
    ``title``       the ``<title>`` text.
    ``text``        the extracted main text (what dedup compares).
    ``fetched_at``  when the response was parsed: Unix epoch seconds, a float (UTC by
                    definition; the dedup index stores the same number).
    ``dedup``       the verdict dict set by ``DedupPipeline`` (``Verdict.to_dict()``:
                    status, duplicate_of, rule, scores, thresholds, ...), or
                    ``{"status": "error", ...}`` when checking the page failed.
    ``page``        private: the parsed :class:`dedup.page.Page`, handed from spider to
                    ``DedupPipeline``, which removes it; it is never exported.
    """

    url = scrapy.Field()
    title = scrapy.Field()
    text = scrapy.Field()
    fetched_at = scrapy.Field()
    dedup = scrapy.Field()
    page = scrapy.Field()
