"""``DedupAddon``: switch the near-duplicate filter on in any Scrapy project.

    ADDONS = {"crawler.addon.DedupAddon": 100}

adds ``DedupPipeline`` (300) and ``IndexPipeline`` (800) to ``ITEM_PIPELINES``, the
``SpoolMiddleware`` (50, replays items an outage spooled) and the ``ResponseBodyMiddleware`` (5, an
item's ``response.text`` parsed from the response's bytes, see :mod:`crawler.bodies`) to
``SPIDER_MIDDLEWARES`` (and, when
``SCHEDULER`` is :class:`crawler.frontier.ReliableScheduler`, its ``FrontierMiddleware`` (0)),
``HonestEnd`` (a crawl that lost work exits non-zero, see :mod:`crawler.honesty`) to
``EXTENSIONS``, with ``JOBDIR`` the ``RequestJournal`` extension and its ``JournalMiddleware``
(1) (nothing lost when the crawl is killed, see :mod:`crawler.journal`), makes
``FlushingDupeFilter`` the ``DUPEFILTER_CLASS`` and ``DedupLogFormatter`` the
``LOG_FORMATTER``, without overriding the project's
own entries: a pipeline already listed keeps its priority (or its ``None``), and a
``LOG_FORMATTER`` set by the project or on the command line is kept. ``DEDUP_*``
settings (see :mod:`crawler.config`) configure the rest; items need a ``url`` and
either raw HTML in ``DEDUP_HTML_FIELD`` (``DedupPipeline`` adds its ``title`` and ``text``) or
``title``/``text`` fields.

``scrapy shell``, ``check``, ``fetch``, ``view``, ``parse`` (without ``--pipelines``) and ``list`` get
none of it (:data:`NON_CRAWL_COMMANDS`): they decide nothing, and so run while a crawl holds the
embedded index.

Before the crawl starts the add-on checks the ``DEDUP_*`` settings (the project's, the command line's and
the spider's ``custom_settings``): a misspelt name (close to a known one: ``DEDUP_INDEX`` without its E) and a bad
value end ``scrapy`` with one line (setting, value, what is allowed or meant) and exit status 1, before
anything is fetched or written, and that line goes to ``LOG_FILE`` too; an unknown name close to none is a
warning in Scrapy's log listing the known ones.
"""
from __future__ import annotations

import argparse
import difflib
import logging
import os
import sys
from typing import Sequence

from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings

from index import unavailable

from .bodies import ResponseBodyMiddleware
from .config import DEFAULTS, is_enabled, read_settings
from .honesty import HonestEnd
from .journal import FlushingDupeFilter, JournalMiddleware, RequestJournal
from .logformatter import DedupLogFormatter
from .pipelines import DedupPipeline, IndexPipeline
from .spool import SpoolMiddleware

__all__ = ["DedupAddon", "PIPELINES", "NON_CRAWL_COMMANDS", "check_settings", "decides_nothing", "misspelt",
           "refuse", "scrapy_command", "unknown_settings", "warn_unknown"]

#: pipeline -> priority: dedup early, so later pipelines see only kept items; index late
PIPELINES = {DedupPipeline: 300, IndexPipeline: 800}


logger = logging.getLogger(__name__)


#: ``scrapy`` commands that look at a project or a page and decide nothing: the add-on leaves the dedup
#: pipelines and the journal out of them, so they run while a crawl holds the embedded index (which
#: has a single writer) and never add pages to it. ``scrapy parse --pipelines`` asks for them.
NON_CRAWL_COMMANDS = frozenset({"shell", "check", "fetch", "view", "parse", "list", "settings", "version"})


def scrapy_command(argv: Sequence[str] | None = None) -> str | None:
    """The ``scrapy`` sub-command this process runs (``scrapy X`` or ``python -m scrapy X``), else None.

    Read from ``sys.orig_argv``: Scrapy removes the command name from ``sys.argv``."""
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    for i, arg in enumerate(argv):
        if (arg == "scrapy" and i > 0 and argv[i - 1] == "-m") or (
                os.path.basename(arg) == "scrapy" and (i == 0 or not argv[i - 1].startswith("-"))):
            return next((a for a in argv[i + 1:] if not a.startswith("-")), None)
    return None


def decides_nothing(argv: Sequence[str] | None = None) -> bool:
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    command = scrapy_command(argv)
    return command in NON_CRAWL_COMMANDS and not (command == "parse" and "--pipelines" in argv)


def with_spider_settings(settings: BaseSettings, argv: Sequence[str] | None = None) -> BaseSettings:
    """``settings`` as ``scrapy crawl NAME`` will run with them: NAME's ``custom_settings`` applied (Scrapy
    applies them after ``update_pre_crawler_settings``; command-line ``-s`` values still win, by priority).
    ``settings`` itself for another command, or when the spider cannot be found (Scrapy then says so)."""
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    if scrapy_command(argv) != "crawl":
        return settings
    from scrapy.commands.crawl import Command
    from scrapy.spiderloader import get_spider_loader

    try:
        command = Command()
        command.settings = settings
        parser = argparse.ArgumentParser(add_help=False)
        command.add_options(parser)
        parser.add_argument("spider", nargs="?")
        name = parser.parse_known_args(argv[argv.index("crawl") + 1:])[0].spider
        spider = get_spider_loader(settings).load(name) if name else None
    except (KeyError, ValueError, SystemExit, ImportError):  # no such spider, or arguments Scrapy will refuse
        return settings
    if spider is None:
        return settings
    out = settings.copy()
    spider.update_settings(out)
    return out


