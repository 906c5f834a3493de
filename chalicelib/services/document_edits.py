"""Editing: a batch of literal edits applied to the latest version (its HTML, or the
Markdown source), stored as one new version; an accepted suggestion is one."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from chalicelib.domain.edits import apply_edits_utf8
from chalicelib.domain.limits import checked_size
from chalicelib.errors import ValidationFailed, VersionContentMissing
from chalicelib.models import EditRequest, EditResponse, EditSummary
from chalicelib.ports import BlobNotFound, GuardFailed, QuotaReached, StaleDocument, definitely_not_applied, version_key
from chalicelib.ports.records import Document, Resolution, Version
from chalicelib.services import access, activity, provenance, scanning, static_pages
from chalicelib.services import content as content_files
from chalicelib.services.access import Who, canonical_document_id, requires
from chalicelib.services.context import new_version_id
from chalicelib.services.document_shapes import share_url
from chalicelib.services.document_writes import (
    MAX_WRITE_ATTEMPTS, DocumentWrites, WriteResult, distinct_files, gave_up, version_record,
)


class DocumentEdits(DocumentWrites):
    """Edits of the latest version (services/documents.py puts the parts together)."""

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
            version = provenance.signed(self.ctx, actor, document_id, version_record(
                version_id, doc.version_count + 1, request.note, now_ms, object_key, content.page, fmt, files), content)
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
            static_pages.sync(self.ctx, doc.share_id, "new version")
            summary = EditSummary(edits_applied=outcome.edits_applied, replacements=outcome.replacements,
                                  size_bytes_before=len(before), size_bytes_after=len(data))
            response = EditResponse(document_id=document_id, version_id=version_id,
                                    version_number=version.number, share_url=share_url(doc.share_id),
                                    summary=summary, warnings=scanned.response_warnings())
            return WriteResult(response, decision.headers() if decision else {})
        raise gave_up(doc, key_busy, "editing")

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
