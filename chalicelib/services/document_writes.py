"""What every write of a version shares (publish, edit, restore): the key's and the
workspace's write-limit slots, the plan's quota, the rate-limit headers, retries
after a lost race, and the objects left or discarded when a write fails."""
from __future__ import annotations

import logging
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from chalicelib.domain import limits, plans
from chalicelib.domain.ratelimit import ShardLog, SlotDecision, claim_sharded, current_headers
from chalicelib.errors import DocpubError, PlanLimitReached, RateLimited, VersionConflict
from chalicelib.models import EditResponse, PublishResponse
from chalicelib.ports import Quota, QuotaReached, RateClaim, RateSlot
from chalicelib.ports.records import ApiKey, Document, Event, Version
from chalicelib.ports.repositories import DocumentFields
from chalicelib.services import ratelimits
from chalicelib.services.access import Actor
from chalicelib.services.document_reads import DocumentReads
from chalicelib.services.document_shapes import document_event, live_versions
from chalicelib.services.workspaces import upgrade_offer

# Each round of a race lets at least one writer through, so this bounds the wait
# of the unluckiest of that many simultaneous writers to one document or key.
MAX_WRITE_ATTEMPTS = 50
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
MAX_IDEMPOTENCY_KEY = 255

log = logging.getLogger(__name__)


@dataclass
class WriteResult:
    """A write's answer plus the rate-limit headers it earned."""
    response: Union[PublishResponse, EditResponse]
    headers: dict[str, str] = field(default_factory=dict)


def version_record(version_id: str, number: int, note: Optional[str], now_ms: int, object_key: str,
                    page: bytes, fmt: str, files: Optional[Sequence[Mapping[str, Any]]]) -> Version:
    """The stored version: `format` only for Markdown, `files` only for a bundle."""
    return Version(version_id=version_id, number=number, note=note, created_ms=now_ms, size_bytes=len(page),
                   blob_key=object_key, format=fmt if fmt != "html" else None, files=tuple(files or ()))


def content_kind(version: Version) -> Optional[str]:
    """The document's `latest_content`: what its latest version holds besides plain HTML."""
    kind = " ".join(k for k, present in (("markdown", version.format == "markdown"),
                                         ("files", bool(version.files))) if present)
    return kind or None


# The workspace's write log is kept in this many shards (both stores alike).
WORKSPACE_WRITE_SHARDS = 8


def workspace_write_scopes(workspace_id: str) -> list[str]:
    """The rate-log scopes of the workspace's write log shards."""
    return [ratelimits.scope_key("workspace-writes", workspace_id, str(i)) for i in range(WORKSPACE_WRITE_SHARDS)]


def distinct_files(infos: Optional[Sequence[Mapping[str, Any]]]) -> dict[str, int]:
    """{sha256: size_bytes} of a version's files: what storage counts once per workspace."""
    return {str(f["sha256"]): int(f["size_bytes"]) for f in infos or ()}


def write_logs(key: ApiKey) -> list[ShardLog]:
    """The key's write log as the adapter keeps it: its shards (DynamoDB), or one log (shard 0, SQLite)."""
    return [ShardLog(log.shard, log.seq, list(log.times)) for log in key.write_logs] or [ShardLog(0, 0, [])]


def gave_up(doc: Optional[Document], key_busy: bool, doing: str) -> DocpubError:
    """Every attempt lost a race: say which. Racing writes through one API key
    contend for its write-limit slot (nothing about the document changed), so
    that is a 429 "retry in a second" (a refusal: nothing stored, no slot used),
    not a version conflict."""
    if key_busy:
        return RateLimited(1, f"Too many simultaneous writes with this API key while {doing}; "
                              "try again in 1 second.")
    return VersionConflict(f"The document kept changing while {doing}; retry.",
                           {"latest_version_id": doc.latest_version_id if doc else None})


