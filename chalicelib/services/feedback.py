"""Viewer feedback: submitted on share links, listed and resolved by the owner.

A submission, the document's `open_feedback_count` and the submitter's rate slot
are written in one transaction; resolve/reopen change the count with
conditions on the feedback's state, so the count never drifts. Deleting a
document deletes its feedback (DocumentService.finish_delete does it directly).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from chalicelib.ports.records import Record
from chalicelib.domain import limits
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.ports import BadCursor, FeedbackGone, GuardFailed, StaleDocument
from chalicelib.models import Feedback, FeedbackCreated, FeedbackList, FeedbackSubmission
from chalicelib.services import access, cursors, ratelimits
from chalicelib.services.access import Who
from chalicelib.services.context import Context, new_feedback_id, rfc3339
from chalicelib.services.sharing import ShareService
from chalicelib.services.access import requires

STATUSES = ("open", "resolved", "all")
MAX_LIMIT = 100
# A resolve that races another change of the same item looks again this many times.
RESOLVE_ATTEMPTS = 5


def feedback_model(item: Record) -> Feedback:
    return Feedback(feedback_id=item["feedback_id"], document_id=item["document_id"],
                    version_id=item["version_id"], message=item["message"], name=item.get("name"),
                    quote=item.get("quote"), status=item["status"], created_at=rfc3339(item["created_ms"]),
                    resolved_at=rfc3339(item.get("resolved_ms")))


_FEEDBACK_ID = re.compile(r"fb_[A-Za-z0-9_-]{8,64}")


@dataclass(frozen=True)
class InboxItem:
    feedback: Feedback
    version_number: Optional[int]


@dataclass(frozen=True)
class InboxPage:
    items: Sequence[InboxItem]
    next_cursor: Optional[str]


class FeedbackService:
    def __init__(self, ctx: Context):
        self.ctx = ctx
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
        what = limits.REFUSALS["feedback"]
        for _attempt in range(ratelimits.CLAIM_ATTEMPTS):
            # The slot is claimed in the feedback's own transaction: a refused post uses none.
            claim = ratelimits.next_claim(self.ctx, ratelimits.viewer_scope("feedback", doc["document_id"], client_ip),
                                          limits.viewer_rate(), what)
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
        raise ratelimits.contended(what)

    # ---------------------------------------------------------------- owners

    @requires("list_feedback")
    def list(self, who, document_id: str | None = None, status: str = "open", limit: int = 20,
             cursor: str | None = None) -> FeedbackList:
        items, next_cursor = self._page(who, document_id, status, limit, cursor)
        return FeedbackList(feedback=[feedback_model(i) for i in items], next_cursor=next_cursor)

    def inbox(self, who: Who, document_id: str | None = None, status: str = "open", limit: int = 20,
              cursor: str | None = None) -> InboxPage:
        """`list`, with the number of the version each item was given on (stored
        with the feedback: no read of the documents' versions)."""
        items, next_cursor = self._page(who, document_id, status, limit, cursor)
        return InboxPage(items=[InboxItem(feedback=feedback_model(i), version_number=i.get("version_number"))
                                for i in items], next_cursor=next_cursor)

    def _page(self, who: Who, document_id: str | None, status: str, limit: int,
              cursor: str | None) -> tuple[Sequence[dict[str, Any]], str | None]:
        if status not in STATUSES:
            raise ValidationFailed.field("status", "must be open, resolved or all")
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationFailed.field("limit", f"must be 1 to {MAX_LIMIT}")
        found = access.find_document(self.ctx, who, document_id)
        actor, document_id = found.actor, found.document_id
        listing = f"feedback#{document_id or ''}"
        raw = cursors.unseal(actor.workspace_id, listing, cursor)
        try:
            items, next_cursor = self.ctx.feedback.page(actor.workspace_id, document_id,
                                                        None if status == "all" else status, limit, raw)
        except BadCursor as exc:
            raise ValidationFailed.field("cursor", cursors.MESSAGE) from exc
        return items, cursors.seal(actor.workspace_id, listing, next_cursor)

    @requires("resolve_feedback")
    def resolve(self, who, feedback_id: str, resolved: bool = True) -> Feedback:
        """Mark resolved (or, with resolved=False, open again); repeating is harmless."""
        actor = access.actor(self.ctx, who)
        wanted = "resolved" if resolved else "open"
        for _attempt in range(RESOLVE_ATTEMPTS):
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
