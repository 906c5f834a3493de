"""Members, roles and invitations (contract 7d).

An owner invites by email (a one-time link valid 7 days, mailed with the
workspace's branding); the invitee signs in, or signs up from the link, and
joins with the role named in the invitation. Owners change roles and remove
members; a workspace always keeps one owner (the store refuses the change that
would leave none). Removing a member ends their sessions in the workspace and
revokes the OAuth grants they approved for it and the API keys they made in it
(contract 4, "Keys follow their creator"). Any member may leave.
"""
from __future__ import annotations

import hmac
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

from chalicelib.domain import limits, roles
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.ports.people import LastOwner, MemberExists, NotMember
from chalicelib.ports.records import AccountToken, Member
from chalicelib.services import activity, mailing, members, ratelimits, tokens
from chalicelib.services.tokens import LINK_INVALID, dashboard_url, new_token, normalise_email, token_digest
from chalicelib.services import access
from chalicelib.services.access import Actor, Who, requires, same_workspace
from chalicelib.services.context import Context, rfc3339

MAX_EMAIL = 254
_EMAIL_SHAPE = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
LAST_OWNER = "A workspace keeps at least one owner: make someone else an owner first."


@dataclass(frozen=True)
class Invitation:
    email: str
    role: str
    workspace_id: str
    workspace_name: str
    invited_by: Optional[str]
    expires_at: Optional[str]


def _workspace_of(who: Who) -> str:
    if not isinstance(who, Actor):
        raise NotFound("No such workspace.")  # API keys do not manage members
    return who.workspace_id