class DocumentWrites(DocumentReads):
    """The steps every write of a new version takes (publish, edit, restore)."""

    def _slot(self, actor: Actor, now_ms: int) -> tuple[Optional[SlotDecision], Optional[RateSlot]]:
        if actor.key_item is None:
            return None, None  # dashboard writes are counted once, up front (_count_session_write)
        rate = limits.write_rate()
        decision, claim = claim_sharded(write_logs(actor.key_item), now_ms, rate.limit, rate.window_seconds)
        if claim is None:
            raise decision.refuse(limits.write_refusal(decision.retry_after or 1))
        slot = RateSlot(actor.key_item.key_id, claim.expected_seq, claim.new_log, now_ms, claim.shard)
        return decision, slot

    def _quota(self, actor: Actor, doc: Optional[Document], add_bytes: int, now_ms: int,
               files: Optional[dict[str, int]] = None, upload_id: Optional[str] = None) -> Quota:
        """The workspace-wide bounds of one more version (claimed in its transaction); the
        declared sizes of the workspace's pending uploads count (all but `upload_id`, the
        one this version publishes)."""
        from chalicelib.services.pending_uploads import pending_uploads

        live = 0 if doc is None else live_versions(doc)
        room = tuple(p for p in plans.PLANS
                     if (cap := plans.entitlements(p).max_versions_per_document) is None or live < cap)
        storage = {p: plans.entitlements(p).max_storage_bytes for p in plans.PLANS}
        reserved = sum(x.weight for x in pending_uploads(self.ctx, actor.workspace_id, now_ms) if x.holder != upload_id)
        return Quota(actor.workspace_id, add_bytes, storage, room, self._workspace_slot(actor.workspace_id, now_ms),
                     files=dict(files or {}), reserved_bytes=reserved)

    def _workspace_slot(self, workspace_id: str, now_ms: int) -> RateClaim:
        """A slot in the workspace's sliding write log (contract 4: at most N writes in ANY
        rolling window, all keys, grants and sessions together), or 429. The log is kept in
        WORKSPACE_WRITE_SHARDS shards (domain/ratelimit.claim_sharded, like an API key's on
        DynamoDB): concurrent writers of one workspace claim different items; the claim is
        written in the version's transaction, conditional on the shard's sequence."""
        rate = limits.workspace_write_rate()
        scopes = workspace_write_scopes(workspace_id)
        found = self.ctx.rates.get_many(scopes)
        logs = [ShardLog(i, item.seq if item else 0, [int(t) for t in item.hits] if item else [])
                for i, item in enumerate(found)]
        decision, claim = claim_sharded(logs, now_ms, rate.limit, rate.window_seconds)
        if claim is None:
            raise decision.refuse(limits.workspace_write_refusal(decision.retry_after or 1))
        return RateClaim(scopes[claim.shard], claim.expected_seq, claim.new_log,
                         now_ms // 1000 + rate.window_seconds + ratelimits.EXPIRY_MARGIN_SECONDS)

    def _quota_error(self, exc: QuotaReached, quota: Quota, doc: Optional[Document], now_ms: int) -> DocpubError:
        plan = exc.plan or "free"
        entitlements = plans.entitlements(plan)
        upgrade, extra = upgrade_offer(quota.workspace_id) if plan != "pro" else ("", {})
        if exc.which == "versions":
            cap = entitlements.max_versions_per_document
            return PlanLimitReached(
                f"A document on the {plan} plan keeps at most {cap:,} versions; delete old versions "
                f"(DELETE /api/v1/documents/:id/versions/:version_id){' or ' + upgrade if upgrade else ''}.",
                {"entitlement": "max_versions_per_document", "limit": cap,
                 "current": live_versions(doc) if doc else 0, **extra})
        cap = entitlements.max_storage_bytes
        current = exc.current + quota.reserved_bytes  # usage.storage_bytes counts pending uploads
        pending = (f" (with {limits.bytes_text(quota.reserved_bytes)} of pending uploads)"
                   if quota.reserved_bytes else "")
        return PlanLimitReached(
            f"The {plan} plan stores at most {limits.bytes_text(cap)}; this workspace holds "
            f"{limits.bytes_text(current)}{pending} and this version adds "
            f"{limits.bytes_text(exc.adding if exc.adding is not None else quota.add_bytes)}. "
            f"Delete old versions or documents{', or ' + upgrade if upgrade else ''}.",
            {"entitlement": "max_storage_bytes", "limit": cap, "current": current, **extra})

    def rate_limit_headers(self, key_item: Optional[ApiKey]) -> dict[str, str]:
        """The key's current X-RateLimit-* (no slot claimed)."""
        if key_item is None:
            return {}
        rate = limits.write_rate()
        return current_headers(key_item.writes, self.ctx.now_ms(), rate.limit, rate.window_seconds)

    def _with_rate_headers(self, write: Callable[[dict[str, Any]], WriteResult]) -> WriteResult:
        """Every publish/edit answer carries X-RateLimit-*: refusals and replays too."""
        seen: dict[str, Any] = {}
        try:
            result = write(seen)
        except DocpubError as exc:
            if "X-RateLimit-Limit" not in exc.headers:
                exc.headers.update(self.rate_limit_headers(seen.get("key_item")))
            raise
        if "X-RateLimit-Limit" not in result.headers:
            result.headers.update(self.rate_limit_headers(seen.get("key_item")))
        return result

    def _count_session_write(self, actor: Actor) -> None:
        """Writes from a dashboard session have no API key; the same limit applies
        to them per workspace, so uploads cannot bypass it."""
        if actor.key_item is None:
            # OAuth grants count in their own log; dashboard sessions per workspace
            kind = "grant-writes" if actor.write_limit_scope else "session-writes"
            ratelimits.hit(self.ctx, actor.write_limit_scope or ratelimits.scope_key(kind, actor.workspace_id),
                           limits.write_rate(), limits.REFUSALS[kind])

    def _published(self, doc: Document, version: Version, changes: DocumentFields) -> Event:
        """The `document.published` event of a new document or version (written with it)."""
        after = dataclasses.replace(doc, **changes, version_count=version.number,
                                    latest_version_id=version.version_id, latest_size=version.size_bytes,
                                    updated_ms=version.created_ms)
        return document_event("document.published", after, version.created_ms)

    def _discard(self, object_key: str) -> None:
        try:
            self.ctx.blobs.delete(object_key)
        except Exception:  # the orphan sweep removes what this could not
            log.warning("could not delete unreferenced object", extra={"blob_key": object_key})

    @staticmethod
    def _outcome_unknown(object_key: str) -> None:
        """The transaction failed without saying whether it committed (a timeout can
        hide a commit). Deleting the object could leave a committed version without
        its HTML, so it stays: sweep_orphans removes it if no version refers to it."""
        log.warning("write outcome unknown; object left for the orphan sweep", extra={"blob_key": object_key})

    @staticmethod
    def _conflict(doc: Document) -> VersionConflict:
        return VersionConflict(
            f"base_version_id is not the latest version; the latest is {doc.latest_version_id}.",
            {"latest_version_id": doc.latest_version_id})
