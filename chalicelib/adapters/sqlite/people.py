"""People on SQLite: members, one-time account tokens, the activity log
(ports/people.py). Every change is one `BEGIN IMMEDIATE` transaction, so the
last-owner rule and single use of tokens hold under concurrency."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.sqlite import cursors
from chalicelib.adapters.sqlite.activity import insert_activity
from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.people import LastOwner, MemberExists, NotMember, Removed
from chalicelib.ports.records import (
    AccountToken, ActivityEntry, InvitationIndexing, Member, MemberRemoval, RemovalMark, fields_of, from_fields,
)

TOKEN_COLUMNS = ("token_hash", "kind", "email", "workspace_id", "role", "created_ms", "expires_ms", "used_ms",
                 "password_changed_ms", "invited_by", "expires_at")


def _owners(tx, workspace_id: str) -> int:
    return one(tx, "SELECT COUNT(*) AS n FROM members WHERE workspace_id = ? AND role = 'owner'",  # type: ignore[index]
               (workspace_id,))["n"]


def _member(row: dict) -> Member:
    return from_fields(Member, row)


def _token(row: Optional[dict]) -> Optional[AccountToken]:
    return from_fields(AccountToken, row) if row is not None else None


class PeopleRepository:
    def __init__(self, db: Database):
        self.db = db

    # ---------------------------------------------------------------- members

    def get_member(self, workspace_id: str, email: str) -> Optional[Member]:
        row = self.db.one("SELECT * FROM members WHERE workspace_id = ? AND email = ?", (workspace_id, email))
        return _member(row) if row is not None else None

    def list_members(self, workspace_id: str) -> list[Member]:
        return [_member(r) for r in self.db.all(
            "SELECT * FROM members WHERE workspace_id = ? ORDER BY created_ms, email", (workspace_id,))]

    def list_memberships(self, email: str) -> list[Member]:
        return [_member(r) for r in self.db.all(
            "SELECT * FROM members WHERE email = ? ORDER BY created_ms, workspace_id", (email,))]

    def add_member(self, member: Member, unless_removed: bool = False) -> None:
        with self.db.write() as tx:
            if unless_removed and one(tx, "SELECT 1 AS x FROM member_removals WHERE workspace_id = ? AND email = ?",
                                      (member.workspace_id, member.email)):
                raise Removed(member.email)
            self._insert_member(tx, member)

    def get_removal(self, workspace_id: str, email: str) -> Optional[RemovalMark]:
        row = self.db.one("SELECT * FROM member_removals WHERE workspace_id = ? AND email = ?", (workspace_id, email))
        return from_fields(RemovalMark, row) if row is not None else None

    @staticmethod
    def _insert_member(tx, member: Member) -> None:
        """Add the member and clear their removal mark (a deliberate add: the caller's transaction)."""
        if one(tx, "SELECT 1 AS x FROM members WHERE workspace_id = ? AND email = ?",
               (member.workspace_id, member.email)):
            raise MemberExists(member.email)
        tx.execute("DELETE FROM member_removals WHERE workspace_id = ? AND email = ?",
                   (member.workspace_id, member.email))
        tx.execute("INSERT INTO members (workspace_id, email, role, created_ms, added_by) VALUES (?, ?, ?, ?, ?)",
                   (member.workspace_id, member.email, member.role, member.created_ms, member.added_by))

    def set_role(self, workspace_id: str, email: str, role: str) -> Member:
        with self.db.write() as tx:
            current = one(tx, "SELECT * FROM members WHERE workspace_id = ? AND email = ?", (workspace_id, email))
            if current is None:
                raise NotMember(email)
            if current["role"] == "owner" and role != "owner" and _owners(tx, workspace_id) <= 1:
                raise LastOwner(workspace_id)
            tx.execute("UPDATE members SET role = ? WHERE workspace_id = ? AND email = ?", (role, workspace_id, email))
            return _member({**current, "role": role})

    def remove_member(self, workspace_id: str, email: str, now_ms: int, removed_by: str = "") -> MemberRemoval:
        """One transaction: the member, their sessions there, their keys (revoked, and
        freed from the workspace's key count) and the removal mark."""
        with self.db.write() as tx:
            current = one(tx, "SELECT * FROM members WHERE workspace_id = ? AND email = ?", (workspace_id, email))
            if current is None:
                raise NotMember(email)
            if current["role"] == "owner" and _owners(tx, workspace_id) <= 1:
                raise LastOwner(workspace_id)
            tx.execute("DELETE FROM members WHERE workspace_id = ? AND email = ?", (workspace_id, email))
            tx.execute("DELETE FROM sessions WHERE email = ? AND workspace_id = ?", (email, workspace_id))
            tx.execute("INSERT OR REPLACE INTO member_removals (workspace_id, email, removed_by, removed_ms) "
                       "VALUES (?, ?, ?, ?)", (workspace_id, email, removed_by, now_ms))
            keys = tuple(row[0] for row in tx.execute(
                "SELECT key_id FROM api_keys WHERE workspace_id = ? AND created_by = ? AND revoked_at IS NULL "
                "ORDER BY created_ms, key_id", (workspace_id, email)))
            if keys:
                tx.execute("UPDATE api_keys SET revoked_at = ? WHERE workspace_id = ? AND created_by = ? "
                           "AND revoked_at IS NULL", (now_ms, workspace_id, email))
                tx.execute("UPDATE workspaces SET key_count = MAX(0, key_count - ?) WHERE id = ?",
                           (len(keys), workspace_id))
            return MemberRemoval(_member(current), keys)

    # ---------------------------------------------------------------- tokens

    def put_token(self, token: AccountToken) -> None:
        values = fields_of(token)
        with self.db.write() as tx:
            tx.execute(f"INSERT INTO account_tokens ({', '.join(TOKEN_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(TOKEN_COLUMNS))})",
                       tuple(values[c] for c in TOKEN_COLUMNS))

    def get_token(self, token_hash: str) -> Optional[AccountToken]:
        return _token(self.db.one("SELECT * FROM account_tokens WHERE token_hash = ?", (token_hash,)))

    def use_token(self, token_hash: str, now_ms: int) -> Optional[AccountToken]:
        with self.db.write() as tx:
            return self._use(tx, token_hash, now_ms)

    @staticmethod
    def _use(tx, token_hash: str, now_ms: int) -> Optional[AccountToken]:
        used = tx.execute("UPDATE account_tokens SET used_ms = ? WHERE token_hash = ? AND used_ms IS NULL "
                          "AND expires_ms > ?", (now_ms, token_hash, now_ms)).rowcount
        if not used:
            return None
        return _token(one(tx, "SELECT * FROM account_tokens WHERE token_hash = ?", (token_hash,)))

    def accept_invite(self, token_hash: str, member: Member, now_ms: int) -> Optional[AccountToken]:
        with self.db.write() as tx:
            invite = one(tx, "SELECT * FROM account_tokens WHERE token_hash = ? AND kind = 'invite'", (token_hash,))
            if invite is None or invite.get("used_ms") is not None or invite["expires_ms"] <= now_ms:
                return None
            self._insert_member(tx, member)  # MemberExists rolls the whole step back
            return self._use(tx, token_hash, now_ms)

    def list_invites(self, workspace_id: str, now_ms: int) -> list[AccountToken]:
        return [from_fields(AccountToken, r) for r in self.db.all(
            "SELECT * FROM account_tokens WHERE workspace_id = ? AND kind = 'invite' "
            "AND used_ms IS NULL AND expires_ms > ? ORDER BY created_ms DESC", (workspace_id, now_ms))]

    def invites_for(self, email: str, now_ms: int) -> list[AccountToken]:
        # index account_tokens_by_invitee (migration 19): a search by email, already newest first
        return [from_fields(AccountToken, r) for r in self.db.all(
            "SELECT * FROM account_tokens WHERE email = ? AND kind = 'invite' "
            "AND used_ms IS NULL AND expires_ms > ? ORDER BY created_ms DESC", (email, now_ms))]

    def index_invitations(self, now_ms: int) -> InvitationIndexing:
        """Nothing to add: invitations are found by their email column (index since migration 19)."""
        return InvitationIndexing(found=0, indexed=0, left_alone=0, changed_meanwhile=0)

    def revoke_invites(self, workspace_id: str, email: str, now_ms: int) -> int:
        with self.db.write() as tx:
            return tx.execute("UPDATE account_tokens SET used_ms = ? WHERE workspace_id = ? AND email = ? "
                              "AND kind = 'invite' AND used_ms IS NULL", (now_ms, workspace_id, email)).rowcount

    # ---------------------------------------------------------------- activity

    def add_activity(self, entry: ActivityEntry) -> None:
        with self.db.write() as tx:
            insert_activity(tx, entry)

    def activity_page(self, workspace_id: str, since_ms: int, limit: int, cursor: Optional[str]
                      ) -> tuple[list[ActivityEntry], Optional[str]]:
        listing = f"activity:{workspace_id}"
        position = cursors.decode(cursor, listing, (int, str))
        sql, params = "SELECT * FROM activity WHERE workspace_id = ? AND created_ms >= ?", [workspace_id, since_ms]
        if position is not None:
            sql += " AND (created_ms < ? OR (created_ms = ? AND activity_id < ?))"
            params += [position[0], position[0], position[1]]
        rows = self.db.all(sql + " ORDER BY created_ms DESC, activity_id DESC LIMIT ?", tuple(params) + (limit + 1,))
        entries = [from_fields(ActivityEntry, r) for r in rows[:limit]]
        if len(rows) <= limit:
            return entries, None
        return entries, cursors.encode(listing, [entries[-1].created_ms, entries[-1].activity_id])
