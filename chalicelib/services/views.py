"""View analytics: count share-link views (beacon), answer stats to owners.

Counting (`record`): the wrapper page at /d/<share> sends one beacon per page
load once it is visible. The service drops bots and prefetches (the rule is in
chalicelib/domain/views.py), checks the viewer may see that version (unknown,
deleted, disabled, expired or locked links count nothing), admits at most
`view_rate_limit()` views per document per client address per window (the
address is only ever used as a keyed hash inside a short-lived rate item; it is
never stored with the counts), then adds one to a random shard of the
document's counters. No cookie is set or read, except the unlock cookie that a
protected document needs anyway.

A viral link (docs/scaling.md, bench/viral_link.py): the beacon is the only
request per view that reaches the function (the page and its content are served
from the edge). In one process the beacon reuses a link's lookup for
`share_cache_seconds()` (eventually consistent reads), and adds up views for
`view_flush_seconds()` before writing them as one increment per day, version
and total item: the first view after a quiet interval is written at once, the
views that follow within the interval go out with the next beacon after it. A
process that is retired with views added up but not yet written loses them (at
most one interval's views of that process); counts are analytics, not money.

Reading (`stats`, `summary`): totals, per version, and per UTC day, in one
counter read.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from chalicelib import config
from chalicelib.domain import views as rules
from chalicelib.errors import RateLimited
from chalicelib.models import DayViews, DocumentStats, VersionViews
from chalicelib.ports.views import ViewCounts
from chalicelib.services import access
from chalicelib.services.context import Context, rfc3339
from chalicelib.services.sharing import Access, ShareLookup, ShareService, Viewer
from chalicelib.services.access import Who, requires


# Most viewed: ranks the workspace's most recently updated documents (a
# workspace with more than this many documents ranks only these).
MOST_VIEWED_SCAN = 200


@dataclass(frozen=True)
class Ranked:
    document_id: str
    title: str
    views_in_window: int
    views_total: int


@dataclass(frozen=True)
class Recorded:
    counted: bool
    reason: str  # "counted", "bot", "prefetch"


class ViewBuffer:
    """Views one process has counted but not yet written, per (document, version, day)."""

    MAX_KEYS = 10_000  # a flood of distinct documents writes at once rather than grow

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, str], list[int]] = {}
        self._last_flush_ms: Optional[int] = None

    def add(self, key: tuple[str, str, str], now_ms: int, flush_ms: int) -> list[tuple[tuple[Any, ...], int, int]]:
        """Count one view; returns what is due to be written now: [(key, count, last_ms)]."""
        with self._lock:
            entry = self._pending.setdefault(key, [0, now_ms])
            entry[0] += 1
            entry[1] = max(entry[1], now_ms)
            # flush_ms <= 0 writes every view at once. Threads read the clock before they
            # take the lock, so `now_ms` can be older than the last flush: never hold a view
            # for that (it would wait for the next beacon, which may never come).
            if (flush_ms > 0 and self._last_flush_ms is not None
                    and now_ms - self._last_flush_ms < flush_ms and len(self._pending) < self.MAX_KEYS):
                return []
            due, self._pending = self._pending, {}
            self._last_flush_ms = now_ms
        return [(k, count, last) for k, (count, last) in due.items()]

    def put_back(self, items: list[tuple[tuple[Any, ...], int, int]]) -> None:
        """Views whose write failed: written with the next flush instead."""
        with self._lock:
            for key, count, last in items:
                entry = self._pending.setdefault(key, [0, last])
                entry[0] += count
                entry[1] = max(entry[1], last)

    def pending(self) -> int:
        with self._lock:
            return sum(count for count, _ in self._pending.values())


class LinkCache:
    """A link's lookup for the beacon, reused for a few seconds in one process."""

    MAX_ENTRIES = 1_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, Optional[int]], tuple[int, ShareLookup]] = {}

    def get(self, key: tuple[str, Optional[int]], now_ms: int) -> Optional[ShareLookup]:
        with self._lock:
            found = self._entries.get(key)
        return found[1] if found and found[0] > now_ms else None

    def put(self, key: tuple[str, Optional[int]], value: ShareLookup, until_ms: int) -> None:
        with self._lock:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = (until_ms, value)


