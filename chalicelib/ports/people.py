"""Storage port for people (contract 7d): members and roles, one-time tokens
(email verification, password reset, invitations, sign-in links) and the
activity log. Records (chalicelib/ports/records.py): `Member`, `AccountToken`,
`ActivityEntry`; times are epoch milliseconds.

Atomic rules the adapters guarantee:
- A workspace never loses its last owner: `set_role` and `remove_member` refuse
  (LastOwner) when the change would leave no member with the role `owner`, even
  when two owners demote each other at the same moment.
- A token is used at most once (`use_token`, `accept_invite`: conditional writes),
  so two racing uses of one link can never both win.
- `accept_invite` marks the invitation used and adds the member in one step.
- `remove_member` also ends that person's sessions in that workspace and revokes
  the API keys they made in it (`ApiKey.created_by`): in the removal's own step
  where the store allows (SQLite: one transaction; DynamoDB: the first 10 keys in
  the removal's transaction, any more right after it, one transaction each). A key
  is dead from the removal on whatever the marking: authentication checks that its
  creator's membership still exists and began before the key was made.
- `remove_member` also leaves a removal mark (`RemovalMark`: workspace, email, who,
  when) in that same step, so single sign-on's auto-join never adds the person back
  (`add_member(..., unless_removed=True)` refuses with `Removed` while the mark
  exists, checked in the add's own step). A deliberate add (`add_member` without it)
  and an accepted invitation (`accept_invite`) clear the mark in their own step.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from chalicelib.ports.records import (
        AccountToken, ActivityEntry, InvitationIndexing, Member, MemberRemoval, RemovalMark,
    )


ROLES = ("owner", "editor", "viewer")


class LastOwner(Exception):
    """The change would leave the workspace without an owner."""


class NotMember(Exception):
    """No such member in that workspace."""


class MemberExists(Exception):
    """That person is already a member of the workspace."""


class Removed(Exception):
    """That person was removed from the workspace (a removal mark): auto-join adds them not."""


class PeopleRepository(Protocol):
    # members
    def get_member(self, workspace_id: str, email: str) -> Optional[Member]: ...

    def list_members(self, workspace_id: str) -> list[Member]:
        """Every member, oldest first."""

    def list_memberships(self, email: str) -> list[Member]:
        """Every workspace the person belongs to (member records), oldest first."""

    def add_member(self, member: Member, unless_removed: bool = False) -> None:
        """MemberExists if already a member. A deliberate add clears the person's removal
        mark in the same step; with `unless_removed` (single sign-on's auto-join) a removal
        mark refuses the add instead (Removed), checked in the same step."""

    def get_removal(self, workspace_id: str, email: str) -> Optional[RemovalMark]:
        """The person's removal mark in the workspace, or None."""

    def set_role(self, workspace_id: str, email: str, role: str) -> Member:
        """The member as stored; NotMember, LastOwner."""

    def remove_member(self, workspace_id: str, email: str, now_ms: int, removed_by: str = "") -> MemberRemoval:
        """Remove the member, end their sessions in that workspace and revoke (at
        `now_ms`) the API keys they made there, and leave the removal mark (by
        `removed_by`, at `now_ms`); the removed record and those keys' ids.
        NotMember, LastOwner."""

    # one-time tokens
    def put_token(self, token: AccountToken) -> None: ...

    def get_token(self, token_hash: str) -> Optional[AccountToken]: ...

    def use_token(self, token_hash: str, now_ms: int) -> Optional[AccountToken]:
        """Mark an unused, unexpired token used; the record if this call did, else None."""

    def accept_invite(self, token_hash: str, member: Member, now_ms: int) -> Optional[AccountToken]:
        """Use the invitation and add `member` (clearing any removal mark), atomically;
        the invitation if this call used it (None: unknown, used or expired; nothing changed). MemberExists: the
        person joined meanwhile (the invitation is left unused)."""

    def list_invites(self, workspace_id: str, now_ms: int) -> list[AccountToken]:
        """Unused, unexpired invitations of a workspace, newest first."""

    def invites_for(self, email: str, now_ms: int) -> list[AccountToken]:
        """Unused, unexpired invitations to the person (any workspace), newest first."""

    def revoke_invites(self, workspace_id: str, email: str, now_ms: int) -> int:
        """Mark a person's pending invitations to the workspace used (withdrawn)."""

    def index_invitations(self, now_ms: int) -> InvitationIndexing:
        """The upgrade step for invitations stored before `invites_for` existed: give every
        pending one that lacks it what finds it by email, each by a write conditional on the
        invitation being as read (never over a newer write, never bringing a deleted one
        back). Idempotent. Reads every stored item where the store has no other way to find
        those invitations (DynamoDB: a Scan); an operator's step, never a request's."""

    # activity
    def add_activity(self, entry: ActivityEntry) -> None: ...

    def activity_page(self, workspace_id: str, since_ms: int, limit: int, cursor: Optional[str]
                      ) -> tuple[list[ActivityEntry], Optional[str]]:
        """Newest first, only entries at or after `since_ms`; BadCursor."""
