"""The review repository (contract 7e) on both adapters: a review, the review state on
its document and the event are one atomic step, conditional on the document's
`review_seq` and `version_count`; reviews page newest first; a document's reviews and
their events go with it."""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.ports import BadCursor, GuardFailed, StaleDocument
from chalicelib.ports.records import Event, Review, ReviewStatus
from tests.contract.test_repository_contract import WS, create, make_workspace, repos  # noqa: F401
from tests.helpers import run_together


def _review(doc, n, decision="approved", version=1, created_ms=None):
    return Review(review_id=f"rv_{n:04d}", document_id=doc.document_id, workspace_id=WS, version_number=version,
                  decision=decision, reviewer_kind="member", reviewer_id=f"p{n}@example.com",
                  created_ms=created_ms if created_ms is not None else 10_000 + n, message=f"m{n}",
                  reviewer_name=f"P {n}", reviewer_email=f"p{n}@example.com")


def _status(state="approved", version=1, decisions=None, requested=()):
    return ReviewStatus(state=state, version=version,
                        decisions=decisions if decisions is not None else {"member:p1@example.com": "approved"},
                        requested=tuple(requested))


def _event(doc, n, kind="review.approved"):
    return Event(event_id=f"ev_r{n}", workspace_id=WS, type=kind, created_ms=10_000 + n,
                 document_id=doc.document_id, wakes=True, payload={"review_id": f"rv_{n:04d}"})


@pytest.fixture
def doc(repos):  # noqa: F811
    make_workspace(repos)
    return create(repos, 1)


def test_a_review_sets_the_state_on_its_document_exactly_as_given(repos, doc):  # noqa: F811
    start = repos.feedback.activity_head(WS, 0)
    status = _status(requested=("a@example.com", "b@example.com"))
    repos.reviews.add(_review(doc, 1), doc, status, _event(doc, 1))
    stored = repos.documents.get(doc.document_id)
    assert (stored.review_state, stored.review_version, dict(stored.review_decisions), stored.review_requested,
            stored.review_seq) == ("approved", 1, {"member:p1@example.com": "approved"},
                                   ("a@example.com", "b@example.com"), 1)
    assert type(stored.review_requested) is tuple
    assert repos.documents.get_many([doc.document_id])[doc.document_id] == stored
    assert repos.documents.get_with_versions(doc.document_id)[0] == stored
    reviews, cursor = repos.reviews.page(doc.document_id, 10, None)
    assert reviews == [_review(doc, 1)] and cursor is None
    events, _ = repos.feedback.activity_since(WS, doc.document_id, start, 20_000, 10)  # written with it, waking
    assert [e.event_id for e in events] == ["ev_r1"]


def test_a_stale_review_seq_or_version_count_changes_nothing(repos, doc):  # noqa: F811
    start = repos.feedback.activity_head(WS, 0)
    repos.reviews.add(_review(doc, 1), doc, _status())
    with pytest.raises(StaleDocument):  # read before the first review: review_seq moved
        repos.reviews.add(_review(doc, 2), doc, _status(), _event(doc, 2))
    with pytest.raises(StaleDocument):
        repos.reviews.set_status(doc, _status("pending"), _event(doc, 3))
    current = repos.documents.get(doc.document_id)
    with pytest.raises(StaleDocument):  # a new version since
        repos.reviews.add(_review(doc, 4), dataclasses.replace(current, version_count=0), _status())
    assert [r.review_id for r in repos.reviews.page(doc.document_id, 10, None)[0]] == ["rv_0001"]
    assert repos.documents.get(doc.document_id).review_seq == 1
    events, _ = repos.feedback.activity_since(WS, doc.document_id, start, 20_000, 10)
    assert events == []  # no event of a refused review
    repos.reviews.set_status(current, _status("pending", decisions={}, requested=("x@example.com",)))
    after = repos.documents.get(doc.document_id)
    assert (after.review_state, after.review_requested, after.review_seq) == ("pending", ("x@example.com",), 2)


def test_two_racing_reviews_of_one_document_one_wins(repos, doc):  # noqa: F811
    results, failures = run_together([
        lambda n=n: repos.reviews.add(_review(doc, n), doc, _status()) for n in range(4)])
    assert len(results) == 1 and failures == ["StaleDocument"] * 3
    assert repos.documents.get(doc.document_id).review_seq == 1


def test_a_review_of_a_missing_version_or_a_deleted_document_is_refused(repos, doc):  # noqa: F811
    with pytest.raises(GuardFailed):
        repos.reviews.add(_review(doc, 1, version=2), doc, _status(version=2))
    assert repos.reviews.page(doc.document_id, 10, None) == ([], None)
    repos.documents.begin_delete(doc)
    with pytest.raises(StaleDocument):
        repos.reviews.add(_review(doc, 2), doc, _status())


def test_reviews_page_newest_first_with_a_cursor_of_their_own(repos, doc):  # noqa: F811
    current = doc
    for n in range(5):
        repos.reviews.add(_review(doc, n, created_ms=20_000 + n * 10), current, _status())
        current = repos.documents.get(doc.document_id)
    first, cursor = repos.reviews.page(doc.document_id, 3, None)
    rest, end = repos.reviews.page(doc.document_id, 3, cursor)
    assert [r.review_id for r in first + rest] == [f"rv_{n:04d}" for n in (4, 3, 2, 1, 0)] and end is None
    other = create(repos, 2)
    with pytest.raises(BadCursor):
        repos.reviews.page(other.document_id, 3, cursor)


def test_deleting_a_documents_reviews_takes_their_events(repos, doc):  # noqa: F811
    start = repos.feedback.activity_head(WS, 0)
    repos.reviews.add(_review(doc, 1), doc, _status(), _event(doc, 1))
    other = create(repos, 2)
    repos.reviews.add(_review(other, 2), other, _status(), _event(other, 2))
    assert repos.reviews.delete_for_document(doc.document_id, WS) == 1
    assert repos.reviews.delete_for_document(doc.document_id, WS) == 0
    assert repos.reviews.page(doc.document_id, 10, None) == ([], None)
    assert len(repos.reviews.page(other.document_id, 10, None)[0]) == 1
    events, _ = repos.feedback.activity_since(WS, None, start, 20_000, 10)
    assert [e.event_id for e in events] == ["ev_r2"]


def test_a_comment_on_a_never_reviewed_document_keeps_its_state_none(repos, doc):  # noqa: F811
    repos.reviews.add(_review(doc, 1, "commented"), doc, ReviewStatus(state="none", version=None))
    stored = repos.documents.get(doc.document_id)
    assert (stored.review_state, stored.review_version, dict(stored.review_decisions), stored.review_requested,
            stored.review_seq) == ("none", None, {}, (), 1)
