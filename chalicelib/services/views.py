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

Reading (`stats`, `summary`): totals, per version, and per UTC day, in one
counter read.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from chalicelib import config
from chalicelib.domain import views as rules
from chalicelib.errors import RateLimited
from chalicelib.models import DayViews, DocumentStats, VersionViews
from chalicelib.ports.views import ViewCounts
from chalicelib.services import access
from chalicelib.services.context import Context, default_context, rfc3339
from chalicelib.services.sharing import ShareService
from chalicelib.services.access import requires


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


def address_scope(document_id: str, client_ip: str) -> str:
    digest = hmac.new(config.secret_key().encode(), client_ip.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{document_id}#{digest}"


class ViewService:
    def __init__(self, ctx: Optional[Context] = None, shard: Optional[Callable[[], int]] = None):
        self.ctx = ctx or default_context()
        self.shard = shard or (lambda: secrets.randbelow(rules.SHARDS))

    # ---------------------------------------------------------------- viewers

    def record(self, share_id: str, version_number: Optional[int], unlock_cookie: Optional[str],
               client_ip: str, user_agent: Optional[str], headers: Mapping[str, str]) -> Recorded:
        """Count one view, or not (bot, prefetch). Raises NotFound / Locked like the
        page itself, RateLimited past the per-address limit."""
        if rules.is_bot(user_agent):
            return Recorded(False, "bot")
        if rules.is_prefetch(headers):
            return Recorded(False, "prefetch")
        granted = ShareService(self.ctx).access(share_id, unlock_cookie, version_number)
        document_id = granted.doc["document_id"]
        now_ms = self.ctx.now_ms()
        window_seconds = config.view_rate_window_seconds()
        window, retry = rules.rate_window(now_ms, window_seconds)
        if not self.ctx.views.admit(address_scope(document_id, client_ip), window, config.view_rate_limit(),
                                    now_ms // 1000 + window_seconds + 60):
            raise RateLimited(retry, "Too many views of this document from your address; not counted.")
        self.ctx.views.add_view(document_id, granted.version_id, rules.day_of(now_ms), now_ms, self.shard())
        return Recorded(True, "counted")

    # ---------------------------------------------------------------- owners

    def counts(self, document_id: str, days: int) -> tuple[list[str], ViewCounts]:
        window = rules.window(self.ctx.now_ms(), days)
        return window, self.ctx.views.counts(document_id, window[0], window[-1])

    @requires("get_document_stats")
    def stats(self, who, document_id: str, days: int = rules.DEFAULT_STATS_DAYS) -> DocumentStats:
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        versions = sorted(found.versions, key=lambda v: v["number"])
        return self.stats_for(found.document_id, [v["version_id"] for v in versions], days)

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
        """Per document: (days, views per day) of the last `days` days."""
        out = {}
        for document_id in document_ids:
            window, counts = self.counts(document_id, days)
            out[document_id] = (window, [counts.days.get(day, 0) for day in window])
        return out

    @requires("list_documents")
    def most_viewed(self, who, days: int = 30, limit: int = 5) -> list[Ranked]:
        """The workspace's documents with the most views in the last `days` days
        (ties: more all-time views first); documents never viewed are left out."""
        actor = access.actor(self.ctx, who)
        ranked = []
        for doc in self.ctx.documents.list_all(actor.workspace_id)[:MOST_VIEWED_SCAN]:
            if doc.get("deleting"):
                continue
            window, counts = self.counts(doc["document_id"], days)
            if counts.total:
                in_window = sum(counts.days.get(day, 0) for day in window)
                ranked.append(Ranked(doc["document_id"], doc["title"], in_window, counts.total))
        ranked.sort(key=lambda r: (-r.views_in_window, -r.views_total, r.title))
        return ranked[:limit]

