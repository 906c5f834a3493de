"""A document's settings (PATCH): title, description and its share link's
(enabled, expiry, access, recipients); no new version."""
from __future__ import annotations

from typing import Optional, Union

from chalicelib.domain import links
from chalicelib.errors import ValidationFailed
from chalicelib.models import DocumentDetail, PublishRequest, UpdateDocumentRequest
from chalicelib.ports import StaleDocument
from chalicelib.ports.records import Document
from chalicelib.ports.repositories import DocumentFields
from chalicelib.services import activity, audience, cdn, static_pages
from chalicelib.services.context import Context
from chalicelib.services.access import Who, canonical_document_id, document_not_found, requires
from chalicelib.services.document_reads import DocumentReads


def link_settings(request: Union[PublishRequest, UpdateDocumentRequest], now_ms: int) -> DocumentFields:
    """Document fields for the link settings a publish/PATCH body gives:
    `share_enabled`, and `share_expires_ms` (None: clear it)."""
    given = request.model_fields_set
    changes: DocumentFields = {}
    if "share_enabled" in given and request.share_enabled is not None:
        changes["share_enabled"] = request.share_enabled
    if "share_expires_at" in given:
        changes["share_expires_ms"] = links.parse_expiry(request.share_expires_at, now_ms)
    if "share_access" in given and request.share_access is not None:
        changes["share_access"] = request.share_access
    if "share_recipients" in given and request.share_recipients is not None:
        changes["share_recipients"] = tuple(request.share_recipients)
    return changes


def check_audience(changes: DocumentFields, doc: Optional[Document]) -> None:
    """`recipients` needs entries (given now, or kept from before): 422 naming share_recipients."""
    access_after = changes.get("share_access") or (doc.share_access if doc else "public")
    entries = changes.get("share_recipients", doc.share_recipients if doc else ())
    if access_after == "recipients" and not entries:
        raise ValidationFailed.field("share_recipients", "is required with share_access recipients "
                                                         "(1 to 100 emails or @domains)")


def audience_changed(ctx: Context, before: Optional[Document], document_id: str, workspace_id: str,
                     changes: DocumentFields) -> None:
    """After a write that set `share_recipients` (contract 7f): whom no entry admits any more
    is revoked (and the link dropped from the CDN), the audience by entry follows."""
    if "share_recipients" not in changes:
        return
    entries = tuple(changes["share_recipients"])
    if before is None:
        audience.index_new(ctx, document_id, workspace_id, entries)
    elif audience.apply_change(ctx, before, entries):
        cdn.withdraw(ctx, before.share_id, "recipients")


class DocumentSettings(DocumentReads):
    """PATCH of a document (services/documents.py puts the parts together)."""

    @requires("update_document")
    def update(self, who: Who, document_id: str, request: UpdateDocumentRequest) -> DocumentDetail:
        document_id = canonical_document_id(document_id)
        fields: DocumentFields = request.model_dump(  # type: ignore[assignment]  # title, description
            exclude_unset=True, exclude_none=True,
                                    exclude={"share_enabled", "share_expires_at", "share_access", "share_recipients"})
        fields.update(link_settings(request, self.ctx.now_ms()))
        if not fields:
            raise ValidationFailed(
                "Give title, description, share_enabled, share_expires_at, share_access and/or share_recipients "
                "to change.",
                {"fields": [{"field": "title", "message": "at least one field to change is required"}]})
        actor, doc = self._load_document(who, document_id)
        check_audience(fields, doc)
        share_fields = set(fields) & {"share_enabled", "share_expires_ms", "share_access", "share_recipients"}
        logged = activity.entry(self.ctx, actor, actor.workspace_id,
                                "share.settings" if share_fields == set(fields) else "document.update",
                                document_id, {"title": fields.get("title") or doc.title,
                                              "fields": ", ".join(sorted(fields))})
        try:
            self.ctx.documents.update_fields(doc, fields, activity=logged)
        except StaleDocument as exc:
            raise document_not_found(document_id) from exc
        if links.withdraws(doc, fields, self.ctx.now_ms()):
            cdn.withdraw(self.ctx, doc.share_id, "link settings")  # syncs the static copy too
        else:  # any expiry, a title: the static copy is removed or written again
            static_pages.sync(self.ctx, doc.share_id, "link settings")
        audience_changed(self.ctx, doc, document_id, doc.workspace_id, fields)
        return self.get(actor, document_id)
