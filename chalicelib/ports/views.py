"""The view-counter port: what the view service needs from storage.

Both adapters (DynamoDB: sharded counters; SQLite: upserted rows) keep the same
semantics: every `add_view` is one atomic increment that never loses a count
under concurrency, and `counts` answers a document's totals and a window of
days in one read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence


@dataclass
class ViewCounts:
    """A document's views: all time (total, per version, last view) and per day
    of the requested window (days without views are absent). `last_viewed_ms`
    is exact for views that do not race; among racing views it may be a few ms
    older than the newest (DynamoDB keeps the last write per shard)."""
    total: int = 0
    last_viewed_ms: Optional[int] = None
    days: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ViewTally:
    """Views of one version on one UTC day, the last at `last_ms` (a batch counted from
    the CDN's logs: services/view_logs.py)."""
    document_id: str
    version_id: str
    day: str
    count: int
    last_ms: int


# A batch given to `add_views_once` may change at most this many counters: DynamoDB's
# transaction takes 100 items (3 per tally: day, version, total) and the batch's marker.
MAX_TALLIES_PER_BATCH = 30


class ViewCounterRepository(Protocol):
    def add_view(self, document_id: str, version_id: str, day: str, now_ms: int, shard: int,
                 count: int = 1) -> None:
        """Count `count` views of `version_id` on `day` (UTC, YYYY-MM-DD), the last at
        `now_ms` (the view service adds up a container's views before writing them).
        `shard` (0 .. SHARDS-1) spreads writes; adapters without hot items ignore it."""

    def add_views_once(self, batch_id: str, tallies: Sequence[ViewTally], expires_at: int) -> bool:
        """Add every tally, and remember `batch_id` until `expires_at` (epoch seconds), in
        one atomic step; False (and nothing added) when `batch_id` was added before, so a
        retried batch never counts twice. At most MAX_TALLIES_PER_BATCH tallies."""

    def counts(self, document_id: str, first_day: str, last_day: str) -> ViewCounts:
        """Totals plus the days from `first_day` to `last_day` inclusive, in one read."""

    def counts_many(self, document_ids: Sequence[str], first_day: str, last_day: str) -> dict[str, ViewCounts]:
        """`counts` of each document asked (the dashboard's sparklines and most-viewed
        panel): a few reads for the lot, not one after another."""

    def totals(self, document_ids: Sequence[str]) -> dict[str, tuple[int, Optional[int]]]:
        """(all-time views, last view in ms or None) of each document asked, for a
        listing: a few reads for a page of documents, not one per document."""

    def admit(self, scope: str, window: int, limit: int, expires_at: int) -> bool:
        """Count one hit in the fixed window `window` of `scope`; False (and nothing
        counted) once `limit` hits are in it. Atomic."""

    def delete_for_document(self, document_id: str) -> None:
        """Forget every counter of a document (it is being deleted)."""
