"""Reviews (contract 7e) on the service layer: decisions, review state, requests and
their mail, waiting for a decision, webhook events; on the default store (SQLite)."""
from __future__ import annotations

import pytest

from chalicelib.errors import ForbiddenRole, NotFound, ValidationFailed
from chalicelib.models import EditOperation, EditRequest, PublishRequest, ReviewRequestBody, ReviewSubmission
from chalicelib.ports.records import Member, User
from chalicelib.services.access import Actor
from chalicelib.services.auth import credentials_from_key

OWNER, ANA, BEN = "owner@example.com", "ana@example.com", "ben@example.com"


class Mailbox:
    def __init__(self):
        self.sent = []

    def send(self, message):
        self.sent.append(message)


@pytest.fixture
def mailbox():
    return Mailbox()


@pytest.fixture
def rig(storage, clock, mailbox):
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.services.reviews import ReviewService
    from chalicelib.services.workspaces import WorkspaceService
    from chalicelib.wiring import new_context

    ctx = new_context(clock=clock, mail_factory=lambda: mailbox, sleep=clock.advance)
    ws, key = WorkspaceService(ctx).create_workspace("Acme", "pro")
    for email, role in ((OWNER, "owner"), (ANA, "viewer"), (BEN, "editor")):
        ctx.users.create(User(email=email, password_hash="x", workspace_id=ws.id, created_ms=1))
        ctx.people.add_member(Member(workspace_id=ws.id, email=email, role=role, created_ms=1))

    class Rig:
        pass

    r = Rig()
    r.ctx, r.clock, r.ws = ctx, clock, ws.id
    r.key = credentials_from_key(key.api_key)
    r.documents, r.reviews, r.feedback = DocumentService(ctx), ReviewService(ctx), FeedbackService(ctx)
    r.member = lambda email, role="viewer": Actor(ws.id, role=role, member=email, surface="dashboard")
    r.doc = r.documents.publish(r.key, PublishRequest(title="Plan", html="<p>Draft one</p>")).response.document_id
    return r


def review(rig, who, decision, message=None, version_number=None):
    rig.clock.advance(1)
    return rig.reviews.submit(who, rig.doc, ReviewSubmission(decision=decision, message=message,
                                                             version_number=version_number))


def state(rig):
    return rig.documents.get(rig.key, rig.doc).review_state


def edit(rig):
    rig.documents.edit(rig.key, rig.doc, EditRequest(edits=[EditOperation(old_string="Draft", new_string="Draft!")]))


def test_the_state_follows_the_rules_of_the_contract(rig):
    assert state(rig) == "none"
    review(rig, rig.member(ANA), "commented", "a remark")
    assert state(rig) == "none"  # a comment leaves the state as it was
    rig.reviews.request(rig.key, rig.doc, ReviewRequestBody(reviewers=[ANA, BEN]))
    assert state(rig) == "pending"
    review(rig, rig.member(ANA), "changes_requested", "Fix the title")
    assert state(rig) == "changes_requested"
    review(rig, rig.member(BEN), "approved")
    assert state(rig) == "changes_requested"  # Ana's changes_requested is still outstanding
    review(rig, rig.member(ANA), "commented")
    assert state(rig) == "changes_requested"
    review(rig, rig.member(ANA), "approved")  # her latest decision on this version
    assert state(rig) == "approved"
    edit(rig)
    assert state(rig) == "pending"  # a new version after any review
    review(rig, rig.key, "approved", version_number=1)  # reviews stay on their version
    assert state(rig) == "pending"
    review(rig, rig.key, "approved")
    assert state(rig) == "approved"
    listed = rig.reviews.list(rig.key, rig.doc)
    assert listed.review_state == "approved" and listed.feedback is None
    assert [(r.version_number, r.decision) for r in listed.reviews][:3] == [
        (2, "approved"), (1, "approved"), (1, "approved")]
    assert listed.reviews[0].reviewer.kind == "key" and listed.reviews[0].reviewer.email is None
    assert listed.reviews[-1].reviewer.model_dump() == {"kind": "member", "id": ANA, "name": ANA, "email": ANA}