class PeopleService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    # ---------------------------------------------------------------- reading

    @requires("list_members")
    def list_members(self, who: Who) -> list[dict[str, Any]]:
        workspace_id = _workspace_of(who)
        members.role_in(self.ctx, workspace_id, who.member)  # type: ignore[union-attr]  # a legacy workspace gets its owner record
        # The active keys each member made (what removing them revokes): for those who may
        # see keys, and for each person's own row.
        see_keys = roles.allows(access.role_of(who), "list_keys")
        made = Counter(k.created_by for k in self.ctx.keys.list_for_workspace(workspace_id)
                       if k.revoked_at is None and k.created_by is not None)
        return [{"email": m.email, "role": m.role, "joined_at": rfc3339(m.created_ms),
                 "you": m.email == who.member,  # type: ignore[union-attr]
                 "api_keys": made[m.email] if see_keys or m.email == who.member else None}  # type: ignore[union-attr]
                for m in self.ctx.people.list_members(workspace_id)]

    @requires("list_members")
    def list_invites(self, who: Who) -> list[dict[str, Any]]:
        workspace_id = _workspace_of(who)
        return [{"email": i.email, "role": i.role, "invited_by": i.invited_by,
                 "expires_at": rfc3339(i.expires_ms), "invite_id": i.token_hash[:16]}
                for i in self.ctx.people.list_invites(workspace_id, self.ctx.now_ms())]

    def workspaces_of(self, email: str) -> list[dict[str, Any]]:
        """The switcher: every workspace of the person, with their role in it."""
        out = []
        for membership in members.workspaces_of(self.ctx, email):
            workspace = self.ctx.workspaces.get(membership.workspace_id)
            if workspace is not None:
                out.append({"workspace_id": workspace.workspace_id, "name": workspace.name,
                            "role": membership.role})
        return out

    # ---------------------------------------------------------------- inviting

    @requires("invite_member")
    def invite(self, who: Who, email: str, role: str) -> dict[str, Any]:
        workspace_id = _workspace_of(who)
        email = normalise_email(email)
        if len(email) > MAX_EMAIL or not _EMAIL_SHAPE.match(email):
            raise ValidationFailed.field("email", "must be a valid email address")
        if role not in roles.ROLES:
            raise ValidationFailed.field("role", "must be owner, editor or viewer")
        inviter = self.ctx.users.get(who.member) if who.member else None  # type: ignore[union-attr]
        if who.member and (inviter is None or not inviter.email_verified_ms):  # type: ignore[union-attr]
            raise ValidationFailed("Confirm your own email address before inviting others.")
        if self.ctx.people.get_member(workspace_id, email) is not None:
            raise ValidationFailed.field("email", "is already a member of this workspace")
        ratelimits.hit(self.ctx, ratelimits.scope_key("invites", workspace_id), limits.INVITES_PER_WORKSPACE,
                       limits.REFUSALS["invites"])
        workspace = self.ctx.workspaces.get(workspace_id)
        if workspace is None:
            raise NotFound("No such workspace.")
        self.ctx.people.revoke_invites(workspace_id, email, self.ctx.now_ms())  # the newest invitation wins
        token, digest = new_token()
        now_ms = self.ctx.now_ms()
        seconds = limits.INVITE_LINK_SECONDS
        self.ctx.people.put_token(AccountToken(
            token_hash=digest, kind="invite", email=email, workspace_id=workspace_id, role=role,
            invited_by=who.member, created_ms=now_ms, expires_ms=now_ms + seconds * 1000,  # type: ignore[union-attr]
            expires_at=now_ms // 1000 + seconds + 3600))
        mailing.send(self.ctx, mailing.render(
            "invite", email, mailing.branding_of(workspace), link=dashboard_url("join", token=token),
            inviter=who.member or "The workspace's operator", workspace_name=workspace.name, role=role,  # type: ignore[union-attr]
            role_article=roles.ARTICLES[role], days=seconds // 86400))
        activity.record(self.ctx, who, workspace_id, "member.invite", email, {"role": role})
        return {"email": email, "role": role, "expires_at": rfc3339(now_ms + seconds * 1000)}

    @requires("revoke_invite")
    def revoke_invite(self, who: Who, email: str) -> int:
        workspace_id = _workspace_of(who)
        revoked = self.ctx.people.revoke_invites(workspace_id, (email or "").strip().lower(), self.ctx.now_ms())
        if revoked:
            activity.record(self.ctx, who, workspace_id, "member.invite_revoked", email)
        return revoked

    def invitation(self, token: Optional[str]) -> Optional[Invitation]:
        """What the invitation link offers (None: not valid any more)."""
        record = tokens.peek(self.ctx, token, "invite")
        if record is None:
            return None
        if record.workspace_id is None or record.role is None:
            return None
        workspace = self.ctx.workspaces.get(record.workspace_id)
        if workspace is None:
            return None
        return Invitation(record.email, record.role, record.workspace_id, workspace.name,
                          record.invited_by, rfc3339(record.expires_ms))

    def accept(self, token: Optional[str], email: str) -> Invitation:
        """The signed-in person (`email`) joins with the invitation's role."""
        invitation = self.invitation(token)
        if invitation is None:
            raise ValidationFailed(LINK_INVALID)
        if invitation.email != email:
            raise ValidationFailed(f"This invitation is for {invitation.email}; sign in as that person to accept it.")
        return self._join(token_digest(token), invitation)  # type: ignore[arg-type]

    def pending_for(self, email: str) -> list[dict[str, Any]]:
        """The invitations to the signed-in person (`email`: their sign-in proved it), newest
        first: the welcome page of someone in no workspace offers them."""
        out = []
        for record in self.ctx.people.invites_for(email, self.ctx.now_ms()):
            workspace = self.ctx.workspaces.get(record.workspace_id or "")
            if workspace is None or record.role is None:
                continue
            out.append({"invite_id": record.token_hash[:16], "workspace_name": workspace.name, "role": record.role,
                        "invited_by": record.invited_by, "expires_at": rfc3339(record.expires_ms)})
        return out

    def accept_pending(self, email: str, invite_id: str) -> Invitation:
        """The signed-in person joins from one of their pending invitations (`pending_for`)."""
        for record in self.ctx.people.invites_for(email, self.ctx.now_ms()):
            workspace = self.ctx.workspaces.get(record.workspace_id or "")
            if (hmac.compare_digest(record.token_hash[:16].encode(), str(invite_id or "").encode())
                    and workspace is not None and record.role is not None):
                return self._join(record.token_hash, Invitation(
                    record.email, record.role, workspace.workspace_id, workspace.name, record.invited_by,
                    rfc3339(record.expires_ms)))
        raise NotFound("No such invitation: it was used, withdrawn or has expired.")

    def _join(self, token_hash: str, invitation: Invitation) -> Invitation:
        email = invitation.email
        member = Member(workspace_id=invitation.workspace_id, email=email, role=invitation.role,
                        created_ms=self.ctx.now_ms(), added_by=invitation.invited_by)
        try:
            used = self.ctx.people.accept_invite(token_hash, member, self.ctx.now_ms())
        except MemberExists:
            raise ValidationFailed("You are already a member of this workspace.") from None
        if used is None:
            raise ValidationFailed(LINK_INVALID)
        joined = Actor(invitation.workspace_id, role=invitation.role, member=email, surface="dashboard")
        activity.record(self.ctx, joined, invitation.workspace_id, "member.join", email, {"role": invitation.role})
        return invitation

    # ---------------------------------------------------------------- roles and removal

    @requires("set_member_role")
    def set_role(self, who: Who, email: str, role: str) -> dict[str, Any]:
        workspace_id = _workspace_of(who)
        if role not in roles.ROLES:
            raise ValidationFailed.field("role", "must be owner, editor or viewer")
        try:
            member = self.ctx.people.set_role(workspace_id, (email or "").strip().lower(), role)
        except NotMember:
            raise NotFound("No such member in this workspace.") from None
        except LastOwner:
            raise ValidationFailed.field("role", LAST_OWNER) from None
        activity.record(self.ctx, who, workspace_id, "member.role", member.email, {"role": role})
        return {"email": member.email, "role": member.role}

    def remove(self, who: Who, email: str) -> dict[str, Any]:
        """An owner removes a member, or a member leaves (removes themself)."""
        workspace_id = _workspace_of(who)
        email = (email or "").strip().lower()
        if email != who.member:  # type: ignore[union-attr]
            access.authorize(who, "remove_member")
        try:
            # The removal mark (who, when) keeps single sign-on's auto-join from adding them back.
            removal = self.ctx.people.remove_member(workspace_id, email, self.ctx.now_ms(),
                                                    removed_by=activity.actor_of(who)[1])
        except NotMember:
            raise NotFound("No such member in this workspace.") from None
        except LastOwner:
            raise ValidationFailed.field("email", LAST_OWNER) from None
        from chalicelib.services.oauth import OAuthService

        OAuthService(self.ctx).revoke_grants_of(workspace_id, email)
        removed, keys = removal.member, len(removal.revoked_keys)
        activity.record(self.ctx, who, workspace_id, "member.remove", email,
                        {"role": removed.role, "keys_revoked": keys})
        return {"email": email, "role": removed.role, "keys_revoked": keys}

    # ---------------------------------------------------------------- the dev workspace

    def ensure_owner_account(self, workspace_id: str, email: str) -> None:
        """`make run`: the dev workspace has an owner who signs in by link (no password to know)."""
        import secrets

        from chalicelib.ports import UserExists
        from chalicelib.ports.records import User
        from argon2 import PasswordHasher

        same_workspace(Actor(workspace_id, role="owner", surface="cli"), workspace_id)
        if self.ctx.users.get(email) is None:
            now_ms = self.ctx.now_ms()
            try:
                unknowable = PasswordHasher().hash(secrets.token_urlsafe(32))  # signs in by link only
                self.ctx.users.create(User(email=email, password_hash=unknowable, workspace_id=workspace_id,
                                           role="owner", created_ms=now_ms, password_changed_ms=now_ms,
                                           email_verified_ms=now_ms))
            except UserExists:
                pass
        if self.ctx.people.get_member(workspace_id, email) is None:
            try:
                self.ctx.people.add_member(Member(workspace_id=workspace_id, email=email, role="owner",
                                                  created_ms=self.ctx.now_ms()))
            except MemberExists:
                pass
