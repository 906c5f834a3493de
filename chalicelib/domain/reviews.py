"""The review state of a document (contract 7e), as pure rules.

A document keeps (records.Document.review_*) the state as of one version
(`review_version`), each reviewer's latest decision on that version, and who was
asked to review. The state of the document is the state of its latest version:

- `none`: never requested nor reviewed;
- `pending`: requested, or a new version after any review (a version later than
  `review_version` is pending whatever was decided before: no write on publish);
- `changes_requested`: some reviewer's latest decision on this version is
  changes_requested;
- `approved`: at least one approval on this version and no outstanding
  changes_requested.

A `commented` review leaves the state as it was; a review of an older version stays on
that version and changes nothing.
"""
from __future__ import annotations

from typing import Mapping, Optional, Protocol

DECISIONS = ("approved", "changes_requested", "commented")
STATES = ("none", "pending", "changes_requested", "approved")
# Who was asked to review a document: the newest this many addresses are kept.
REQUESTED_KEPT = 100
# Distinct reviewers whose decisions one version keeps (members, keys and apps of a workspace).
DECISIONS_KEPT = 200


class Reviewed(Protocol):
    """What the rules read of a document (records.Document)."""
    @property
    def version_count(self) -> int: ...
    @property
    def review_state(self) -> str: ...
    @property
    def review_version(self) -> Optional[int]: ...
    @property
    def review_decisions(self) -> Mapping[str, str]: ...
    @property
    def review_requested(self) -> tuple[str, ...]: ...


def state_of(doc: Reviewed) -> str:
    """The document's review state: that of its latest version. A version later than the
    one the state was kept for is a new version after a review or a request: pending."""
    if doc.review_state not in STATES or doc.review_version is None:
        return "none"
    if doc.review_version != doc.version_count:
        return "pending"
    return doc.review_state


def decisions_on_latest(doc: Reviewed) -> dict[str, str]:
    """Each reviewer's latest decision on the latest version (empty after a new version)."""
    return dict(doc.review_decisions) if doc.review_version == doc.version_count else {}


def from_decisions(decisions: Mapping[str, str]) -> str:
    """The state a version's decisions give (none of them: pending)."""
    values = set(decisions.values())
    if "changes_requested" in values:
        return "changes_requested"
    if "approved" in values:
        return "approved"
    return "pending"


def after_review(doc: Reviewed, reviewer: str, decision: str, version_number: int
                 ) -> Optional[tuple[str, dict[str, str]]]:
    """(state, decisions) after `reviewer` decided `decision` on `version_number`, or None
    when the state does not change (a comment, or a review of an older version)."""
    if decision == "commented" or version_number != doc.version_count:
        return None
    decisions = decisions_on_latest(doc)
    decisions.pop(reviewer, None)  # newest last
    decisions[reviewer] = decision
    while len(decisions) > DECISIONS_KEPT:  # only the oldest approvals can be forgotten
        oldest = next((k for k, v in decisions.items() if v == "approved"), None)
        if oldest is None:
            break
        decisions.pop(oldest)
    return from_decisions(decisions), decisions


def after_comment(doc: Reviewed, version_number: int) -> tuple[str, Optional[int]]:
    """(state, version) after a `commented` review: the state as it was, but a first comment
    on the latest version of a never-reviewed document is remembered, so the next version
    is pending ("a new version after any review")."""
    if doc.review_version is None and version_number == doc.version_count:
        return "none", version_number
    return doc.review_state, doc.review_version


def after_request(doc: Reviewed, emails: list[str]) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """(state, decisions, requested) after a review request of the latest version: pending
    unless that version already has decisions (a request does not undo them)."""
    decisions = decisions_on_latest(doc)
    requested = [e for e in doc.review_requested if e not in emails] + list(emails)
    return (from_decisions(decisions) if decisions else "pending", decisions,
            tuple(requested[-REQUESTED_KEPT:]))


def awaits(doc: Reviewed, email: str, reviewer: str) -> bool:
    """Was `email` asked to review, with no decision of theirs (`reviewer` key) on the latest version?"""
    return email in doc.review_requested and reviewer not in decisions_on_latest(doc)