def address_scope(document_id: str, client_ip: str) -> str:
    digest = hmac.new(config.secret_key().encode(), client_ip.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{document_id}#{digest}"


class ViewService:
    def __init__(self, ctx: Context, shard: Optional[Callable[[], int]] = None):
        self.ctx = ctx
        self.shard = shard or (lambda: secrets.randbelow(rules.SHARDS))
        # Per process (wiring.views() keeps one ViewService per process).
        self.buffer = ViewBuffer()
        self.links = LinkCache()

    def _granted(self, share_id: str, version_number: Optional[int], unlock_cookie: Viewer) -> Access:
        sharing = ShareService(self.ctx)
        ttl_ms = int(config.share_cache_seconds() * 1000)
        if ttl_ms <= 0:
            return sharing.access(share_id, unlock_cookie, version_number)
        now_ms = self.ctx.now_ms()
        key = (share_id, version_number)
        looked_up = self.links.get(key, now_ms)
        if looked_up is None:
            looked_up = sharing.lookup(share_id, version_number, consistent=False)
            self.links.put(key, looked_up, now_ms + ttl_ms)
        return sharing.access(share_id, unlock_cookie, version_number, looked_up=looked_up)

    def _count(self, document_id: str, version_id: str, now_ms: int) -> None:
        due = self.buffer.add((document_id, version_id, rules.day_of(now_ms)), now_ms,
                              int(config.view_flush_seconds() * 1000))
        for index, ((doc_id, ver_id, day), count, last_ms) in enumerate(due):
            try:
                self.ctx.views.add_view(doc_id, ver_id, day, last_ms, self.shard(), count)
            except Exception:
                self.buffer.put_back(due[index:])  # the next flush writes them
                raise

    # ---------------------------------------------------------------- viewers

    def record(self, share_id: str, version_number: Optional[int], unlock_cookie: Viewer,
               client_ip: str, user_agent: Optional[str], headers: Mapping[str, str]) -> Recorded:
        """Count one view, or not (bot, prefetch). Raises NotFound / Locked like the
        page itself, RateLimited past the per-address limit."""
        if rules.is_bot(user_agent):
            return Recorded(False, "bot")
        if rules.is_prefetch(headers):
            return Recorded(False, "prefetch")
        granted = self._granted(share_id, version_number, unlock_cookie)
        document_id = granted.doc.document_id
        now_ms = self.ctx.now_ms()
        window_seconds = config.view_rate_window_seconds()
        window, retry = rules.rate_window(now_ms, window_seconds)
        if not self.ctx.views.admit(address_scope(document_id, client_ip), window, config.view_rate_limit(),
                                    now_ms // 1000 + window_seconds + 60):
            raise RateLimited(retry, "Too many views of this document from your address; not counted.")
        self._count(document_id, granted.version_id, now_ms)
        return Recorded(True, "counted")

    # ---------------------------------------------------------------- owners

    def counts(self, document_id: str, days: int) -> tuple[list[str], ViewCounts]:
        window = rules.window(self.ctx.now_ms(), days)
        return window, self.ctx.views.counts(document_id, window[0], window[-1])

    @requires("get_document_stats")
    def stats(self, who: Who, document_id: str, days: int = rules.DEFAULT_STATS_DAYS) -> DocumentStats:
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        versions = sorted(found.versions, key=lambda v: v.number)
        return self.stats_for(found.id, [v.version_id for v in versions], days)

    def stats_for(self, document_id: str, version_ids: list[str], days: int) -> DocumentStats:
        """Stats of a document the caller was already allowed to read."""
        window, counts = self.counts(document_id, days)
        return DocumentStats(
            views_total=counts.total,
            days=[DayViews(date=day, views=counts.days.get(day, 0)) for day in window],
            versions=[VersionViews(version_id=v, views=counts.versions.get(v, 0)) for v in version_ids])

    def totals(self, document_id: str) -> tuple[int, Optional[str]]:
        """(views_total, last_viewed_at) of a document."""
        _, counts = self.counts(document_id, 1)
        return counts.total, rfc3339(counts.last_viewed_ms)

    def sparklines(self, document_ids: list[str], days: int = 7) -> dict[str, tuple[list[str], list[int]]]:
        """Per document: (days, views per day) of the last `days` days, in one counter read."""
        window = rules.window(self.ctx.now_ms(), days)
        found = self.ctx.views.counts_many(document_ids, window[0], window[-1])
        return {document_id: (window, [counts.days.get(day, 0) for day in window])
                for document_id, counts in found.items()}

    @requires("list_documents")
    def most_viewed(self, who: Who, days: int = 30, limit: int = 5) -> list[Ranked]:
        """The workspace's documents with the most views in the last `days` days
        (ties: more all-time views first); documents never viewed are left out."""
        actor = access.actor(self.ctx, who)
        ranked = []
        docs = [doc for doc in self.ctx.documents.list_all(actor.workspace_id)[:MOST_VIEWED_SCAN]
                if not doc.deleting]
        window = rules.window(self.ctx.now_ms(), days)
        found = self.ctx.views.counts_many([doc.document_id for doc in docs], window[0], window[-1])
        for doc in docs:
            counts = found[doc.document_id]
            if counts.total:
                in_window = sum(counts.days.get(day, 0) for day in window)
                ranked.append(Ranked(doc.document_id, doc.title, in_window, counts.total))
        ranked.sort(key=lambda r: (-r.views_in_window, -r.views_total, r.title))
        return ranked[:limit]

