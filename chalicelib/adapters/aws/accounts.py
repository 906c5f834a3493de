"""Dashboard accounts (`USER#<email>`) and sessions (`SESSION#<sha256>`, listed per
user through GSI1)."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.keys import session_key, user_key, user_sessions_index_pk
from chalicelib.adapters.aws.table import ConditionFailed, Table
from chalicelib.ports.records import DashboardSession, User, fields_of, from_fields
from chalicelib.ports.errors import UserExists
from chalicelib.ports.repositories import UserFields
from chalicelib.adapters.aws.errors import storage_errors


@storage_errors
class UserRepository:
    """Dashboard people. One item per email (lowercased); only a password hash is stored."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, email_lower: str) -> Optional[User]:
        item = self.table.get(user_key(email_lower))
        return from_fields(User, item) if item is not None else None

    def create(self, user: User) -> None:
        try:
            self.table.put({**user_key(user.email), **fields_of(user)}, "attribute_not_exists(PK)")
        except ConditionFailed as exc:
            raise UserExists(user.email) from exc

    def delete(self, email_lower: str) -> None:
        self.table.delete(user_key(email_lower))

    def set_password(self, email_lower: str, expected_hash: str, new_hash: str, now_ms: int) -> bool:
        """Replace the hash only if it is still the one that was verified (no lost update)."""
        try:
            self.table.update(user_key(email_lower), "SET password_hash = :new, password_changed_ms = :now",
                              "attribute_exists(PK) AND password_hash = :old",
                              values={":new": new_hash, ":old": expected_hash, ":now": now_ms})
        except ConditionFailed:
            return False
        return True

    def set_fields(self, email_lower: str, fields: UserFields) -> bool:
        """`email_verified_ms` and/or `workspace_id` (the person's default workspace)."""
        unknown = set(fields) - {"email_verified_ms", "workspace_id"}
        if unknown:
            raise ValueError(f"not user fields: {sorted(unknown)}")
        names = {f"#f{i}": k for i, k in enumerate(fields)}
        values = {f":f{i}": v for i, v in enumerate(fields.values())}
        try:
            self.table.update(user_key(email_lower), "SET " + ", ".join(f"#f{i} = :f{i}" for i in range(len(fields))),
                              "attribute_exists(PK)", names=names, values=values)
        except ConditionFailed:
            return False
        return True


@storage_errors
class SessionRepository:
    """Dashboard sessions, keyed by the SHA-256 of the session id (the id itself is never stored).
    `expires_ms` is checked on every read; `expires_at` (TTL) is only for cleanup."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, session_hash: str) -> Optional[DashboardSession]:
        item = self.table.get(session_key(session_hash))
        return from_fields(DashboardSession, item) if item is not None else None

    def create(self, session: DashboardSession) -> None:
        self.table.put({**session_key(session.session_hash), **fields_of(session),
                        "GSI1PK": user_sessions_index_pk(session.email),
                        "GSI1SK": f"{session.created_ms:015d}#{session.session_hash[:16]}"},
                       "attribute_not_exists(PK)")

    def delete(self, session_hash: str) -> None:
        self.table.delete(session_key(session_hash))

    def delete_for_user(self, email_lower: str, keep: Optional[str] = None) -> int:
        items = self.table.query_all("GSI1PK = :pk", {":pk": user_sessions_index_pk(email_lower)}, index="GSI1",
                                     projected=())
        kept = {session_key(keep)["PK"]} if keep else set()
        doomed = [{"PK": i["PK"], "SK": i["SK"]} for i in items if i["PK"] not in kept]
        self.table.delete_keys(doomed)
        return len(doomed)

    def set_workspace(self, session_hash: str, workspace_id: str) -> bool:
        """Switch a live session to another workspace (the service checked membership)."""
        try:
            self.table.update(session_key(session_hash), "SET workspace_id = :ws", "attribute_exists(PK)",
                              values={":ws": workspace_id})
        except ConditionFailed:
            return False
        return True
