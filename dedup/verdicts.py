"""A verdict's status in words: what made it ``duplicate`` rather than ``near_duplicate`` (or ``exact``).

Readers of a verdict (``dedup dropped show``, the report, the demo's summary) see two pages with containment
1.0, one a ``duplicate`` and one a ``near_duplicate``; what separates them is in the scores and thresholds
(:mod:`dedup.deduplicator`): a copy is a ``duplicate`` when its shingle containment is >= t1 *and* the angle
between the two pages' TDW vectors is within ``180 * (1 - t1)`` degrees, else a ``near_duplicate``; whether it
is a copy at all is the calibrated decision's (``p`` >= its threshold) or, with ``decision = containment``,
containment >= t2. :func:`reason` says it for one verdict, :func:`legend` for all.
"""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["reason", "legend"]


def _n(value: Any) -> str:
    """A score or threshold as a reader wants it: 36, not 35.99999999999999."""
    return f"{round(float(value), 4):g}" if isinstance(value, (int, float)) else "-"


def _is_copy(scores: Mapping[str, Any], thresholds: Mapping[str, Any]) -> str:
    why = scores.get("decision")
    if isinstance(why, Mapping) and "p" in why:
        return f"a copy by the calibrated decision (p {_n(why.get('p'))} >= {_n(why.get('threshold'))})"
    return f"a copy by containment {_n(scores.get('containment'))} >= t2 {_n(thresholds.get('t2'))}"


def reason(verdict: Mapping[str, Any], *, why_copy: bool = True) -> str:
    """Why ``verdict`` (a ``Verdict.to_dict()``) has its status, in one line; "" for ``unique``.
    ``why_copy=False`` leaves out why it is a copy at all, for a list where every line is one."""
    status, rule = verdict.get("status"), verdict.get("rule")
    scores = verdict.get("scores") or {}
    t = verdict.get("thresholds") or {}
    if rule == "content_hash":
        return "the same main text, once normalised (content hash)"
    if rule == "title_anchor":
        if status == "exact_duplicate":
            return "the same title and link count (title_anchor literal)"
        return (f"the same title and link count, and shingle resemblance {_n(scores.get('resemblance'))} >= "
                f"t1 {_n(t.get('t1'))}")
    containment, angle = scores.get("containment"), scores.get("angle")
    copy = f"{_is_copy(scores, t)}; " if why_copy else ""
    if status == "duplicate":
        return (f"{copy}containment {_n(containment)} >= t1 {_n(t.get('t1'))} and TDW angle "
                f"{_n(angle)}° <= {_n(t.get('angle'))}°")
    if status == "near_duplicate":
        if isinstance(containment, (int, float)) and containment >= float(t.get("t1", 2)):
            return (f"{copy}not a duplicate: TDW angle {_n(angle)}° > {_n(t.get('angle'))}° "
                    f"(containment {_n(containment)} >= t1 {_n(t.get('t1'))})")
        return (f"{copy}not a duplicate: containment {_n(containment)} < t1 "
                f"{_n(t.get('t1'))}")
    return ""


def legend(thresholds: Mapping[str, Any]) -> str:
    """What separates the statuses, with the thresholds of a verdict (its ``thresholds``)."""
    finds = ("the calibrated decision finds" if str(thresholds.get("decision", "")).startswith("logit")
             else f"with containment >= t2 {_n(thresholds.get('t2'))}")
    return (f"duplicate: a copy with containment >= t1 {_n(thresholds.get('t1'))} and TDW angle <= "
            f"{_n(thresholds.get('angle'))}°; near_duplicate: any other copy {finds}; "
            "exact_duplicate: the same normalised text")
