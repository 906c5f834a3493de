"""A document's settings (PATCH): title, description and its share link's
(enabled, expiry, access); no new version."""
from __future__ import annotations

from typing import Union

from chalicelib.domain import links
from chalicelib.errors import ValidationFailed
from chalicelib.models import DocumentDetail, PublishRequest, UpdateDocumentRequest
from chalicelib.ports import StaleDocument
from chalicelib.ports.repositories import DocumentFields
from chalicelib.services import activity, cdn, static_pages
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
    return changes


class DocumentSettings(DocumentReads):
    """PATCH of a document (services/documents.py puts the parts together)."""

    @requires("update_document")
    def update(self, who: Who, document_id: str, request: UpdateDocumentRequest) -> DocumentDetail:
        document_id = canonical_document_id(document_id)
        fields: DocumentFields = request.model_dump(  # type: ignore[assignment]  # title, description
            exclude_unset=True, exclude_none=True,
                                    exclude={"share_enabled", "share_expires_at", "share_access"})
        fields.update(link_settings(request, self.ctx.now_ms()))
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
            cdn.withdraw(self.ctx, doc.share_id, "link settings")  # syncs the static copy too
        else:  # any expiry, a title: the static copy is removed or written again
            static_pages.sync(self.ctx, doc.share_id, "link settings")
        return self.get(actor, document_id)
