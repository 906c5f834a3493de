"""Reviews (contract 7e): decisions on a document's versions, and the review state the
document keeps (records.Document.review_*).

A review, the change it makes to the document's review state and the event that
reports it (read by waiting agents, turned into webhook deliveries) are one atomic
step; so is a review request. The state is written only if the document's
`review_seq` and `version_count` are still those the service computed it from
(StaleDocument otherwise: read again), so concurrent reviewers never lose a decision.

Records (chalicelib/ports/records.py): `Review`, `ReviewStatus`, `Event`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

from chalicelib.ports.records import Document, Event, ReviewStatus

if TYPE_CHECKING:
    from chalicelib.ports.records import Review


class ReviewRepository(Protocol):
    def add(self, review: Review, expected: Document, status: Optional[ReviewStatus],
            event: Optional[Event] = None) -> None:
        """Store the review (its version `review.version_number` must still exist), with
        `status` (None: the state is left as it is) and the event, atomically.
        StaleDocument if the document is gone, being deleted, or (with a status) its
        `review_seq` or `version_count` moved; GuardFailed("version") if the version is gone."""

    def set_status(self, expected: Document, status: ReviewStatus, event: Optional[Event] = None) -> None:
        """A review request: the document's review state becomes `status`, with the event,
        under the same conditions as `add` with a status."""

    def page(self, document_id: str, limit: int, cursor: Optional[str]) -> tuple[list[Review], Optional[str]]:
        """A document's reviews, newest first, a page at a time (BadCursor for a cursor
        this listing did not return)."""

    def delete_for_document(self, document_id: str, workspace_id: str) -> int:
        """Every review of a document and the review events that carry their text; safe to repeat."""