def test_a_new_version_after_a_comment_is_pending(rig):
    """"pending: a new version after any review" (a comment is a review that keeps the state)."""
    review(rig, rig.member(ANA), "commented", "first look")
    assert state(rig) == "none"
    edit(rig)
    assert state(rig) == "pending"
    assert [d.document_id for d in rig.documents.list(rig.key, review_state="pending").documents] == [rig.doc]


def test_an_approval_without_a_request_approves(rig):
    review(rig, rig.member(ANA), "approved")
    assert state(rig) == "approved"
    assert rig.documents.list(rig.key, review_state="approved").documents[0].review_state == "approved"
    assert rig.documents.list(rig.key, review_state="none").documents == []


def test_a_review_of_a_deleted_or_unknown_version_is_404(rig):
    edit(rig)
    edit(rig)
    version_1 = rig.documents.get(rig.key, rig.doc).versions[0].version_id
    rig.documents.delete_version(rig.key, rig.doc, version_1)
    for number in (1, 4, 99):
        with pytest.raises(NotFound):
            review(rig, rig.key, "approved", version_number=number)
    assert review(rig, rig.key, "commented", version_number=2).version_number == 2
    with pytest.raises(NotFound):
        rig.reviews.submit(rig.key, "00000000-0000-4000-8000-000000000000", ReviewSubmission(decision="approved"))


def test_review_requests_mail_members_and_refuse_anyone_else(rig, mailbox):
    answer = rig.reviews.request(rig.key, rig.doc, ReviewRequestBody(reviewers=["Ana@Example.com", ANA, BEN],
                                                                     message="Numbers on page 2?"))
    assert answer.requested == [ANA, BEN]
    assert [m.to for m in mailbox.sent] == [ANA, BEN]
    share_url = rig.documents.get(rig.key, rig.doc).share_url
    assert share_url in mailbox.sent[0].text and "Numbers on page 2?" in mailbox.sent[0].text
    assert mailbox.sent[0].subject == "Review requested: Plan"
    with pytest.raises(ValidationFailed) as refused:
        rig.reviews.request(rig.key, rig.doc, ReviewRequestBody(reviewers=[BEN, "stranger@example.org"]))
    assert refused.value.details["fields"][0]["field"] == "reviewers.1"
    assert "stranger@example.org" in refused.value.message
    assert len(mailbox.sent) == 2  # nothing sent for a refused request


def test_a_viewer_reviews_but_cannot_ask_for_reviews(rig):
    review(rig, rig.member(ANA, "viewer"), "approved")
    with pytest.raises(ForbiddenRole):
        rig.reviews.request(rig.member(ANA, "viewer"), rig.doc, ReviewRequestBody(reviewers=[BEN]))


def test_needs_my_review_lists_what_i_was_asked_and_have_not_decided(rig):
    rig.reviews.request(rig.key, rig.doc, ReviewRequestBody(reviewers=[ANA]))
    other = rig.documents.publish(rig.key, PublishRequest(title="Other", html="<p>x</p>")).response.document_id
    ana = rig.member(ANA)
    assert [d.document_id for d in rig.documents.awaiting_review(ana, ANA).documents] == [rig.doc]
    assert rig.documents.awaiting_review(ana, BEN).documents == []
    review(rig, ana, "commented")
    assert [d.document_id for d in rig.documents.awaiting_review(ana, ANA).documents] == [rig.doc]
    review(rig, ana, "approved")
    assert rig.documents.awaiting_review(ana, ANA).documents == []
    edit(rig)  # a new version waits for her again
    assert [d.document_id for d in rig.documents.awaiting_review(ana, ANA).documents] == [rig.doc]
    assert other not in [d.document_id for d in rig.documents.awaiting_review(ana, ANA).documents]


