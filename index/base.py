"""The two storage interfaces: the dedup index and the search index of kept pages."""
from __future__ import annotations

from typing import Any, Iterable, Protocol, runtime_checkable

from dedup.store import EXACT_KEYS, DedupIndex

__all__ = ["DedupIndex", "SearchIndex", "EXACT_KEYS", "verdict_of"]


def verdict_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``dedup`` verdict of a search document as a dict; ValueError when it has no url."""
    if not doc.get("url"):
        raise ValueError("a search document needs a url")
    dedup = doc.get("dedup") or {}
    if not isinstance(dedup, dict):
        dedup = dedup.to_dict() if hasattr(dedup, "to_dict") else dict(dedup)
    return dedup


@runtime_checkable
class SearchIndex(Protocol):
    """Kept pages, searchable by text, with their dedup flags.

    A document is a dict with at least ``url``, ``title``, ``text``, ``fetched_at``
    and ``dedup`` (the verdict dict); ``url`` is its key (adding it again replaces it).
    """

    def add(self, doc: dict[str, Any]) -> None: ...

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Best matches first; each hit is the stored document plus ``score``."""

    def get(self, url: str) -> dict[str, Any] | None: ...

    def remove(self, url: str) -> bool: ...

    def count(self) -> int: ...

    def iter_docs(self) -> Iterable[dict[str, Any]]: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
