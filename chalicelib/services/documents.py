"""Documents: publish, edit, read, list, find, update and delete.

Who may act is either presented API-key `Credentials` (REST, MCP) or an
`Actor` already authenticated by a dashboard session. Writes through a key
claim a slot of the key's write rate limit inside the same transaction that
stores the version, so an accepted write and its slot are one atomic step.
"""
from __future__ import annotations

import base64
import builtins
import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from chalicelib import config
from chalicelib.ports.records import (
    ActivityEntry, ApiKey, Document, DocumentListing, Event, Resolution, StoredIdempotency, Version,
)
from chalicelib.ports.repositories import DocumentFields
from chalicelib.ports import (
    BadCursor, BlobNotFound, DocumentCapReached, GuardFailed, IdempotencyRecord, Quota, QuotaReached, RateClaim,
    RateSlot,
    StaleDocument, definitely_not_applied, document_prefix, version_key,
)
from chalicelib.domain import limits, links, plans
from chalicelib.domain import reviews as review_rules
from chalicelib.domain.edits import apply_edits_utf8
from chalicelib.domain.limits import checked_size, encoded_html
from chalicelib.domain.ratelimit import ShardLog, SlotDecision, claim_sharded, current_headers
from chalicelib.domain.search import fold
from chalicelib.errors import (
    DocpubError, NotFound, PlanLimitReached, RateLimited, ValidationFailed, VersionConflict,
    VersionContentMissing,
)
from chalicelib.models import (
    DocumentDetail, DocumentList, DocumentListItem, DocumentSummary, EditRequest, FileInfo, EditResponse, EditSummary,
    PublishRequest, PublishResponse, UpdateDocumentRequest, VersionInfo, VersionList,
)
from chalicelib.services import access, cdn, cursors, ratelimits
from chalicelib.services import content as content_files
from chalicelib.services import downloads, scanning
from chalicelib.services.views import ViewService
from chalicelib.services.access import (  # noqa: F401  (also imported from here by the dashboard)
    Actor, Who, canonical_document_id, document_not_found, well_formed_id,
)
from chalicelib.services.context import (
    Context, new_document_id, new_share_id, new_version_id, rfc3339, rfc3339_ms,
)
from chalicelib.services import activity
from chalicelib.services.workspaces import upgrade_offer
from chalicelib.services.access import requires

log = logging.getLogger(__name__)

# Each round of a race lets at least one writer through, so this bounds the wait
# of the unluckiest of that many simultaneous writers to one document or key.
MAX_WRITE_ATTEMPTS = 50
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
MAX_IDEMPOTENCY_KEY = 255


@dataclass
class WriteResult:
    """A write's answer plus the rate-limit headers it earned."""
    response: Union[PublishResponse, EditResponse]
    headers: dict[str, str] = field(default_factory=dict)


def share_url(share_id: str) -> str:
    return f"{config.base_url()}/d/{share_id}"


def summary_model(doc: Union[Document, DocumentListing], review_state: Optional[str] = None) -> DocumentSummary:
    """The document's summary; a listing holds no review state: give `review_state` (read
    from the Document) or it answers none."""
    if review_state is None:
        review_state = review_rules.state_of(doc) if isinstance(doc, Document) else "none"
    return DocumentSummary(
        document_id=doc.document_id, title=doc.title, description=doc.description,
        share_url=share_url(doc.share_id), created_at=rfc3339(doc.created_ms),
        updated_at=rfc3339(doc.updated_ms), version_count=live_versions(doc),
        latest_version_id=doc.latest_version_id,
        open_feedback_count=doc.open_feedback_count,
        share_enabled=links.enabled(doc), share_expires_at=rfc3339_ms(links.expires_ms(doc)),
        share_access=doc.share_access or "public",  # type: ignore[arg-type]  # public | workspace
        review_state=review_state,  # type: ignore[arg-type]  # one of domain/reviews.STATES
    )


def live_versions(doc: Union[Document, DocumentListing]) -> int:
    """How many versions a document holds (numbers stay as they were when old ones are deleted)."""
    return doc.version_count - doc.versions_deleted


def version_model(item: Version) -> VersionInfo:
    return VersionInfo(version_id=item.version_id, number=item.number, note=item.note,
                       created_at=rfc3339(item.created_ms), size_bytes=item.size_bytes,
                       files=[FileInfo(**f) for f in item.files] if item.files else None)


def document_exclusions(include_html: bool, include_source: bool) -> Optional[set[str]]:
    """Fields of DocumentDetail left out of an answer unless asked for."""
    excluded = set() if include_html else {"html"}
    if not include_source:
        excluded |= {"format", "source"}
    return excluded or None


def _version_record(version_id: str, number: int, note: Optional[str], now_ms: int, object_key: str,
                    page: bytes, fmt: str, files: Optional[Sequence[Mapping[str, Any]]]) -> Version:
    """The stored version: `format` only for Markdown, `files` only for a bundle."""
    return Version(version_id=version_id, number=number, note=note, created_ms=now_ms, size_bytes=len(page),
                   blob_key=object_key, format=fmt if fmt != "html" else None, files=tuple(files or ()))