def test_the_list_filter_pages_by_review_state(rig):
    ids = [rig.documents.publish(rig.key, PublishRequest(title=f"D{n}", html="<p>x</p>")).response.document_id
           for n in range(5)]
    for document_id in ids[:3]:
        rig.reviews.submit(rig.key, document_id, ReviewSubmission(decision="approved"))
    first = rig.documents.list(rig.key, limit=2, review_state="approved")
    second = rig.documents.list(rig.key, limit=2, cursor=first.next_cursor, review_state="approved")
    assert len(first.documents) == 2 and len(second.documents) == 1 and second.next_cursor is None
    assert {d.document_id for d in first.documents + second.documents} == set(ids[:3])
    with pytest.raises(ValidationFailed):
        rig.documents.list(rig.key, cursor=first.next_cursor, review_state="pending")  # another listing
    assert {d.review_state for d in rig.documents.list(rig.key, limit=100).documents} == {"approved", "none"}


def test_waiting_answers_on_the_first_review_and_costs_one_read_a_second(rig):
    reads = []
    original = rig.ctx.feedback.activity_since

    def counted(*args, **kwargs):
        reads.append(rig.clock())
        return original(*args, **kwargs)

    rig.ctx.feedback.activity_since = counted
    start = rig.reviews.list(rig.key, rig.doc)
    quiet = rig.reviews.list(rig.key, rig.doc, since=start.since, wait=5)
    assert quiet.reviews == [] and quiet.feedback == [] and quiet.review_state == "none"
    assert len(reads) == 6 and all(b - a >= 1 for a, b in zip(reads, reads[1:]))
    made = review(rig, rig.member(ANA), "changes_requested", "Too long")
    woke = rig.reviews.list(rig.key, rig.doc, since=quiet.since, wait=25)
    assert woke.review_state == "changes_requested"
    assert [r.review_id for r in woke.reviews] == [made.review_id]
    again = rig.reviews.list(rig.key, rig.doc, since=woke.since, wait=0)
    assert again.reviews == [] and again.feedback == []  # each review once


def test_a_review_does_not_end_a_wait_for_feedback(rig):
    """A review wakes waiting agents; a feedback list keeps waiting for feedback."""
    listed = rig.feedback.list(rig.key, document_id=rig.doc)
    review(rig, rig.member(ANA), "approved")
    answer = rig.feedback.list(rig.key, document_id=rig.doc, since=listed.since, wait=3)
    assert answer.feedback == []
    assert rig.clock() - 1_795_000_000.0 >= 3  # it waited the whole time


def test_review_events_go_to_subscribed_webhooks(rig):
    from chalicelib.models import WebhookCreateRequest
    from chalicelib.services.webhooks import WebhookService

    hooks = WebhookService(rig.ctx)
    created = hooks.create(rig.key, WebhookCreateRequest(
        url="https://hooks.example.com/x", events=["review.requested", "review.approved", "review.changes_requested"]))
    rig.reviews.request(rig.key, rig.doc, ReviewRequestBody(reviewers=[ANA]))
    review(rig, rig.member(ANA), "commented")
    made = review(rig, rig.member(ANA), "approved", "ok")
    hooks.dispatch_pending()
    deliveries = hooks.deliveries(rig.key, created.webhook_id).deliveries
    assert sorted(d.event for d in deliveries) == ["review.approved", "review.requested"]
    approved = [e for e in _events(rig) if e.type == "review.approved"][0]
    assert approved.payload["review_id"] == made.review_id
    assert approved.payload["document"]["review_state"] == "approved"
    assert approved.payload["document"]["document_id"] == rig.doc


def _events(rig):
    """The document's waking events so far (the embedded store's log from its start)."""
    from chalicelib.adapters.sqlite import cursors

    start = cursors.encode("activity", [0])
    return rig.ctx.feedback.activity_since(rig.ws, rig.doc, start, rig.ctx.now_ms(), 100)[0]


def test_deleting_the_document_deletes_its_reviews(rig):
    review(rig, rig.member(ANA), "approved", "private words")
    rig.documents.delete(rig.key, rig.doc)
    assert rig.ctx.reviews.page(rig.doc, 10, None) == ([], None)
    assert [e for e in _events(rig) if e.type.startswith("review.")] == []
