"""Viewer feedback: submitted on share links, listed and resolved by the owner.

A submission, the document's `open_feedback_count` and the submitter's rate slot
are written in one transaction; resolve/reopen change the count with
conditions on the feedback's state, so the count never drifts. Deleting a
document deletes its feedback (a DELETE_HOOK of the document service).
"""
from __future__ import annotations

import re

from typing import Optional

from chalicelib.ports import BadCursor, FeedbackGone, GuardFailed, StaleDocument
from chalicelib.errors import NotFound, RateLimited, ValidationFailed
from chalicelib.models import Feedback, FeedbackCreated, FeedbackList, FeedbackSubmission
from chalicelib.services import documents
from chalicelib.services.context import Context, default_context, new_feedback_id, rfc3339
from chalicelib.services.sharing import MAX_CLAIM_ATTEMPTS, ShareService

STATUSES = ("open", "resolved", "all")
MAX_LIMIT = 100


def feedback_model(item: dict) -> Feedback:
    return Feedback(feedback_id=item["feedback_id"], document_id=item["document_id"],
                    version_id=item["version_id"], message=item["message"], name=item.get("name"),
                    quote=item.get("quote"), status=item["status"], created_at=rfc3339(item["created_ms"]),
                    resolved_at=rfc3339(item.get("resolved_ms")))


_FEEDBACK_ID = re.compile(r"fb_[A-Za-z0-9_-]{8,64}")


class FeedbackService:
    def __init__(self, ctx: Optional[Context] = None):
        self.ctx = ctx or default_context()
        self.sharing = ShareService(self.ctx)

    # ---------------------------------------------------------------- viewers

    def submit(self, share_id: str, submission: FeedbackSubmission, client_ip: str,
               unlock_cookie: Optional[str], version_number: Optional[int] = None) -> FeedbackCreated:
        """Feedback on the version the viewer was shown (`version_number`, default the
        latest). NotFound, Locked (401) without a valid unlock cookie on a protected
        document, RateLimited over the per-IP limit."""
        access = self.sharing.access(share_id, unlock_cookie, version_number)
        doc = access.doc
        feedback_id = new_feedback_id()
        for _attempt in range(MAX_CLAIM_ATTEMPTS):
            claim = self.sharing.viewer_slot("feedback", doc["document_id"], client_ip)
            item = {"feedback_id": feedback_id, "document_id": doc["document_id"],
                    "workspace_id": doc["workspace_id"], "version_id": access.version_id,
                    "version_number": access.version_number, "message": submission.message,
                    "name": submission.name or None, "quote": submission.quote or None,
                    "status": "open", "created_ms": self.ctx.now_ms()}
            try:
                self.ctx.feedback.create(item, claim)
            except GuardFailed:
                continue  # another post from this address moved the log; re-read it
            except StaleDocument as exc:
                raise NotFound("No such link.") from exc
            return FeedbackCreated(feedback_id=feedback_id)
        raise RateLimited(1, "Too many simultaneous feedback posts; retry in 1 s.")

    # ---------------------------------------------------------------- owners

    def list(self, who, document_id: str | None = None, status: str = "open", limit: int = 20,
             cursor: str | None = None) -> FeedbackList:
        if status not in STATUSES:
            raise ValidationFailed.field("status", "must be open, resolved or all")
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationFailed.field("limit", f"must be 1 to {MAX_LIMIT}")
        service = documents.DocumentService(self.ctx)
        actor = service._actor(who)
        if document_id is not None:
            doc = self.ctx.documents.get(document_id)
            if not service._visible(doc, actor):
                raise NotFound(f"No document {document_id} in this workspace.")
        try:
            items, next_cursor = self.ctx.feedback.page(actor.workspace_id, document_id,
                                                        None if status == "all" else status, limit, cursor)
        except BadCursor as exc:
            raise ValidationFailed.field("cursor", "is not a cursor this service returned") from exc
        return FeedbackList(feedback=[feedback_model(i) for i in items], next_cursor=next_cursor)

    def resolve(self, who, feedback_id: str, resolved: bool = True) -> Feedback:
        """Mark resolved (or, with resolved=False, open again); repeating is harmless."""
        actor = documents.DocumentService(self.ctx)._actor(who)
        wanted = "resolved" if resolved else "open"
        for _attempt in range(MAX_CLAIM_ATTEMPTS):
            # Ids we never issue are 404 without a lookup (DynamoDB refuses keys over 2 KB).
            item = self.ctx.feedback.get(feedback_id) if _FEEDBACK_ID.fullmatch(feedback_id or "") else None
            if item is None or item.get("workspace_id") != actor.workspace_id:
                raise NotFound("No such feedback in this workspace.")
            if item["status"] == wanted:
                return feedback_model(item)
            now_ms = self.ctx.now_ms()
            try:
                self.ctx.feedback.set_status(item, resolved, now_ms)
            except FeedbackGone:
                doc = self.ctx.documents.get(item["document_id"])
                if doc is None or doc.get("deleting"):
                    raise NotFound(f"No feedback {feedback_id} in this workspace.") from None
                continue  # changed concurrently: look again
            item.update(status=wanted, resolved_ms=now_ms if resolved else None)
            return feedback_model(item)
        raise NotFound(f"No feedback {feedback_id} in this workspace.")


def delete_document_feedback(ctx: Context, doc: dict) -> None:
    ctx.feedback.delete_for_document(doc["document_id"])


if delete_document_feedback not in documents.DELETE_HOOKS:
    documents.DELETE_HOOKS.append(delete_document_feedback)