def _content_kind(version: Version) -> Optional[str]:
    """The document's `latest_content`: what its latest version holds besides plain HTML."""
    kind = " ".join(k for k, present in (("markdown", version.format == "markdown"),
                                         ("files", bool(version.files))) if present)
    return kind or None


def _request_hash(request: PublishRequest, data: bytes) -> str:
    """What Idempotency-Key replays compare: every field, the HTML as its UTF-8
    bytes (already made), without serialising a 4 MiB document to JSON again."""
    digest = hashlib.sha256(request.model_dump_json(exclude={"html"}).encode())
    digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


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


def _gave_up(doc: Optional[Document], key_busy: bool, doing: str) -> DocpubError:
    """Every attempt lost a race: say which. Racing writes through one API key
    contend for its write-limit slot (nothing about the document changed), so
    that is a 429 "retry in a second" (a refusal: nothing stored, no slot used),
    not a version conflict."""
    if key_busy:
        return RateLimited(1, f"Too many simultaneous writes with this API key while {doing}; "
                              "try again in 1 second.")
    return VersionConflict(f"The document kept changing while {doing}; retry.",
                           {"latest_version_id": doc.latest_version_id if doc else None})


class DocumentService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    # ---------------------------------------------------------------- loading

    def _load(self, who: Who, document_id: Optional[str] = None, idempotency_digest: Optional[str] = None,
              include_deleting: bool = False, seen: Optional[dict[str, Any]] = None
              ) -> tuple[Actor, Optional[Document], Optional[StoredIdempotency]]:
        """Verify the caller and read the document (and idempotency record) in one round trip."""
        found = access.find_document(self.ctx, who, document_id, include_deleting=include_deleting,
                                     idempotency_digest=idempotency_digest, seen=seen)
        return found.actor, found.doc, found.idempotency

    def _load_document(self, who: Who, document_id: str, include_deleting: bool = False,
                       seen: Optional[dict[str, Any]] = None) -> tuple[Actor, Document]:
        """Verify the caller and read an existing document (the one NotFound otherwise)."""
        found = access.find_document(self.ctx, who, document_id, include_deleting=include_deleting, seen=seen)
        return found.actor, found.document

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

    # ---------------------------------------------------------------- publish

    @requires("publish_document")
    def publish(self, who: Who, request: PublishRequest, idempotency_key: Optional[str] = None,
                upload: Optional[tuple[str, bytes]] = None,
                content: Optional["content_files.Content"] = None) -> WriteResult:
        """Publish JSON (`html` by `format`, `files`), or an uploaded file (filename, bytes):
        .html/.htm, .md/.markdown or a .zip bundle, which then stands for `html`; or
        `content` already stored (a version restored as it was: format, source, files)."""
        taken: list[str] = []  # the upload this call took, given back if the publish is refused
        try:
            return self._with_rate_headers(lambda seen: self._publish(who, request, idempotency_key, seen, upload,
                                                                      content, taken))
        except DocpubError as exc:
            if taken and exc.status < 500:  # refused: nothing was stored, the upload stays usable
                from chalicelib.services.uploads import UploadService

                UploadService(self.ctx).release(taken[0])
            raise

    @requires("restore_version")
    def restore(self, who: Who, document_id: str, number: int, note: str,
                base_version_id: Optional[str] = None) -> WriteResult:
        """Publish version `number` again as the newest: its page, Markdown source and files."""
        found = access.find_document(self.ctx, access.actor(self.ctx, who), document_id)
        version = self._numbered_version(found.document, number)
        try:
            content = content_files.stored_content(self.ctx, found.document, version)
        except BlobNotFound:
            raise VersionContentMissing(version.version_id) from None
        request = PublishRequest(title=found.document.title, html="(restored)", note=note,  # type: ignore[call-arg]
                                 document_id=found.id, base_version_id=base_version_id)
        return self.publish(found.actor, request, content=content)

    def _count_session_write(self, actor: Actor) -> None:
        """Writes from a dashboard session have no API key; the same limit applies
        to them per workspace, so uploads cannot bypass it."""
        if actor.key_item is None:
            # OAuth grants count in their own log; dashboard sessions per workspace
            kind = "grant-writes" if actor.write_limit_scope else "session-writes"
            ratelimits.hit(self.ctx, actor.write_limit_scope or ratelimits.scope_key(kind, actor.workspace_id),
                           limits.write_rate(), limits.REFUSALS[kind])

    def _publish(self, who: Who, request: PublishRequest, idempotency_key: Optional[str], seen: dict[str, Any],
                 upload: Optional[tuple[str, bytes]] = None,
                 prepared: Optional["content_files.Content"] = None,
                 taken: Optional[list[str]] = None) -> WriteResult:
        digest = None
        if idempotency_key is not None:
            if not 1 <= len(idempotency_key) <= MAX_IDEMPOTENCY_KEY:
                raise ValidationFailed.field("Idempotency-Key", "must be 1 to 255 characters")
            digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
        actor, doc, idem = self._load(who, request.document_id, digest, seen=seen)
        if request.base_version_id is not None and request.document_id is None:
            raise ValidationFailed.field("base_version_id", "needs document_id: it names the version of that "
                                                            "document the new version builds on")
        if prepared is not None:
            data, content = prepared.page, prepared
        elif request.upload_id is not None:
            if upload is not None or request.html is not None:
                raise ValidationFailed.field("upload_id", "give upload_id in place of `html` or `file`, not beside it")
            from chalicelib.services.uploads import UploadService

            if digest and actor.key_item is not None:  # a retry of a publish that used the upload
                replay = self._replay(idem, _request_hash(request, b""))
                if replay is not None:
                    return replay
            upload = UploadService(self.ctx).take(actor.workspace_id, request.upload_id)
            if taken is not None:
                taken.append(request.upload_id)
        elif upload is None and request.html is None:
            raise ValidationFailed.field("html", "is required (or upload_id, for a file sent to /api/v1/uploads)")
        if prepared is not None:
            pass
        elif upload is not None:
            data = upload[1]
            content = content_files.from_upload(upload[0], upload[1], request.title)
        else:
            data = encoded_html(request.html or "")
            content = content_files.build(request.html or "", request.format, request.title, request.files)
        # A new version keeps the document's title unless `title` is sent (the CLI and the Action too).
        title = content_files.require_title(request.title or (doc.title if doc else None), content)
        link_changes = self._link_changes(request)
        # Contract 7g: scanned before anything is stored (a restored version was scanned when published)
        scanned = scanning.Outcome() if prepared is not None else scanning.check(
            self.ctx, actor.workspace_id, content, request.allow_secrets)
        self._count_session_write(actor)
        # An upload_id names its bytes (single use), so its publish is keyed on the request alone:
        # a retry finds the answer after the upload is gone.
        request_hash = _request_hash(request, b"" if request.upload_id else data) if digest else None
        if digest and actor.key_item is None:
            digest = None  # idempotency is a feature of API keys
        replay = self._replay(idem, request_hash)
        if replay is not None:
            return replay
        version_id = new_version_id()
        document_id = request.document_id or new_document_id()
        share_id = doc.share_id if doc else new_share_id()
        object_key = version_key(actor.workspace_id, document_id, version_id)
        if doc is not None and request.base_version_id and request.base_version_id != doc.latest_version_id:
            raise self._conflict(doc)
        objects = content_files.StoredContent(self.ctx, actor.workspace_id, document_id, version_id)
        stored = False
        key_busy = False
        try:
            for attempt in range(MAX_WRITE_ATTEMPTS):
                self.ctx.backoff(attempt)
                now_ms = self.ctx.now_ms()
                decision, slot = self._slot(actor, now_ms)
                quota = self._quota(actor, doc, len(content.page), now_ms,  # 429 before anything is stored
                                    distinct_files(content.file_infos()), request.upload_id)
                if not stored:
                    objects.put(content)
                    stored = True
                version = _version_record(version_id, (doc.version_count + 1) if doc else 1, request.note,
                                                  now_ms, object_key, content.page, content.format, content.file_infos())
                response = PublishResponse(document_id=document_id, version_id=version_id,
                                           version_number=version.number, share_url=share_url(share_id),
                                           warnings=scanned.response_warnings())
                idem_record = self._idem_record(actor, digest, request_hash, response, now_ms)
                # The activity log's line is stored in the same atomic step as the version.
                logged = activity.entry(self.ctx, actor, actor.workspace_id, "document.publish", document_id,
                                        {"title": title, "version": version.number, **scanned.detail()})
                try:
                    if doc is None:
                        self._create(actor, document_id, share_id, request, title, version, slot, idem_record,
                                     link_changes, quota, logged)
                    else:
                        changes: DocumentFields = {"title": title, "latest_content": _content_kind(version),
                                                   **link_changes}
                        if request.description is not None:
                            changes["description"] = request.description
                        self.ctx.documents.append_version(doc, version, changes, slot, idem_record, quota,
                                                          activity=logged,
                                                          event=self._published(doc, version, changes))
                except QuotaReached as exc:
                    raise self._quota_error(exc, quota, doc, now_ms) from exc  # refused: nothing committed
                except GuardFailed as exc:
                    if exc.which == "idem" and actor.key_item is not None and digest is not None:
                        replay = self._replay(self.ctx.documents.get_idempotency(actor.key_item.key_id, digest),
                                              request_hash)
                        if replay is not None:
                            return replay
                    key_busy = exc.which == "rate"
                    actor = access.reload_key(self.ctx, actor)
                    continue
                except StaleDocument:
                    key_busy = False
                    doc = access.check_still_visible(self.ctx, actor, document_id)
                    if request.base_version_id:
                        raise self._conflict(doc)
                    continue
                except PlanLimitReached:
                    raise  # refused: nothing committed, the object is discarded below
                except BaseException as exc:
                    if not definitely_not_applied(exc):
                        stored = False  # outcome unknown: keep the objects (see _outcome_unknown)
                        objects.keep()
                        self._outcome_unknown(object_key)
                    raise
                stored = False  # committed: the objects are referenced now
                objects.keep()
                if request.upload_id is not None:
                    from chalicelib.services.uploads import UploadService

                    UploadService(self.ctx).discard(actor.workspace_id, request.upload_id)
                self.ctx.nudge_outbox()
                if doc is not None and links.withdraws(doc, link_changes, now_ms):
                    cdn.withdraw(self.ctx, doc.share_id, "link settings")
                return WriteResult(response, decision.headers() if decision else {})
            raise _gave_up(doc, key_busy, "publishing")
        finally:
            if stored:
                objects.discard()

    def _published(self, doc: Document, version: Version, changes: DocumentFields) -> Event:
        """The `document.published` event of a new document or version (written with it)."""
        after = dataclasses.replace(doc, **changes, version_count=version.number,
                                    latest_version_id=version.version_id, latest_size=version.size_bytes,
                                    updated_ms=version.created_ms)
        return self._event("document.published", after, version.created_ms)

    @staticmethod
    def _event(kind: str, doc: Document, now_ms: int) -> Event:
        from chalicelib.services.events import make_event

        return make_event(kind, doc.workspace_id, doc.document_id, now_ms,
                          summary_model(doc).model_dump(mode="json"))

    def _link_changes(self, request: Union[PublishRequest, UpdateDocumentRequest]) -> DocumentFields:
        """Document fields for the link settings a publish/PATCH body gives:
        `share_enabled`, and `share_expires_ms` (None: clear it)."""
        given = request.model_fields_set
        changes: DocumentFields = {}
        if "share_enabled" in given and request.share_enabled is not None:
            changes["share_enabled"] = request.share_enabled
        if "share_expires_at" in given:
            changes["share_expires_ms"] = links.parse_expiry(request.share_expires_at, self.ctx.now_ms())
        if "share_access" in given and request.share_access is not None:
            changes["share_access"] = request.share_access
        return changes

    def _create(self, actor: Actor, document_id: str, share_id: str, request: PublishRequest, title: str,
                version: Version, slot: Optional[RateSlot], idem: Optional[IdempotencyRecord],
                link_changes: Optional[DocumentFields] = None, quota: Optional[Quota] = None,
                logged: Optional[ActivityEntry] = None) -> None:
        # The cap is a condition of the transaction (no read of the workspace first):
        # it holds unless the workspace's plan at commit time is uncapped.
        max_documents = limits.FREE_MAX_DOCUMENTS
        links_given: dict[str, Any] = {k: v for k, v in (link_changes or {}).items() if v is not None}
        doc = Document(document_id=document_id, workspace_id=actor.workspace_id, title=title,
                       description=request.description or "", share_id=share_id,
                       created_ms=version.created_ms, updated_ms=version.created_ms,
                       version_count=1, latest_version_id=version.version_id,
                       latest_size=version.size_bytes, open_feedback_count=0,
                       latest_content=_content_kind(version), **links_given)
        try:
            self.ctx.documents.create(doc, version, max_documents, plans.UNCAPPED_PLANS, slot, idem, quota,
                                      activity=logged,
                                      event=self._published(doc, version, {}))
        except DocumentCapReached as exc:
            current = exc.workspace.document_count if exc.workspace is not None else max_documents
            upgrade, extra = upgrade_offer(actor.workspace_id)
            raise PlanLimitReached(
                f"The free plan holds at most {max_documents} documents; delete one, publish a new "
                f"version of an existing document, or {upgrade}.",
                {"limit": max_documents, "current": current, **extra}) from exc

    def _idem_record(self, actor: Actor, digest: Optional[str], request_hash: Optional[str],
                     response: PublishResponse, now_ms: int) -> Optional[IdempotencyRecord]:
        if digest is None or actor.key_item is None or request_hash is None:
            return None
        now = now_ms // 1000
        return IdempotencyRecord(actor.key_item.key_id, digest, request_hash, response.model_dump_json(),
                                 now + IDEMPOTENCY_TTL_SECONDS, now)

    def _replay(self, idem: Optional[StoredIdempotency], request_hash: Optional[str]) -> Optional[WriteResult]:
        if idem is None or idem.expires_at < self.ctx.now_ms() // 1000:
            return None
        if idem.request_hash != request_hash:
            raise ValidationFailed(
                "Idempotency-Key was already used with a different request body; use a new key.",
                {"fields": [{"field": "Idempotency-Key", "message": "reused with a different body"}]})
        return WriteResult(PublishResponse.model_validate_json(idem.response_json), {"Idempotent-Replayed": "true"})

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

    # ---------------------------------------------------------------- edit

    @requires("edit_document")
    def edit(self, who: Who, document_id: str, request: EditRequest) -> WriteResult:
        document_id = canonical_document_id(document_id)
        return self._with_rate_headers(lambda seen: self._edit(who, document_id, request, seen))

    @requires("accept_suggestion")
    def edit_resolving(self, who: Who, document_id: str, request: EditRequest,
                       edits_for: Callable[[str, bytes], Sequence[Any]],
                       resolves: Callable[[Document, Version], Resolution],
                       activity_detail: Optional[Mapping[str, Any]] = None) -> WriteResult:
        """An accepted suggestion (services/suggestions.py): `edits_for` makes the edit from
        the source it applies to, and the thread `resolves` is resolved in the same write."""
        document_id = canonical_document_id(document_id)
        return self._with_rate_headers(lambda seen: self._edit(
            who, document_id, request, seen, edits_for=edits_for, resolves=resolves, activity_detail=activity_detail))

    def _edit(self, who: Who, document_id: str, request: EditRequest, seen: dict[str, Any],
              edits_for: Optional[Callable[[str, bytes], Sequence[Any]]] = None,
              resolves: Optional[Callable[[Document, Version], Resolution]] = None,
              activity_detail: Optional[Mapping[str, Any]] = None) -> WriteResult:
        """The edit batch applied to the latest version. `edits_for(format, source)` makes
        the batch from the version it is applied to (an accepted suggestion, located in
        that source); `resolves(doc, version)` is the suggestion resolved in the same
        write (FeedbackGone, with nothing written, when it is no longer open)."""
        actor, doc = self._load_document(who, document_id, seen=seen)
        self._count_session_write(actor)
        if request.base_version_id and request.base_version_id != doc.latest_version_id:
            raise self._conflict(doc)
        before = None
        key_busy = False
        for attempt in range(MAX_WRITE_ATTEMPTS):
            self.ctx.backoff(attempt)
            now_ms = self.ctx.now_ms()
            decision, slot = self._slot(actor, now_ms)
            if before is None:  # first, and again after another write made a newer version
                fmt, files, before = self._editable(doc)
                # The engine works on the stored UTF-8 bytes: no decode, no re-encode.
                # A Markdown document is edited in its source and rendered again, once per
                # version edited (a retry while the key is busy reuses the page).
                edits = edits_for(fmt, before) if edits_for is not None else request.edits
                outcome = apply_edits_utf8(before, edits, markdown=fmt == "markdown")
                if not outcome.html:  # the same rule as publish: a document is never empty
                    raise ValidationFailed.field("edits", "the edits would leave the document empty")
                data = checked_size(outcome.html)
                content = (content_files.markdown_content(data, doc.title) if fmt == "markdown"
                           else content_files.Content(page=data))
                # Contract 7g: the document as it would be, before anything is stored
                scanned = scanning.check(self.ctx, actor.workspace_id, content, request.allow_secrets,
                                         "send the edit again")
            version_id = new_version_id()
            object_key = version_key(actor.workspace_id, document_id, version_id)
            version = _version_record(version_id, doc.version_count + 1, request.note, now_ms, object_key,
                                      content.page, fmt, files)
            quota = self._quota(actor, doc, version.size_bytes, now_ms,  # 429 before anything is stored
                                distinct_files(files))
            objects = content_files.StoredContent(self.ctx, actor.workspace_id, document_id, version_id)
            objects.put(content)
            objects.touch_files(files or [])  # an edit keeps the version's files
            try:
                logged = activity.entry(self.ctx, actor, actor.workspace_id, "document.edit", document_id,
                                        {"title": doc.title, "version": version.number, **(activity_detail or {}),
                                         **scanned.detail()})
                self.ctx.documents.append_version(doc, version, {}, slot, None, quota, activity=logged,
                                                  event=self._published(doc, version, {}),
                                                  resolves=resolves(doc, version) if resolves else None)
            except QuotaReached as exc:
                self._discard(object_key)
                raise self._quota_error(exc, quota, doc, now_ms) from exc
            except GuardFailed:
                objects.discard()
                key_busy = True
                actor = access.reload_key(self.ctx, actor)
                continue
            except StaleDocument:
                objects.discard()
                key_busy = False
                doc = access.check_still_visible(self.ctx, actor, document_id)
                if request.base_version_id:
                    raise self._conflict(doc)
                before = None  # re-apply the batch to the new latest version
                continue
            except BaseException as exc:
                if definitely_not_applied(exc):
                    objects.discard()
                else:
                    self._outcome_unknown(object_key)
                raise
            self.ctx.nudge_outbox()
            summary = EditSummary(edits_applied=outcome.edits_applied, replacements=outcome.replacements,
                                  size_bytes_before=len(before), size_bytes_after=len(data))
            response = EditResponse(document_id=document_id, version_id=version_id,
                                    version_number=version.number, share_url=share_url(doc.share_id),
                                    summary=summary, warnings=scanned.response_warnings())
            return WriteResult(response, decision.headers() if decision else {})
        raise _gave_up(doc, key_busy, "editing")

    def _editable(self, doc: Document) -> tuple[str, Optional[Sequence[Mapping[str, Any]]], bytes]:
        """(format, files, the bytes edits apply to) of the latest version. A plain HTML
        page (no `latest_content` on the document) needs no read of its version record."""
        if not doc.latest_content:
            return "html", None, self._read_bytes(doc, doc.latest_version_id)
        version = self.ctx.documents.get_version(doc.document_id, doc.version_count)
        if version is None:
            raise VersionContentMissing(doc.latest_version_id)
        fmt = version.format or "html"
        if fmt == "markdown":
            try:
                return fmt, version.files, content_files.read_source(self.ctx, doc, version)[1]
            except BlobNotFound:
                raise VersionContentMissing(version.version_id) from None
        return fmt, version.files, self._read_bytes(doc, version.version_id)

    def _read_html(self, doc: Document, version_id: str) -> str:
        return self._read_bytes(doc, version_id).decode("utf-8")

    def _read_bytes(self, doc: Document, version_id: str) -> bytes:
        try:
            return self.ctx.blobs.get_html(version_key(doc.workspace_id, doc.document_id, version_id))
        except BlobNotFound:
            error = VersionContentMissing(version_id)
            log.error("version content missing", extra={"document_id": doc.document_id, "version_id": version_id,
                                                         "request_id": (error.details or {}).get("request_id")})
            raise error from None

    # ---------------------------------------------------------------- reads

    @requires("get_document")
    def get(self, who: Who, document_id: str, include_html: bool = False,
            version_id: Optional[str] = None, include_source: bool = False) -> DocumentDetail:
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        doc, versions, document_id = found.document, found.versions, found.id
        html = fmt = source = None
        wanted = version_id or doc.latest_version_id
        chosen = next((v for v in versions if v.version_id == wanted), None)
        if version_id is not None and chosen is None:
            raise NotFound(f"No version {version_id} of document {document_id}.")
        if include_html:
            html = self._read_html(doc, wanted)
        if include_source:
            if chosen is None:
                raise VersionContentMissing(wanted)
            try:
                fmt, data = content_files.read_source(self.ctx, doc, chosen)
            except BlobNotFound:
                raise VersionContentMissing(wanted) from None
            source = data.decode("utf-8")
        views_total, last_viewed_at = ViewService(self.ctx).totals(document_id)
        listed = versions[-limits.VERSIONS_LISTED:]  # the newest, oldest first among them
        return DocumentDetail(**summary_model(doc).model_dump(), versions=[version_model(v) for v in listed],
                              versions_truncated=len(listed) < len(versions),
                              passphrase_protected=bool(doc.passphrase_hash), html=html,
                              views_total=views_total, last_viewed_at=last_viewed_at,
                              format=fmt, source=source)  # type: ignore[arg-type]  # html or markdown

    @requires("download_document")
    def download(self, who: Who, document_id: str, version_id: Optional[str] = None) -> "downloads.Download":
        """The owner's download of a version (the latest by default): .html, .md or .zip."""
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        wanted = version_id or found.document.latest_version_id
        version = next((v for v in found.versions if v.version_id == wanted), None)
        if version is None:
            raise NotFound(f"No version {wanted} of document {found.id}.")
        try:
            return downloads.package(self.ctx, found.document, version)
        except BlobNotFound:
            raise VersionContentMissing(wanted) from None

    @requires("get_document")
    def get_html(self, who: Who, document_id: str, version_number: Optional[int] = None
                 ) -> tuple[Document, Version, str]:
        """(document, version, html) of the latest or a numbered version."""
        found = access.find_document(self.ctx, access.actor(self.ctx, who), document_id)
        doc = found.document
        version = self._numbered_version(doc, version_number or doc.version_count)
        return doc, version, self._read_html(doc, version.version_id)

    def _numbered_version(self, doc: Document, number: int) -> Version:
        """Version `number` of `doc`, or NotFound (also for a number no version can have:
        below 1 or past the latest, which the store need not be asked about)."""
        version = (self.ctx.documents.get_version(doc.document_id, number)
                   if 1 <= number <= doc.version_count else None)
        if version is None:
            raise NotFound(f"No version {number} of document {doc.document_id}.")
        return version

    @requires("diff_versions")
    def comparable_numbers(self, who: Who, document_id: str, old_number: Optional[int],
                           new_number: Optional[int]) -> tuple[int, int]:
        """The version numbers a comparison stands for when one or both are left out: the
        latest version, and the version before the newer one (numbers stay when old
        versions are deleted, so "before" is the nearest one that still exists)."""
        if old_number is not None and new_number is not None:
            return old_number, new_number
        listed = [v.number for v in self.get(who, document_id).versions]  # the newest 100, oldest first
        new = new_number if new_number is not None else listed[-1]
        old = old_number if old_number is not None else max((n for n in listed if n < new), default=new)
        return old, new

    @requires("list_documents")
    def list(self, who: Who, limit: int = 20, cursor: Optional[str] = None,
             query: Optional[str] = None, review_state: Optional[str] = None) -> DocumentList:
        """A page of the workspace's documents, newest first; `query` finds (ranked),
        `review_state` keeps those in that review state (domain/reviews.STATES)."""
        actor = access.actor(self.ctx, who)
        if review_state is not None and review_state not in review_rules.STATES:
            raise ValidationFailed.field("review_state", "must be one of " + ", ".join(review_rules.STATES))
        searching = query is not None and bool(query.strip())
        if review_state is not None:
            listings = (self._ranked(actor, (query or "").strip()) if searching
                        else self.ctx.documents.list_all(actor.workspace_id))
            return self._kept_page(actor, listings, lambda doc: review_rules.state_of(doc) == review_state,
                                   limit, cursor, f"review#{review_state}")
        if searching:
            return self._find(actor, (query or "").strip(), limit, cursor)
        raw = cursors.unseal(actor.workspace_id, "documents", cursor)
        try:
            items, next_cursor = self.ctx.documents.list_page(actor.workspace_id, limit, raw)
        except BadCursor as exc:
            raise ValidationFailed.field("cursor", cursors.MESSAGE) from exc
        return DocumentList(documents=self._list_items(items),
                            next_cursor=cursors.seal(actor.workspace_id, "documents", next_cursor))

    @requires("list_documents")
    def awaiting_review(self, who: Who, email: str, limit: int = 20, cursor: Optional[str] = None) -> DocumentList:
        """The documents `email` (a member) was asked to review and has not decided on in
        their latest version: the dashboard's "Needs my review"."""
        actor = access.actor(self.ctx, who)
        reviewer = f"member:{email}"
        return self._kept_page(actor, self.ctx.documents.list_all(actor.workspace_id),
                               lambda doc: review_rules.awaits(doc, email, reviewer), limit, cursor,
                               f"awaiting#{email}")

    def _kept_page(self, actor: Actor, listings: Sequence[DocumentListing], keep: Callable[[Document], bool],
                   limit: int, cursor: Optional[str], listing: str) -> DocumentList:
        """A page of the listings whose document `keep`s, in their order: the documents are
        read a hundred at a time (one batch read each) until the page is full."""
        offset = _decode_offset(cursors.unseal(actor.workspace_id, listing, cursor))
        kept: builtins.list[tuple[DocumentListing, Document]] = []
        for start in range(0, len(listings), 100):
            chunk = listings[start:start + 100]
            docs = self.ctx.documents.get_many([i.document_id for i in chunk])
            kept += [(i, d) for i in chunk if (d := docs.get(i.document_id)) is not None
                     and access.visible(d, actor) and keep(d)]
            if len(kept) > offset + limit:
                break
        page = kept[offset:offset + limit]
        more = len(kept) > offset + limit
        return DocumentList(
            documents=self._list_items([i for i, _ in page], {d.document_id: d for _, d in page}),
            next_cursor=cursors.seal(actor.workspace_id, listing, _encode_offset(offset + limit) if more else None))

    def _list_items(self, items: Sequence[DocumentListing],
                    docs: Optional[Mapping[str, Document]] = None) -> builtins.list[DocumentListItem]:
        """Summaries with their views (one counter read per page, not per document) and
        review states (kept on the documents: one batch read per page, unless given)."""
        ids = [i.document_id for i in items]
        totals = self.ctx.views.totals(ids)
        if docs is None:
            docs = self.ctx.documents.get_many(ids) if ids else {}
        listed = []
        for item in items:
            views_total, last_ms = totals.get(item.document_id, (0, None))
            doc = docs.get(item.document_id)
            state = review_rules.state_of(doc) if doc is not None else "none"
            listed.append(DocumentListItem(**summary_model(item, state).model_dump(), views_total=views_total,
                                           last_viewed_at=rfc3339(last_ms)))
        return listed

    def summaries(self, who: Who, document_ids: Sequence[str]) -> dict[str, DocumentSummary]:
        """The caller's documents among `document_ids` (at most 100), by id, in one
        read; ids of other workspaces, deleted or unknown documents are left out."""
        actor = access.actor(self.ctx, who)
        wanted = {access.canonical_document_id(i) for i in document_ids if access.well_formed_id(i)}
        found = self.ctx.documents.get_many(sorted(wanted)) if wanted else {}
        return {document_id: summary_model(doc) for document_id, doc in found.items() if access.visible(doc, actor)}

    def _find(self, actor: Actor, query: str, limit: int, cursor: Optional[str]) -> DocumentList:
        offset = _decode_offset(cursors.unseal(actor.workspace_id, "find", cursor))
        ranked = self._ranked(actor, query)
        page = ranked[offset:offset + limit]
        more = offset + limit < len(ranked)
        return DocumentList(documents=self._list_items(page),
                            next_cursor=cursors.seal(actor.workspace_id, "find",
                                                     _encode_offset(offset + limit) if more else None))

    def _ranked(self, actor: Actor, query: str) -> builtins.list[DocumentListing]:
        """The documents matching `query`: exact title, title prefix, title, description."""
        needle = fold(query)
        ranked = []
        for position, item in enumerate(self.ctx.documents.list_all(actor.workspace_id)):
            title = fold(item.title)
            description = fold(item.description)
            if title == needle:
                rank = 0
            elif title.startswith(needle):
                rank = 1
            elif needle in title:
                rank = 2
            elif needle in description:
                rank = 3
            else:
                continue
            ranked.append((rank, position, item))  # position keeps newest-first within a rank
        ranked.sort(key=lambda r: (r[0], r[1]))
        return [i for _, _, i in ranked]

    # ---------------------------------------------------------------- update / delete

    @requires("update_document")
    def update(self, who: Who, document_id: str, request: UpdateDocumentRequest) -> DocumentDetail:
        document_id = canonical_document_id(document_id)
        fields: DocumentFields = request.model_dump(  # type: ignore[assignment]  # title, description
            exclude_unset=True, exclude_none=True,
                                    exclude={"share_enabled", "share_expires_at", "share_access"})
        fields.update(self._link_changes(request))
        if not fields:
            raise ValidationFailed(
                "Give title, description, share_enabled, share_expires_at and/or share_access to change.",
                {"fields": [{"field": "title", "message": "at least one field to change is required"}]})
        actor, doc = self._load_document(who, document_id)
        share_fields = set(fields) & {"share_enabled", "share_expires_ms", "share_access"}
        logged = activity.entry(self.ctx, actor, actor.workspace_id,
                                "share.settings" if share_fields == set(fields) else "document.update",
                                document_id, {"title": fields.get("title") or doc.title,
                                              "fields": ", ".join(sorted(fields))})
        try:
            self.ctx.documents.update_fields(doc, fields, activity=logged)
        except StaleDocument as exc:
            raise document_not_found(document_id) from exc
        if links.withdraws(doc, fields, self.ctx.now_ms()):
            cdn.withdraw(self.ctx, doc.share_id, "link settings")
        return self.get(actor, document_id)

    @requires("delete_document")
    def delete(self, who: Who, document_id: str) -> None:
        document_id = canonical_document_id(document_id)
        actor, doc = self._load_document(who, document_id, include_deleting=True)  # key + document: one round trip
        if not doc.deleting:
            try:
                self.ctx.documents.begin_delete(doc, activity=activity.entry(
                    self.ctx, actor, actor.workspace_id, "document.delete", document_id, {"title": doc.title}),
                    event=self._event("document.deleted", doc, self.ctx.now_ms()))
                self.ctx.nudge_outbox()
            except StaleDocument:
                pass  # a concurrent delete got there first; finish the job with it
        cdn.withdraw(self.ctx, doc.share_id, "delete")
        self.finish_delete(doc)

    @requires("list_versions")
    def list_versions(self, who: Who, document_id: str, limit: int = 20,
                      cursor: Optional[str] = None) -> VersionList:
        """Every version of a document, newest first, `limit` a page (GET one lists the newest 100)."""
        document_id = canonical_document_id(document_id)
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        listing = f"versions:{document_id}"
        offset = _decode_offset(cursors.unseal(found.actor.workspace_id, listing, cursor))
        newest_first = list(reversed(found.versions))
        page = newest_first[offset:offset + limit]
        more = offset + limit < len(newest_first)
        return VersionList(versions=[version_model(v) for v in page],
                           next_cursor=cursors.seal(found.actor.workspace_id, listing,
                                                    _encode_offset(offset + limit) if more else None))

    @requires("delete_version")
    def delete_version(self, who: Who, document_id: str, version_id: str) -> None:
        """Delete one old version (never the latest: 409) and free its storage."""
        document_id = canonical_document_id(document_id)
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        doc, versions = found.document, found.versions
        version = next((v for v in versions if v.version_id == version_id), None)
        if version is None:
            raise NotFound(f"No version {version_id} of document {document_id}.")
        if version_id == doc.latest_version_id:
            raise self._latest_kept(doc)
        try:
            self.ctx.documents.delete_version(doc, version)
        except StaleDocument:
            doc = access.check_still_visible(self.ctx, found.actor, document_id)
            if doc.latest_version_id == version_id:
                raise self._latest_kept(doc) from None
            raise NotFound(f"No version {version_id} of document {document_id}.") from None
        self._discard(version_key(doc.workspace_id, document_id, version_id))
        cdn.withdraw(self.ctx, doc.share_id, "version deleted")

    @staticmethod
    def _latest_kept(doc: Document) -> VersionConflict:
        return VersionConflict(
            "The latest version cannot be deleted: publish a new version first, or delete the document.",
            {"latest_version_id": doc.latest_version_id})

    def finish_delete(self, doc: Document) -> None:
        """Remove everything of a document marked `deleting`; safe to repeat."""
        self.ctx.blobs.delete_prefix(document_prefix(doc.workspace_id, doc.document_id))
        self.ctx.feedback.delete_for_document(doc.document_id)
        if doc.review_seq:  # ever reviewed or asked for reviews
            self.ctx.reviews.delete_for_document(doc.document_id, doc.workspace_id)
        self.ctx.views.delete_for_document(doc.document_id)
        # The document record goes last, so an interrupted delete can be found and finished.
        self.ctx.documents.purge(doc.document_id)
        if "files" in (doc.latest_content or ""):
            # Free the files no other version uses (the orphan sweep catches the rest).
            content_files.sweep_files(self.ctx, doc.workspace_id)


def _encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _decode_offset(cursor: Optional[str]) -> int:
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
        offset = data["o"]
        if type(offset) is not int or offset < 0:
            raise ValueError
        return offset
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise ValidationFailed.field("cursor", "is not a cursor this service returned") from exc
