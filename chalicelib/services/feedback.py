"""Viewer feedback: submitted on share links (optionally anchored to a passage),
answered in threads by the owner and by viewers, listed, waited for and resolved.

A submission or reply, the document's `open_feedback_count`, the submitter's
rate slot and the event that reports it (read by waiting lists, turned into
webhook deliveries) are written in one transaction; resolve/reopen change the
count with conditions on the feedback's state, so the count never drifts.
Deleting a document deletes its feedback (DocumentService.finish_delete does it
directly).

Decisions (docs/contract.md): a viewer reply reopens a resolved thread; an owner
reply leaves its status alone (a closing note). A waiting list wakes for new
feedback and viewer replies, not for the owner's own replies (an agent waiting
after replying would otherwise be woken by itself).
"""
from __future__ import annotations

import builtins
import json
import re
import secrets
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence

from chalicelib.ports import records
from chalicelib.ports.records import Document
from chalicelib.domain import limits
from chalicelib.errors import NotFound, PlanLimitReached, ValidationFailed
from chalicelib.models import (
    Anchor, AnchorState, Feedback, FeedbackCreated, FeedbackList, FeedbackSubmission, Reply, ReplyRequest, Suggestion,
    ViewerReplyRequest,
)
from chalicelib.ports import BadCursor, FeedbackGone, GuardFailed, RateClaim, ReplyCapReached, StaleDocument
from chalicelib.services import access, cursors, ratelimits
from chalicelib.services.anchors import anchor_states
from chalicelib.services.access import Who
from chalicelib.services.events import make_event
from chalicelib.services.context import Context, new_feedback_id, rfc3339
from chalicelib.services.sharing import ShareService, Viewer
from chalicelib.services.waits import wait_slot
from chalicelib.services.access import requires

STATUSES = ("open", "resolved", "all")
MAX_LIMIT = 100
ACCEPTED_SHOWN = 20  # resolved threads the share page looks at for accepted suggestions
# A resolve that races another change of the same item looks again this many times.
RESOLVE_ATTEMPTS = 5
# Webhook payloads carry a thread's newest replies only, so an event stays small.
PAYLOAD_REPLIES = 10
PAYLOAD_MAX_BYTES = 256 * 1024
SINCE_MESSAGE = "is not a `since` token this service returned for this listing"


def new_reply_id() -> str:
    return "rp_" + secrets.token_urlsafe(12)


def reply_model(item: records.Reply) -> Reply:
    return Reply(reply_id=item.reply_id, message=item.message, name=item.name,
                 author=item.author, created_at=rfc3339(item.created_ms))


def feedback_model(item: records.Feedback, replies: Optional[Sequence[records.Reply]] = None,
                   anchor_state: Optional[AnchorState] = None) -> Feedback:
    anchor = item.anchor
    return Feedback(feedback_id=item.feedback_id, document_id=item.document_id,
                    version_id=item.version_id, message=item.message, name=item.name,
                    quote=item.quote, anchor=Anchor(**anchor) if anchor else None, anchor_state=anchor_state,
                    status=item.status,
                    suggestion=Suggestion(**item.suggestion) if item.suggestion is not None else None,
                    created_at=rfc3339(item.created_ms), resolved_at=rfc3339(item.resolved_ms),
                    resolved_in_version=item.resolved_in_version if item.status == "resolved" else None,
                    recipient_email=item.recipient_email,
                    replies=[reply_model(r) for r in replies or []])


