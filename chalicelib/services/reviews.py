"""Reviews (contract 7e): decisions on a document's versions, review requests, the
document's review state, and an agent waiting for a decision.

A review, the review state it leaves on the document (domain/reviews.py: the rules)
and the event that reports it (a waiting agent wakes on it; `review.approved` and
`review.changes_requested` are webhook events) are one atomic step, conditional on the
document's `review_seq` and `version_count`: two reviewers deciding at once never lose
a decision, and a decision on a version that was just superseded is not counted on the
new one. A review request does the same with the requested addresses, then mails each
reviewer a link to the share page (a failed mail is a 503; repeating the request is
harmless: the state is the same and the mail goes again).

Reviewers (the `Reviewer` a review names): a member (`member`: the dashboard, or the
share page signed in), a verified recipient of a `recipients` link (`recipient`, 7f: the
share page with its viewer cookie), an API key (`key`), an OAuth grant (`oauth_client`:
the app, even when a member approved it). `may_be_asked` admits members and the addresses
the link's audience admits; a reviewer outside the audience is 403 on the share page.
"""
from __future__ import annotations

import builtins
import secrets
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, TypeVar, Union

from chalicelib.domain import limits, reviews as rules
from chalicelib.domain.emails import written_forms as address_forms
from chalicelib.errors import Forbidden, NotFound, ServiceUnavailable, Unauthorized, ValidationFailed
from chalicelib.models import (
    Feedback, Review, ReviewList, ReviewRequestBody, ReviewsRequested, ReviewSubmission, Reviewer,
)
from chalicelib.ports import BadCursor, GuardFailed, StaleDocument
from chalicelib.ports import records
from chalicelib.ports.records import Document, ReviewStatus
from chalicelib.services import access, audience, cursors, mailing, ratelimits
from chalicelib.services.access import Actor, Who, requires
from chalicelib.services.context import Context, rfc3339
from chalicelib.services.events import make_event
from chalicelib.services.waits import wait_slot

# A write that lost a race with another reviewer (or a new version) reads again this many times.
ATTEMPTS = 8
REVIEWS_LISTED = 100
SINCE_MESSAGE = "is not a `since` token this service returned for this document's reviews"


def new_review_id() -> str:
    return "rv_" + secrets.token_urlsafe(12)


@dataclass(frozen=True)
class ReviewerIdentity:
    kind: str  # member | recipient | key | oauth_client
    id: str
    name: str
    email: Optional[str] = None

    @property
    def key(self) -> str:
        """How the document's decisions name this reviewer."""
        return f"{self.kind}:{self.id}"


def reviewer_of(actor: Actor) -> ReviewerIdentity:
    """Who a review is by: an OAuth grant's client, a member, or an API key."""
    if actor.client_id:
        return ReviewerIdentity("oauth_client", actor.client_id, actor.client or actor.client_id)
    if actor.member:
        return ReviewerIdentity("member", actor.member, actor.member, actor.member)
    if actor.key_item is not None:
        return ReviewerIdentity("key", actor.key_item.key_id, actor.key_item.name or actor.key_item.key_id)
    return ReviewerIdentity("member", "operator", "operator")


def member_reviewer_key(email: str) -> str:
    return ReviewerIdentity("member", email, email, email).key


def review_model(item: records.Review) -> Review:
    return Review(review_id=item.review_id, document_id=item.document_id, version_number=item.version_number,
                  decision=item.decision,  # type: ignore[arg-type]  # one of DECISIONS, as stored
                  message=item.message,
                  reviewer=Reviewer(kind=item.reviewer_kind,  # type: ignore[arg-type]  # as stored
                                    id=item.reviewer_id, name=item.reviewer_name or item.reviewer_id,
                                    email=item.reviewer_email),
                  created_at=rfc3339(item.created_ms))


def _summary(doc: Document) -> dict[str, Any]:
    from chalicelib.services.document_shapes import summary_model

    return summary_model(doc).model_dump(mode="json")


