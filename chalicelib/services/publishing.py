"""Publishing: a new document or version from JSON, an uploaded file or an upload_id,
with an Idempotency-Key's replay; and restoring an old version as the newest."""
from __future__ import annotations

import hashlib
from typing import Any, Optional

from chalicelib.domain import limits, links, plans
from chalicelib.domain.limits import encoded_html
from chalicelib.errors import DocpubError, PlanLimitReached, ValidationFailed, VersionContentMissing
from chalicelib.models import PublishRequest, PublishResponse
from chalicelib.ports import (
    BlobNotFound, DocumentCapReached, GuardFailed, IdempotencyRecord, Quota, QuotaReached, RateSlot, StaleDocument,
    definitely_not_applied, version_key,
)
from chalicelib.ports.records import ActivityEntry, Document, StoredIdempotency, Version
from chalicelib.ports.repositories import DocumentFields
from chalicelib.services import access, activity, cdn, provenance, scanning, static_pages
from chalicelib.services import content as content_files
from chalicelib.services.access import Actor, Who, requires
from chalicelib.services.context import new_document_id, new_share_id, new_version_id
from chalicelib.services.document_settings import audience_changed, check_audience, link_settings
from chalicelib.services.document_shapes import share_url
from chalicelib.services.document_writes import (
    MAX_WRITE_ATTEMPTS, DocumentWrites, WriteResult, content_kind, distinct_files, gave_up, version_record,
)
from chalicelib.services.workspaces import upgrade_offer

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
MAX_IDEMPOTENCY_KEY = 255


def _request_hash(request: PublishRequest, data: bytes) -> str:
    """What Idempotency-Key replays compare: every field, the HTML as its UTF-8
    bytes (already made), without serialising a 4 MiB document to JSON again."""
    digest = hashlib.sha256(request.model_dump_json(exclude={"html"}).encode())
    digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


class Publishing(DocumentWrites):
    """Publishing and restoring (services/documents.py puts the parts together)."""

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
        link_changes = link_settings(request, self.ctx.now_ms())
        check_audience(link_changes, doc)
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
                version = provenance.signed(self.ctx, actor, document_id, version_record(
                    version_id, (doc.version_count + 1) if doc else 1, request.note, now_ms, object_key, content.page,
                    content.format, content.file_infos()), content)  # contract 7g: signed as it is made
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
                        changes: DocumentFields = {"title": title, "latest_content": content_kind(version),
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
                    cdn.withdraw(self.ctx, doc.share_id, "link settings")  # syncs the static copy too
                else:
                    static_pages.sync(self.ctx, share_id, "new version")
                audience_changed(self.ctx, doc, document_id, actor.workspace_id, link_changes)
                return WriteResult(response, decision.headers() if decision else {})
            raise gave_up(doc, key_busy, "publishing")
        finally:
            if stored:
                objects.discard()

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
                       latest_content=content_kind(version), **links_given)
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
