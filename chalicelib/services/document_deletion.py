"""Deleting a document (begun in one step, finished by finish_delete, safe to repeat)
or one old version."""
from __future__ import annotations

from chalicelib.errors import NotFound, VersionConflict
from chalicelib.ports import StaleDocument, document_prefix, version_key
from chalicelib.ports.records import Document
from chalicelib.services import access, activity, cdn
from chalicelib.services import content as content_files
from chalicelib.services.access import Who, canonical_document_id, requires
from chalicelib.services.document_shapes import document_event
from chalicelib.services.document_writes import DocumentWrites


class DocumentDeletion(DocumentWrites):
    """Deleting documents and old versions (services/documents.py puts the parts together)."""

    @requires("delete_document")
    def delete(self, who: Who, document_id: str) -> None:
        document_id = canonical_document_id(document_id)
        actor, doc = self._load_document(who, document_id, include_deleting=True)  # key + document: one round trip
        if not doc.deleting:
            try:
                self.ctx.documents.begin_delete(doc, activity=activity.entry(
                    self.ctx, actor, actor.workspace_id, "document.delete", document_id, {"title": doc.title}),
                    event=document_event("document.deleted", doc, self.ctx.now_ms()))
                self.ctx.nudge_outbox()
            except StaleDocument:
                pass  # a concurrent delete got there first; finish the job with it
        cdn.withdraw(self.ctx, doc.share_id, "delete")
        self.finish_delete(doc)

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
        if doc.share_recipients or doc.share_access == "recipients":  # contract 7f: its people and audience
            self.ctx.recipients.delete_for_document(doc.document_id, doc.share_recipients)
        # The document record goes last, so an interrupted delete can be found and finished.
        self.ctx.documents.purge(doc.document_id)
        if "files" in (doc.latest_content or ""):
            # Free the files no other version uses (the orphan sweep catches the rest).
            content_files.sweep_files(self.ctx, doc.workspace_id)
