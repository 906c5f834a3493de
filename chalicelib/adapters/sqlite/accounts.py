"""Dashboard accounts (by lowercased email; only a password hash is stored) and
sessions (by the SHA-256 of the session id)."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.records import DashboardSession, User, fields_of, from_fields
from chalicelib.ports.errors import UserExists, WriteRefused
from chalicelib.ports.repositories import UserFields

USER_COLUMNS = ("email", "password_hash", "workspace_id", "role", "created_ms", "password_changed_ms",
                "email_verified_ms")
SESSION_COLUMNS = ("session_hash", "email", "workspace_id", "created_ms", "expires_ms", "expires_at", "sso_domain")


class UserRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, email_lower: str) -> Optional[User]:
        row = self.db.one("SELECT * FROM users WHERE email = ?", (email_lower,))
        return from_fields(User, row) if row is not None else None

    def create(self, user: User) -> None:
        with self.db.write() as tx:
            if one(tx, "SELECT 1 AS x FROM users WHERE email = ?", (user.email,)):
                raise UserExists(user.email)
            values = fields_of(user)
            tx.execute(f"INSERT INTO users ({', '.join(USER_COLUMNS)}) VALUES ({', '.join('?' * len(USER_COLUMNS))})",
                       tuple(values[c] for c in USER_COLUMNS))

    def delete(self, email_lower: str) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM users WHERE email = ?", (email_lower,))

    def set_password(self, email_lower: str, expected_hash: str, new_hash: str, now_ms: int) -> bool:
        with self.db.write() as tx:
            updated = tx.execute("UPDATE users SET password_hash = ?, password_changed_ms = ? "
                                 "WHERE email = ? AND password_hash = ?",
                                 (new_hash, now_ms, email_lower, expected_hash))
        return updated.rowcount > 0

    def set_fields(self, email_lower: str, fields: UserFields) -> bool:
        """`email_verified_ms` and/or `workspace_id` (the person's default workspace)."""
        unknown = set(fields) - {"email_verified_ms", "workspace_id"}
        if unknown:
            raise ValueError(f"not user fields: {sorted(unknown)}")
        with self.db.write() as tx:
            assignments = ", ".join(f"{name} = ?" for name in fields)
            return tx.execute(f"UPDATE users SET {assignments} WHERE email = ?",  # noqa: S608 - names checked
                              (*fields.values(), email_lower)).rowcount > 0


class SessionRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, session_hash: str) -> Optional[DashboardSession]:
        row = self.db.one("SELECT * FROM sessions WHERE session_hash = ?", (session_hash,))
        return from_fields(DashboardSession, row) if row is not None else None

    def create(self, session: DashboardSession) -> None:
        with self.db.write() as tx:
            if one(tx, "SELECT 1 AS x FROM sessions WHERE session_hash = ?", (session.session_hash,)):
                raise WriteRefused("exists")
            if one(tx, "SELECT 1 AS x FROM users WHERE email = ?", (session.email,)) is None:
                raise WriteRefused("NoSuchUser")
            values = fields_of(session)
            tx.execute(f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(SESSION_COLUMNS))})",
                       tuple(values[c] for c in SESSION_COLUMNS))

    def delete(self, session_hash: str) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM sessions WHERE session_hash = ?", (session_hash,))

    def delete_for_user(self, email_lower: str, keep: str | None = None) -> int:
        with self.db.write() as tx:
            return tx.execute("DELETE FROM sessions WHERE email = ? AND session_hash != ?",
                              (email_lower, keep or "")).rowcount

    def set_workspace(self, session_hash: str, workspace_id: str) -> bool:
        """Switch a live session to another workspace (the service checked membership)."""
        with self.db.write() as tx:
            return tx.execute("UPDATE sessions SET workspace_id = ? WHERE session_hash = ?",
                              (workspace_id, session_hash)).rowcount > 0
