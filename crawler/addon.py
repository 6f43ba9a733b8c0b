"""``DedupAddon``: switch the near-duplicate filter on in any Scrapy project.

    ADDONS = {"crawler.addon.DedupAddon": 100}

adds ``DedupPipeline`` (300) and ``IndexPipeline`` (800) to ``ITEM_PIPELINES``, the
``SpoolMiddleware`` (50, replays items an outage spooled) to ``SPIDER_MIDDLEWARES``, and
makes ``DedupLogFormatter`` the ``LOG_FORMATTER``, without overriding the project's
own entries: a pipeline already listed keeps its priority (or its ``None``), and a
``LOG_FORMATTER`` set by the project or on the command line is kept. ``DEDUP_*``
settings (see :mod:`crawler.config`) configure the rest; items need a ``url`` and
either raw HTML in ``DEDUP_HTML_FIELD`` (``DedupPipeline`` adds its ``title`` and ``text``) or
``title``/``text`` fields.
"""
from __future__ import annotations

from scrapy.settings import BaseSettings

from .logformatter import DedupLogFormatter
from .pipelines import DedupPipeline, IndexPipeline
from .spool import SpoolMiddleware

__all__ = ["DedupAddon", "PIPELINES"]

#: pipeline -> priority: dedup early, so later pipelines see only kept items; index late
PIPELINES = {DedupPipeline: 300, IndexPipeline: 800}


class DedupAddon:
    def update_settings(self, settings: BaseSettings) -> None:
        for pipeline, priority in PIPELINES.items():
            settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", pipeline, priority)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", SpoolMiddleware, 50)
        # "addon" priority is above the defaults only: a project or -s LOG_FORMATTER wins
        settings.set("LOG_FORMATTER", DedupLogFormatter, priority="addon")
