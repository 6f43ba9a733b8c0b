"""Filtering and summarising the entries of a dropped log (``dedup dropped list|stats``, the report):
which entries a command looks at (:class:`Filter`, ``--since``/``--until`` through :func:`parse_when`)
and their counts and score histogram (:func:`summarize`). The log's format is :mod:`dedup.droplog`."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, time as dtime, timedelta, timezone
from typing import Any, Iterable, Sequence

from ..droplog import STATES, Entry, host_port, parse_time

__all__ = ["Filter", "parse_when", "histogram", "histogram_floor", "text_histogram", "summarize"]


def parse_when(text: str, *, end: bool = False) -> datetime:
    """A ``--since``/``--until`` argument: an ISO date (``2026-11-21``) or date-time
    (``2026-11-21T09:30``, ``...Z``, ``...+02:00``); times without a zone are UTC.

    With ``end=True`` a bare date means the end of that day (``--until 2026-11-21`` includes
    the whole day).  Raises ValueError with the accepted forms.
    """
    raw = text.strip()
    try:
        if len(raw) == 10 and raw[4] == "-" and raw[7] == "-":
            day = date.fromisoformat(raw)
            moment = datetime.combine(day, dtime.min, tzinfo=timezone.utc)
            return moment + timedelta(days=1) - timedelta(microseconds=1) if end else moment
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except (ValueError, IndexError):
        raise ValueError(f"not an ISO date or date-time: {text!r} (e.g. 2026-11-21 or 2026-11-21T09:30Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


@dataclass
class Filter:
    """Which entries a command looks at; every given criterion must hold (values within one
    criterion are alternatives).  ``states``: ``dropped`` and/or ``restored``."""

    rules: Sequence[str] = ()
    statuses: Sequence[str] = ()
    hosts: Sequence[str] = ()
    min_score: float | None = None
    max_score: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    states: Sequence[str] = ("dropped",)

    def __post_init__(self) -> None:
        bad = set(self.states) - set(STATES)
        if bad:
            raise ValueError(f"unknown states {sorted(bad)}; valid: {', '.join(STATES)}")
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            raise ValueError(f"--min-score {self.min_score} is above --max-score {self.max_score}")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ValueError(f"--since {self.since.isoformat()} is after --until {self.until.isoformat()}")

    def __call__(self, entry: Entry) -> bool:
        if self.states and entry.state not in self.states:
            return False
        if self.rules and entry.rule not in self.rules:
            return False
        if self.statuses and entry.status not in self.statuses:
            return False
        if self.hosts and not _host_matches(entry.url, self.hosts):
            return False
        if (self.min_score is not None or self.max_score is not None) and not _within(
                entry.score, self.min_score, self.max_score):
            return False
        if (self.since is not None or self.until is not None) and not _within(entry.when, self.since, self.until):
            return False
        return True

    def apply(self, entries: Iterable[Entry]) -> list[Entry]:
        return [e for e in entries if self(e)]


def _within(value: Any, lo: Any, hi: Any) -> bool:
    """``value`` is known and not below ``lo`` nor above ``hi`` (None: no bound)."""
    if value is None:
        return False
    return not ((lo is not None and value < lo) or (hi is not None and value > hi))


def _host_matches(url: str, hosts: Sequence[str]) -> bool:
    """``--host`` values match the host, ``host:port``, or a parent domain (``example.org``
    matches ``news.example.org``), case-insensitively."""
    name, port = host_port(url)
    full = f"{name}:{port}" if port else name
    for want in hosts:
        w = want.strip().lower()
        if w in (full, name) or name.endswith("." + w):
            return True
    return False


def histogram(scores: Iterable[float], bins: int = 10, lo: float = 0.0, hi: float = 1.0) -> list[tuple[float, float, int]]:
    """``(low, high, count)`` per equal-width bin of [lo, hi]; ``hi`` falls in the last bin."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1 (got {bins})")
    width = (hi - lo) / bins
    counts = [0] * bins
    for s in scores:
        i = int((s - lo) / width + 1e-9) if width else 0  # 1e-9: 0.98 on a 0.02 grid is bin 9, not 8
        counts[min(max(i, 0), bins - 1)] += 1
    return [(round(lo + i * width, 6), round(lo + (i + 1) * width, 6), counts[i]) for i in range(bins)]


def text_histogram(bins: list[tuple[float, float, int]], width: int = 40) -> list[str]:
    """One line per bin: ``0.90-1.00 ###### 12``."""
    top = max((c for _, _, c in bins), default=0)
    lines = []
    for i, (a, b, c) in enumerate(bins):
        bar = "#" * (round(c / top * width) if top else 0)
        if c and not bar:
            bar = "#"
        close = "]" if i == len(bins) - 1 else ")"
        lines.append(f"[{a:.2f}, {b:.2f}{close} {bar:<{width}} {c}")
    return lines


def histogram_floor(scores: Sequence[float]) -> float:
    """Where a score histogram starts: the tenth below the lowest score, at most 0.9 (drops
    are mostly high scores, so [0, 1] would leave most bins empty)."""
    if not scores:
        return 0.0
    return max(0.0, min(math.floor(min(scores) * 10) / 10, 0.9))


def summarize(entries: Sequence[Entry], bins: int = 10, lo: float | None = None) -> dict[str, Any]:
    """Counts by state, status, rule and host, and the score distribution of ``entries``
    (``bins`` equal bins over [``lo``, 1]; ``lo`` by default :func:`histogram_floor`)."""
    scores = [s for s in (e.score for e in entries) if s is not None]
    if lo is None:
        lo = histogram_floor(scores)
    times = [e.time for e in entries if e.when is not None]
    return {
        "pages": len(entries),
        "drops": sum(e.drops for e in entries),
        "by_state": dict(Counter(e.state for e in entries).most_common()),
        "by_status": dict(Counter(e.status for e in entries).most_common()),
        "by_rule": dict(Counter(e.rule for e in entries).most_common()),
        "by_host": dict(Counter(e.host for e in entries).most_common()),
        "score": {
            "name": "containment",
            "scored": len(scores),
            "unscored": len(entries) - len(scores),
            "min": min(scores) if scores else None,
            "max": max(scores) if scores else None,
            "mean": round(sum(scores) / len(scores), 4) if scores else None,
            "histogram": [{"low": a, "high": b, "count": c} for a, b, c in histogram(scores, bins, lo)],
        },
        "first": min(times, key=parse_time) if times else None,
        "last": max(times, key=parse_time) if times else None,
    }