def unknown_settings(settings: BaseSettings) -> list[tuple[str, str | None]]:
    """``(name, closest known name or None)`` for every ``DEDUP_*`` setting that is not in the table."""
    out = []
    for name in sorted(str(k) for k in settings if str(k).upper().startswith("DEDUP_") and k not in DEFAULTS):
        # compared without the common prefix, which would make every name look close
        close = difflib.get_close_matches(name.upper()[6:], [k[6:] for k in DEFAULTS], n=1, cutoff=0.6)
        out.append((name, "DEDUP_" + close[0] if close else None))
    return out


def misspelt(settings: BaseSettings) -> str | None:
    """The message about the first unknown ``DEDUP_*`` name that is close to a known one, else None."""
    for name, close in unknown_settings(settings):
        if close:
            return f"unknown setting {name}={settings.get(name)!r}; did you mean {close}?"
    return None


def warn_unknown(settings: BaseSettings) -> None:
    """Log a warning for each unknown ``DEDUP_*`` name (a misspelt one, when allowed to run, says which it
    is close to)."""
    for name, close in unknown_settings(settings):
        logger.warning("Unknown setting %s=%r%s", name, settings.get(name),
                       f"; did you mean {close}?" if close else f"; the DEDUP_* settings are {', '.join(DEFAULTS)}")


def check_settings(settings: BaseSettings) -> None:
    """Raise :class:`UsageError` for a misspelt ``DEDUP_*`` name (close to a known one) and for a bad value
    (setting, value, what is allowed)."""
    wrong = misspelt(settings)
    if wrong:
        raise UsageError(f"scrapy-dedup: {wrong}", print_help=False)
    try:
        if is_enabled(settings):
            read_settings(settings)
    except ValueError as exc:
        raise UsageError(f"scrapy-dedup: {exc}", print_help=False) from None


def _reliable_frontier(scheduler: object) -> bool:
    """Whether ``SCHEDULER`` is :class:`crawler.frontier.ReliableScheduler` (or a subclass); scrapy-redis is
    imported only then."""
    name = scheduler if isinstance(scheduler, str) else getattr(scheduler, "__module__", "")
    if not str(name).startswith("crawler.frontier"):
        return False
    from scrapy.utils.misc import load_object

    from .frontier import ReliableScheduler

    return issubclass(load_object(scheduler), ReliableScheduler)


def refuse(settings: BaseSettings, message: str) -> SystemExit:
    """The ``SystemExit`` that ends ``scrapy`` with ``message``, one line on stderr; with ``LOG_FILE`` set
    the line is logged there too (Scrapy's logging is not configured yet: it is, to the same file)."""
    if settings.get("LOG_FILE"):
        from scrapy.utils.log import configure_logging

        configure_logging(settings)
        logger.error("%s", message)
    return SystemExit(message)


class DedupAddon:
    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        # called when `scrapy crawl` (shell, check...) builds its crawler process, before Scrapy's logging
        # is set up and outside the code that prints a UsageError, so a bad value or a misspelt name is
        # turned into SystemExit(message): Python prints that one line, no traceback, and exits 1. The
        # settings checked include the spider's own custom_settings (with_spider_settings).
        deciding = not decides_nothing()
        spider_settings = with_spider_settings(settings) if deciding else settings
        wrong = misspelt(spider_settings)
        if wrong and deciding:
            raise refuse(settings, f"scrapy-dedup: {wrong} (nothing was crawled)")
        try:
            if is_enabled(spider_settings):
                s = read_settings(spider_settings)
        except ValueError as exc:
            raise refuse(settings, f"scrapy-dedup: {exc}") from None
        if deciding and is_enabled(spider_settings):
            # refused in one line now, not by a traceback when the pipelines open the index
            why = unavailable(s.index, s.es_options, hold=True)  # an embedded index's lock is taken now
            if why:
                raise refuse(settings, f"scrapy-dedup: {why}")

    def update_settings(self, settings: BaseSettings) -> None:
        warn_unknown(settings)  # Scrapy's logging is set up by now: the warnings reach LOG_FILE
        if decides_nothing():
            logger.info("scrapy %s: the dedup pipelines are left out (they would write to the index)",
                        scrapy_command())
            return
        for pipeline, priority in PIPELINES.items():
            settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", pipeline, priority)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", SpoolMiddleware, 50)
        # after the project's own middlewares (which may replace items): the item as the pipelines get it
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", ResponseBodyMiddleware, 5)
        if _reliable_frontier(settings.get("SCHEDULER")):
            # next to the engine: it tells the shared frontier when a page's items and links are safe
            settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", "crawler.frontier.FrontierMiddleware", 0)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", HonestEnd, 500)
        if settings.get("JOBDIR"):  # the request journal belongs to a job; without one it has nothing to do
            settings.setdefault_in_component_priority_dict("EXTENSIONS", RequestJournal, 500)
            # next to the engine (after every other middleware), so it sees the items the pipelines get
            settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", JournalMiddleware, 1)
        # "addon" priority is above the defaults only: a project's or -s value wins
        settings.set("DUPEFILTER_CLASS", FlushingDupeFilter, priority="addon")
        settings.set("LOG_FORMATTER", DedupLogFormatter, priority="addon")
