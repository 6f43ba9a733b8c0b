"""Spiders of the ``crawler`` project: ``site`` (:mod:`crawler.spiders.site`)."""