def event_payload(feedback: Feedback, reply: Optional[Reply] = None) -> dict[str, Any]:
    """A webhook's `data`: the Feedback (newest replies only, bounded in size), plus `reply`."""
    data = feedback.model_dump(mode="json")
    data["replies"] = data["replies"][-PAYLOAD_REPLIES:]
    if reply is not None:
        data["reply"] = reply.model_dump(mode="json")
    while data["replies"] and len(json.dumps(data, ensure_ascii=False).encode()) > PAYLOAD_MAX_BYTES:
        data["replies"] = data["replies"][1:]
    return data


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
               unlock_cookie: Viewer, version_number: Optional[int] = None) -> FeedbackCreated:
        """Feedback on the version the viewer was shown (`version_number`, default the
        latest). NotFound, Locked (401) without a valid unlock cookie on a protected
        document, RateLimited over the per-IP limit."""
        access = self.sharing.access(share_id, unlock_cookie, version_number)
        doc = access.doc
        feedback_id = new_feedback_id()
        what = limits.REFUSALS["feedback"]
        anchor = submission.anchor.model_dump(exclude_none=True) if submission.anchor else None
        for _attempt in range(ratelimits.CLAIM_ATTEMPTS):
            # The slot is claimed in the feedback's own transaction: a refused post uses none.
            claim = ratelimits.next_claim(self.ctx, ratelimits.viewer_scope("feedback", doc.document_id, client_ip),
                                          limits.viewer_rate(), what)
            now_ms = self.ctx.now_ms()
            item = records.Feedback(
                feedback_id=feedback_id, document_id=doc.document_id, workspace_id=doc.workspace_id,
                version_id=access.version_id, version_number=access.version_number, message=submission.message,
                name=submission.name or None, quote=submission.quote or (anchor["quote"] if anchor else None),
                anchor=anchor, status="open", created_ms=now_ms,
                suggestion=submission.suggestion.model_dump() if submission.suggestion is not None else None,
                recipient_email=access.recipient)
            state = anchor_states(self.ctx, [item], known={doc.document_id: doc}).get(feedback_id)
            event = make_event("feedback.created", doc.workspace_id, doc.document_id, now_ms,
                               event_payload(feedback_model(item, anchor_state=state)), feedback_id=feedback_id,
                               wakes=True)
            try:
                self.ctx.feedback.create(item, claim, event)
            except GuardFailed:
                continue  # another post from this address moved the log; re-read it
            except StaleDocument as exc:
                raise NotFound("No such link.") from exc
            self.ctx.nudge_outbox()
            return FeedbackCreated(feedback_id=feedback_id)
        raise ratelimits.contended(what)

    def viewer_reply(self, share_id: str, feedback_id: str, request: ViewerReplyRequest, client_ip: str,
                     unlock_cookie: Viewer) -> Reply:
        """A viewer answers a thread of the link's document; counted in the same
        per-address budget as feedback. Reopens a resolved thread."""
        found = self.sharing.access(share_id, unlock_cookie)
        doc = found.doc
        what = limits.REFUSALS["feedback"]
        scope = ratelimits.viewer_scope("feedback", doc.document_id, client_ip)
        return self._reply(lambda: self._thread_of(doc.workspace_id, feedback_id, doc.document_id),
                           request.message, request.name or None, "viewer",
                           lambda: ratelimits.next_claim(self.ctx, scope, limits.viewer_rate(), what), what)

    def threads(self, share_id: str, unlock_cookie: Viewer) -> tuple[Document, builtins.list[InboxItem]]:
        """(the link's document, its open threads with replies, newest first, then its newest
        accepted suggestions (shown "accepted in version N")) for the share page, each with
        the number of the version it was written on."""
        found = self.sharing.access(share_id, unlock_cookie)
        doc = found.doc
        items, _cursor = self.ctx.feedback.page(doc.workspace_id, doc.document_id, "open", MAX_LIMIT, None)
        resolved, _cursor = self.ctx.feedback.page(doc.workspace_id, doc.document_id, "resolved",
                                                   ACCEPTED_SHOWN, None)
        items = list(items) + [i for i in resolved if i.suggestion is not None and i.resolved_in_version]
        return doc, [InboxItem(feedback=m, version_number=i.version_number)
                     for m, i in zip(self._with_replies(items), items)]

    # ---------------------------------------------------------------- owners

    @requires("reply_to_feedback")
    def reply(self, who: Who, feedback_id: str, message: str) -> Reply:
        """The owner answers a thread (any status; a resolved thread stays resolved)."""
        from pydantic import ValidationError

        try:
            message = ReplyRequest.model_validate({"message": message}).message
        except ValidationError as exc:
            raise ValidationFailed.from_pydantic(exc.errors(include_url=False, include_input=False)) from None
        actor = access.actor(self.ctx, who)
        return self._reply(lambda: self._thread_of(actor.workspace_id, feedback_id), message, None, "owner",
                           lambda: None, "")

    @requires("list_feedback")
    def list(self, who: Who, document_id: str | None = None, status: str = "open", limit: int = 20,
             cursor: str | None = None, since: str | None = None, wait: int | None = None) -> FeedbackList:
        if status not in STATUSES:
            raise ValidationFailed.field("status", "must be open, resolved or all")
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationFailed.field("limit", f"must be 1 to {MAX_LIMIT}")
        if wait is not None and not (isinstance(wait, int) and 0 <= wait <= limits.WAIT_MAX_SECONDS):
            raise ValidationFailed.field("wait", f"must be a number of seconds from 0 to {limits.WAIT_MAX_SECONDS}")
        found = access.find_document(self.ctx, who, document_id)
        actor, document_id = found.actor, found.document_id
        activity_listing = f"since#{document_id or ''}"
        if since is not None or wait:
            if cursor:
                raise ValidationFailed.field("cursor", "cannot be combined with since or wait")
            position = (cursors.unseal_since(actor.workspace_id, activity_listing, since, SINCE_MESSAGE) if since is not None
                        else self.ctx.feedback.activity_head(actor.workspace_id, self.ctx.now_ms()))
            return self._wait(actor.workspace_id, document_id, activity_listing, position, limit, wait or 0)
        items, next_cursor = self._page(actor, document_id, status, limit, cursor)
        head = self.ctx.feedback.activity_head(actor.workspace_id, self.ctx.now_ms())
        return FeedbackList(feedback=self._with_replies(items), next_cursor=next_cursor,
                            since=cursors.seal(actor.workspace_id, activity_listing, head))

    def inbox(self, who: Who, document_id: str | None = None, status: str = "open", limit: int = 20,
              cursor: str | None = None) -> InboxPage:
        """`list`, with the number of the version each item was given on (stored
        with the feedback: no read of the documents' versions) and the threads' replies."""
        if status not in STATUSES:
            raise ValidationFailed.field("status", "must be open, resolved or all")
        found = access.find_document(self.ctx, who, document_id)
        items, next_cursor = self._page(found.actor, found.document_id, status, limit, cursor)
        models = self._with_replies(items)
        return InboxPage(items=[InboxItem(feedback=m, version_number=i.version_number)
                                for m, i in zip(models, items)], next_cursor=next_cursor)

    def _page(self, actor: access.Actor, document_id: str | None, status: str, limit: int,
              cursor: str | None) -> tuple[Sequence[records.Feedback], str | None]:
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationFailed.field("limit", f"must be 1 to {MAX_LIMIT}")
        listing = f"feedback#{document_id or ''}"
        raw = cursors.unseal(actor.workspace_id, listing, cursor)
        try:
            items, next_cursor = self.ctx.feedback.page(actor.workspace_id, document_id,
                                                        None if status == "all" else status, limit, raw)
        except BadCursor as exc:
            raise ValidationFailed.field("cursor", cursors.MESSAGE) from exc
        return items, cursors.seal(actor.workspace_id, listing, next_cursor)

    @requires("resolve_feedback")
    def resolve(self, who: Who, feedback_id: str, resolved: bool = True) -> Feedback:
        """Mark resolved (or, with resolved=False, open again); repeating is harmless."""
        actor = access.actor(self.ctx, who)
        wanted: records.FeedbackStatus = "resolved" if resolved else "open"
        for _attempt in range(RESOLVE_ATTEMPTS):
            item = self._thread_of(actor.workspace_id, feedback_id)
            if item.status == wanted:
                return self._with_replies([item])[0]
            now_ms = self.ctx.now_ms()
            after = replace(item, status=wanted, resolved_ms=now_ms if resolved else None)
            model = self._with_replies([after])[0]
            event = make_event("feedback.resolved", item.workspace_id, item.document_id, now_ms,
                               event_payload(model), feedback_id=feedback_id) if resolved else None
            try:
                self.ctx.feedback.set_status(item, resolved, now_ms, event)
            except FeedbackGone:
                doc = self.ctx.documents.get(item.document_id)
                if doc is None or doc.deleting:
                    raise NotFound(f"No feedback {feedback_id} in this workspace.") from None
                continue  # changed concurrently: look again
            if event is not None:
                self.ctx.nudge_outbox()
            return model
        raise NotFound(f"No feedback {feedback_id} in this workspace.")

    def thread(self, workspace_id: str, feedback_id: str) -> records.Feedback:
        """A thread of the workspace as stored (NotFound otherwise); for services that
        act on a thread after their own role check (suggestions)."""
        return self._thread_of(workspace_id, feedback_id)

    def answers(self, items: Sequence[records.Feedback]) -> builtins.list[Feedback]:
        """The Feedback answers of stored threads (with their replies)."""
        return self._with_replies(items)

    # ---------------------------------------------------------------- internals

    def _thread_of(self, workspace_id: str, feedback_id: str, document_id: Optional[str] = None) -> records.Feedback:
        # Ids we never issue are 404 without a lookup (DynamoDB refuses keys over 2 KB).
        item = self.ctx.feedback.get(feedback_id) if _FEEDBACK_ID.fullmatch(feedback_id or "") else None
        if (item is None or item.workspace_id != workspace_id
                or (document_id is not None and item.document_id != document_id)):
            raise NotFound("No such feedback" + (" on this document." if document_id else " in this workspace."))
        return item

    def _reply(self, read_thread: Callable[[], records.Feedback], message: str, name: Optional[str],
               author: records.Author,
               claim: Callable[[], Optional[RateClaim]], what: str) -> Reply:
        for attempt in range(ratelimits.CLAIM_ATTEMPTS):
            self.ctx.backoff(attempt)
            thread = read_thread()
            rate = claim()
            now_ms = self.ctx.now_ms()
            reply = records.Reply(reply_id=new_reply_id(), feedback_id=thread.feedback_id,
                                  document_id=thread.document_id, workspace_id=thread.workspace_id,
                                  message=message, name=name, author=author, created_ms=now_ms)
            reopen = author == "viewer"
            after = replace(thread, status="open", resolved_ms=None) if reopen else thread
            replies = self.ctx.feedback.replies([thread.feedback_id])[thread.feedback_id] + [reply]
            model = reply_model(reply)
            state = anchor_states(self.ctx, [after]).get(thread.feedback_id)
            event = make_event("feedback.replied", thread.workspace_id, thread.document_id, now_ms,
                               event_payload(feedback_model(after, replies, state), model),
                               feedback_id=thread.feedback_id, reply_id=reply.reply_id,
                               wakes=author == "viewer")
            try:
                self.ctx.feedback.add_reply(thread, reply, limits.REPLIES_PER_THREAD, reopen, rate, event)
            except GuardFailed:
                continue  # the rate log or the thread moved: read again
            except FeedbackGone:
                raise NotFound("No such feedback.") from None
            except ReplyCapReached as exc:
                raise PlanLimitReached(
                    f"This thread has {limits.REPLIES_PER_THREAD} replies, the most a thread holds; "
                    "start a new comment instead.",
                    {"limit": limits.REPLIES_PER_THREAD, "current": exc.current}) from None
            self.ctx.nudge_outbox()
            return model
        raise ratelimits.contended(what or "The thread is busy")

    def threads_by_id(self, feedback_ids: Sequence[str]) -> builtins.list[Feedback]:
        """The threads among `feedback_ids` that still exist, in that order, as answers give
        them (a waiting review list shows the feedback that woke it: services/reviews.py)."""
        by_id = {i.feedback_id: i for i in self.ctx.feedback.get_many(builtins.list(feedback_ids))}
        return self._with_replies([by_id[i] for i in feedback_ids if i in by_id])

    def _with_replies(self, items: Sequence[records.Feedback]) -> builtins.list[Feedback]:
        with_replies = [i.feedback_id for i in items if i.reply_count]
        replies = self.ctx.feedback.replies(with_replies) if with_replies else {}
        states = anchor_states(self.ctx, items)
        return [feedback_model(i, replies.get(i.feedback_id), states.get(i.feedback_id)) for i in items]

    def _wait(self, workspace_id: str, document_id: Optional[str], listing: str, position: str, limit: int,
              wait_seconds: int) -> FeedbackList:
        """Feedback with activity after `position`: at once if there is some, else
        reading again once a second until `wait_seconds` have passed, in one of the
        workspace's waiting slots (services/waits.wait_slot: 429 when all are taken)."""
        with wait_slot(self.ctx, workspace_id) if wait_seconds > 0 else nullcontext():
            deadline = self.ctx.clock() + wait_seconds
            while True:
                try:
                    events, position = self.ctx.feedback.activity_since(workspace_id, document_id, position,
                                                                         self.ctx.now_ms(), limit)
                except BadCursor as exc:
                    raise ValidationFailed.field("since", SINCE_MESSAGE) from exc
                left = deadline - self.ctx.clock()
                # Reviews wake waiting agents too (services/reviews.py); a feedback list waits on.
                if any(e.feedback_id for e in events) or left <= 0:
                    break
                self.ctx.sleep(min(limits.WAIT_READ_INTERVAL_SECONDS, left))
        ids: list[str] = []
        for event in reversed(events):  # newest activity first, each thread once
            if event.feedback_id and event.feedback_id not in ids:
                ids.append(event.feedback_id)
        by_id = {i.feedback_id: i for i in self.ctx.feedback.get_many(ids)}
        items = [by_id[i] for i in ids if i in by_id]
        return FeedbackList(feedback=self._with_replies(items), next_cursor=None,
                            since=cursors.seal(workspace_id, listing, position))