class ReviewService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    # ---------------------------------------------------------------- reviews

    @requires("submit_review")
    def submit(self, who: Who, document_id: str, submission: Union[ReviewSubmission, Mapping[str, Any]]) -> Review:
        """A decision on a version (default the latest) by the caller (a member, key or app).
        A form's fields (the dashboard) are validated here, after the role check."""
        submission = _validated(ReviewSubmission, submission)
        found = access.find_document(self.ctx, who, document_id)
        return self._submit(found.actor, found.document, submission)

    def _submit(self, actor: Actor, doc: Document, submission: ReviewSubmission,
                reviewer: Optional[ReviewerIdentity] = None) -> Review:
        reviewer = reviewer or reviewer_of(actor)
        number = submission.version_number or doc.version_count
        if not 1 <= number <= doc.version_count or (
                number != doc.version_count and self.ctx.documents.get_version(doc.document_id, number) is None):
            raise NotFound(f"No version {number} of document {doc.document_id}.")
        review_id = new_review_id()
        for attempt in range(ATTEMPTS):
            self.ctx.backoff(attempt)
            now_ms = self.ctx.now_ms()
            item = records.Review(
                review_id=review_id, document_id=doc.document_id, workspace_id=doc.workspace_id,
                version_number=number, decision=submission.decision, reviewer_kind=reviewer.kind,
                reviewer_id=reviewer.id, created_ms=now_ms, message=submission.message or None,
                reviewer_name=reviewer.name, reviewer_email=reviewer.email)
            change = rules.after_review(doc, reviewer.key, submission.decision, number)
            # Every review moves the document's `review_seq` (a comment keeps the state as it
            # is): reviews of one document are serialised, and a document that never had one
            # is known without a read (its review_seq is 0).
            if change is not None:
                status = ReviewStatus(state=change[0], version=number, decisions=change[1],
                                      requested=doc.review_requested)
            else:
                state, version = rules.after_comment(doc, number) if submission.decision == "commented" else (
                    doc.review_state, doc.review_version)
                status = ReviewStatus(state=state, version=version, decisions=doc.review_decisions,
                                      requested=doc.review_requested)
            after = _with_status(doc, status)
            model = review_model(item)
            event = make_event(f"review.{submission.decision}", doc.workspace_id, doc.document_id, now_ms,
                               {**model.model_dump(mode="json"), "document": _summary(after)}, wakes=True)
            try:
                self.ctx.reviews.add(item, doc, status, event)
            except StaleDocument:
                doc = access.check_still_visible(self.ctx, actor, doc.document_id)
                continue  # another review, a request or a new version came first: decide on what is now
            except GuardFailed:
                raise NotFound(f"No version {number} of document {doc.document_id}.") from None
            self.ctx.nudge_outbox()
            return model
        raise ServiceUnavailable("The document's reviews are busy; retry in a moment.")

    # ---------------------------------------------------------------- requests

    @requires("request_review")
    def request(self, who: Who, document_id: str, body: Union[ReviewRequestBody, Mapping[str, Any]]
                ) -> ReviewsRequested:
        """Ask people to review the latest version: the state becomes pending (unless the
        version has decisions already) and each reviewer is mailed a link to the share page."""
        body = _validated(ReviewRequestBody, body)
        found = access.find_document(self.ctx, who, document_id)
        actor, doc = found.actor, found.document
        emails = list(dict.fromkeys(body.reviewers))  # lowercased by the model; each once, in order
        for email in emails:
            self.may_be_asked(doc, email, f"reviewers.{body.reviewers.index(email)}")
        strangers = [e for e in emails if self._member(doc, e) is None]
        if strangers:  # mail to people outside the workspace: a daily budget, the whole request or nothing
            ratelimits.hit(self.ctx, ratelimits.scope_key("review-mails", doc.workspace_id),
                           limits.REVIEW_MAILS_TO_RECIPIENTS, limits.REFUSALS["review-mails"], count=len(strangers))
        requester = reviewer_of(actor)
        for attempt in range(ATTEMPTS):
            self.ctx.backoff(attempt)
            state, decisions, requested = rules.after_request(doc, emails)
            status = ReviewStatus(state=state, version=doc.version_count, decisions=decisions, requested=requested)
            now_ms = self.ctx.now_ms()
            event = make_event("review.requested", doc.workspace_id, doc.document_id, now_ms, {
                "document_id": doc.document_id, "version_number": doc.version_count, "requested": emails,
                "message": body.message or None,
                "requested_by": Reviewer(kind=requester.kind,  # type: ignore[arg-type]  # a reviewer kind
                                         id=requester.id, name=requester.name,
                                         email=requester.email).model_dump(mode="json"),
                "document": _summary(_with_status(doc, status))})
            try:
                self.ctx.reviews.set_status(doc, status, event)
            except StaleDocument:
                doc = access.check_still_visible(self.ctx, actor, doc.document_id)
                continue
            break
        else:
            raise ServiceUnavailable("The document's reviews are busy; retry in a moment.")
        self.ctx.nudge_outbox()
        self._mail(doc, emails, requester, body.message)
        return ReviewsRequested(requested=emails)

    def _member(self, doc: Document, email: str) -> Optional[records.Member]:
        """The member `email` names (an account made with a Unicode domain too), else None."""
        for form in address_forms(email):
            member = self.ctx.people.get_member(doc.workspace_id, form)
            if member is not None:
                return member
        return None

    def may_be_asked(self, doc: Document, email: str, field: str) -> None:
        """A reviewer must be a member of the document's workspace or a recipient its
        `recipients` link admits (7f); anyone else is 422 naming the address."""
        if audience.admitted(self.ctx, doc, email):
            return
        if self._member(doc, email) is None:
            raise ValidationFailed.field(field, f"{email} is not a member of this workspace nor a recipient of its "
                                                "link; only they can be asked to review (invite them, or share "
                                                "the link with them as a recipient)")

    def _mail(self, doc: Document, emails: Sequence[str], requester: ReviewerIdentity,
              message: Optional[str]) -> None:
        from chalicelib.services.document_shapes import share_url

        workspace = self.ctx.workspaces.get(doc.workspace_id)
        title = " ".join(doc.title.split())
        for email in emails:
            # A member signs in; a recipient of a `recipients` link (7f) gets a code by mail instead.
            recipient = self._member(doc, email) is None
            mailing.send(self.ctx, mailing.render(
                "review", email, mailing.branding_of(workspace), link=share_url(doc.share_id) + "#review",
                title=title[:200], version=doc.version_count, requester=requester.name,
                workspace_name=workspace.name if workspace else "Docpub", message=message, recipient=recipient))

    # ---------------------------------------------------------------- reading and waiting

    @requires("list_reviews")
    def list(self, who: Who, document_id: str, since: Optional[str] = None,
             wait: Optional[int] = None, waiting: bool = False) -> ReviewList:
        """The newest reviews and the review state; with `since` or `wait`, what is newer than
        `since` (reviews, and feedback threads with new comments or viewer replies), as soon
        as there is some or after `wait` seconds."""
        if wait is not None and not (isinstance(wait, int) and 0 <= wait <= limits.WAIT_MAX_SECONDS):
            raise ValidationFailed.field("wait", f"must be a number of seconds from 0 to {limits.WAIT_MAX_SECONDS}")
        found = access.find_document(self.ctx, who, document_id)
        actor, doc = found.actor, found.document
        listing = f"reviews#{doc.document_id}"
        if since is not None or wait or waiting:
            position = (cursors.unseal_since(actor.workspace_id, listing, since, SINCE_MESSAGE) if since is not None
                        else self.ctx.feedback.activity_head(actor.workspace_id, self.ctx.now_ms()))
            return self._wait(actor, doc, listing, position, wait or 0)
        head = self.ctx.feedback.activity_head(actor.workspace_id, self.ctx.now_ms())
        items, _cursor = self.ctx.reviews.page(doc.document_id, REVIEWS_LISTED, None)
        return ReviewList(review_state=rules.state_of(doc),  # type: ignore[arg-type]  # one of STATES
                          reviews=[review_model(i) for i in items], feedback=None,
                          since=cursors.seal(actor.workspace_id, listing, head))

    @requires("list_reviews")
    def history(self, who: Who, document_id: str) -> tuple[Document, builtins.list[Review]]:
        """(the document, its newest reviews) for the dashboard's decision history."""
        found = access.find_document(self.ctx, who, document_id)
        items, _cursor = self.ctx.reviews.page(found.id, REVIEWS_LISTED, None)
        return found.document, [review_model(i) for i in items]

    def _wait(self, actor: Actor, doc: Document, listing: str, position: str, wait_seconds: int) -> ReviewList:
        """Reviews and feedback activity of the document after `position`: at once if there is
        some, else reading again once a second (one storage read) until `wait_seconds` passed,
        in one of the workspace's waiting slots (services/waits.wait_slot: 429 when all are taken)."""
        events: builtins.list[records.Event] = []
        with wait_slot(self.ctx, actor.workspace_id) if wait_seconds > 0 else nullcontext():
            deadline = self.ctx.clock() + wait_seconds
            while True:
                try:
                    found, position = self.ctx.feedback.activity_since(actor.workspace_id, doc.document_id,
                                                                       position, self.ctx.now_ms(), REVIEWS_LISTED)
                except BadCursor as exc:
                    raise ValidationFailed.field("since", SINCE_MESSAGE) from exc
                events += found
                left = deadline - self.ctx.clock()
                if events or left <= 0:
                    break
                self.ctx.sleep(min(limits.WAIT_READ_INTERVAL_SECONDS, left))
        reviews = [Review.model_validate({k: v for k, v in e.payload.items() if k != "document"})
                   for e in reversed(events) if e.type.startswith("review.") and "review_id" in e.payload]
        return ReviewList(review_state=rules.state_of(self._current(actor, doc)),  # type: ignore[arg-type]
                          reviews=reviews, feedback=self._threads(events),
                          since=cursors.seal(actor.workspace_id, listing, position))

    def _current(self, actor: Actor, doc: Document) -> Document:
        """The document as it is now (a review just woke us: its state moved)."""
        return access.check_still_visible(self.ctx, actor, doc.document_id)

    def _threads(self, events: Sequence[records.Event]) -> builtins.list[Feedback]:
        from chalicelib.services.feedback import FeedbackService

        ids: list[str] = []
        for event in reversed(events):  # newest activity first, each thread once
            if event.feedback_id and event.feedback_id not in ids:
                ids.append(event.feedback_id)
        return FeedbackService(self.ctx).threads_by_id(ids) if ids else []

    # ---------------------------------------------------------------- the share page

    def share_reviewer(self, share_id: str, cookies: Any, version_number: Optional[int] = None
                       ) -> tuple[Optional[str], str, int]:
        """(the member reviewing through this link, or None; the review state; the version
        shown) for the share page's review panel. NotFound, MembersOnly, Locked as the page."""
        found, member = self._share_access(share_id, cookies, version_number)
        who = member[0] if member else found.recipient
        return who, rules.state_of(found.doc), found.version_number

    def submit_on_share(self, share_id: str, cookies: Any, version_number: Optional[int],
                        submission: ReviewSubmission) -> Review:
        """A decision on the version a share page shows, by a member (named by the pass the
        dashboard gave this browser for the link, /dashboard/open) or a verified recipient of a
        `recipients` link (its viewer cookie: reviewer kind `recipient`). A recipient pass whose
        address the link's audience no longer admits is 403; no pass at all is 401."""
        found, member = self._share_access(share_id, cookies, version_number)
        chosen = submission.model_copy(update={"version_number": found.version_number})
        if member is not None:
            actor = Actor(found.doc.workspace_id, role=member[1], member=member[0], surface="share")
            access.authorize(actor, "submit_review")
            return self._submit(actor, found.doc, chosen)
        if found.recipient is not None:
            email = found.recipient
            actor = Actor(found.doc.workspace_id, role="viewer", surface="share")
            access.authorize(actor, "submit_review")
            return self._submit(actor, found.doc, chosen, ReviewerIdentity("recipient", email, email, email))
        from chalicelib.services.sharing import ViewerCookies

        presented = audience.email_of_pass(self.ctx, found.doc, ViewerCookies.of(cookies).recipient)
        if presented is not None:
            raise Forbidden(f"{presented} is not among the people this document is shared with.")
        raise Unauthorized("Sign in as a member of this document's workspace to review it.")

    def _share_access(self, share_id: str, cookies: Any, version_number: Optional[int]) -> tuple[Any, Any]:
        """(the viewer's Access, the member a pass names or None). A recipient pass the link no
        longer admits is 403 here, not 401: the reviewer is known, and outside the audience."""
        from chalicelib.services.sharing import RecipientsOnly, ShareService, ViewerCookies

        sharing = ShareService(self.ctx)
        try:
            found = sharing.access(share_id, cookies, version_number)
        except RecipientsOnly as exc:
            if exc.presented is not None:
                raise Forbidden(f"{exc.presented} is not among the people this document is shared with.") from exc
            raise
        return found, sharing.member_of_pass(found.doc, ViewerCookies.of(cookies).member)

    # ---------------------------------------------------------------- the dashboard

    def awaiting(self, doc: Document, email: str) -> bool:
        """Does this document wait for `email`'s review (asked, no decision on the latest version)?"""
        return rules.awaits(doc, email, member_reviewer_key(email))


def _with_status(doc: Document, status: ReviewStatus) -> Document:
    from dataclasses import replace

    return replace(doc, review_state=status.state, review_version=status.version,
                   review_decisions=dict(status.decisions), review_requested=tuple(status.requested),
                   review_seq=doc.review_seq + 1)


_Model = TypeVar("_Model", ReviewSubmission, ReviewRequestBody)


def _validated(model: type[_Model], value: Union[_Model, Mapping[str, Any]]) -> _Model:
    """The request model, from a form's fields when it is not one already (422 in the contract's words)."""
    if isinstance(value, model):
        return value
    from pydantic import ValidationError

    try:
        return model.model_validate(dict(value))
    except ValidationError as exc:
        raise ValidationFailed.from_pydantic(exc.errors(include_url=False, include_input=False)) from None
