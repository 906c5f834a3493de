"""Storage port for people (contract 7d): members and roles, one-time tokens
(email verification, password reset, invitations, sign-in links) and the
activity log. Records are plain dicts; times are epoch milliseconds.

Atomic rules the adapters guarantee:
- A workspace never loses its last owner: `set_role` and `remove_member` refuse
  (LastOwner) when the change would leave no member with the role `owner`, even
  when two owners demote each other at the same moment.
- A token is used at most once (`use_token`, `accept_invite`: conditional writes),
  so two racing uses of one link can never both win.
- `accept_invite` marks the invitation used and adds the member in one step.
- `remove_member` also ends that person's sessions in that workspace.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

ROLES = ("owner", "editor", "viewer")


class LastOwner(Exception):
    """The change would leave the workspace without an owner."""


class NotMember(Exception):
    """No such member in that workspace."""


class MemberExists(Exception):
    """That person is already a member of the workspace."""


class PeopleRepository(Protocol):
    # members: {workspace_id, email, role, created_ms, added_by}
    def get_member(self, workspace_id: str, email: str) -> Optional[dict]: ...

    def list_members(self, workspace_id: str) -> list[dict]:
        """Every member, oldest first."""

    def list_memberships(self, email: str) -> list[dict]:
        """Every workspace the person belongs to (member records), oldest first."""

    def add_member(self, member: dict[str, Any]) -> None:
        """MemberExists if already a member."""

    def set_role(self, workspace_id: str, email: str, role: str) -> dict[str, Any]:
        """The member as stored; NotMember, LastOwner."""

    def remove_member(self, workspace_id: str, email: str) -> dict[str, Any]:
        """Remove the member and end their sessions in that workspace; the removed
        record. NotMember, LastOwner."""

    # one-time tokens: {token_hash, kind, email, workspace_id?, role?, created_ms,
    # expires_ms, used_ms?, password_changed_ms?, invited_by?}
    def put_token(self, token: dict[str, Any]) -> None: ...

    def get_token(self, token_hash: str) -> Optional[dict]: ...

    def use_token(self, token_hash: str, now_ms: int) -> Optional[dict]:
        """Mark an unused, unexpired token used; the record if this call did, else None."""

    def accept_invite(self, token_hash: str, member: dict[str, Any], now_ms: int) -> Optional[dict]:
        """Use the invitation and add `member`, atomically; the invitation if this call
        used it (None: unknown, used or expired; nothing changed). MemberExists: the
        person joined meanwhile (the invitation is left unused)."""

    def list_invites(self, workspace_id: str, now_ms: int) -> list[dict]:
        """Unused, unexpired invitations of a workspace, newest first."""

    def revoke_invites(self, workspace_id: str, email: str, now_ms: int) -> int:
        """Mark a person's pending invitations to the workspace used (withdrawn)."""

    # activity: {workspace_id, activity_id, created_ms, actor_kind, actor, surface,
    # action, target, detail(dict), expires_at}
    def add_activity(self, entry: dict[str, Any]) -> None: ...

    def activity_page(self, workspace_id: str, since_ms: int, limit: int, cursor: Optional[str]
                      ) -> tuple[list[dict], Optional[str]]:
        """Newest first, only entries at or after `since_ms`; BadCursor."""
