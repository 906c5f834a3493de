"""Who belongs to a workspace, with which role: the one lookup every surface uses
(dashboard sessions, OAuth grants) before the role check of services/access.py.

Workspaces created before members existed have no member records on DynamoDB
(SQLite's migration added them): the first lookup makes the account that
created such a workspace its owner, once, and only while the workspace has no
member at all, so nobody removed later comes back this way."""
from __future__ import annotations

from typing import Optional

from chalicelib.ports.people import MemberExists
from chalicelib.ports.records import Member
from chalicelib.services.context import Context


def role_in(ctx: Context, workspace_id: str, email: Optional[str]) -> Optional[str]:
    """The person's current role in the workspace, or None (not a member)."""
    member = membership(ctx, workspace_id, email)
    return member.role if member else None


def membership(ctx: Context, workspace_id: str, email: Optional[str]) -> Optional[Member]:
    """The person's member record in the workspace (its `created_ms` tells a membership
    from an earlier one of the same person), or None (not a member)."""
    if not email:
        return None
    member = ctx.people.get_member(workspace_id, email)
    if member is not None:
        return member
    user = ctx.users.get(email)
    if (user is None or user.workspace_id != workspace_id or ctx.people.list_members(workspace_id)
            or ctx.workspaces.get(workspace_id) is None):
        return None
    try:
        ctx.people.add_member(Member(workspace_id=workspace_id, email=email, role="owner",
                                     created_ms=user.created_ms or ctx.now_ms()))
    except MemberExists:
        pass
    return ctx.people.get_member(workspace_id, email)


def workspaces_of(ctx: Context, email: str) -> list[Member]:
    """The person's memberships (legacy workspace included), oldest first."""
    memberships = ctx.people.list_memberships(email)
    if not memberships:
        user = ctx.users.get(email)
        if user and user.workspace_id and role_in(ctx, user.workspace_id, email):
            memberships = ctx.people.list_memberships(email)
    return memberships
