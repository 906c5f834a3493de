"""OAuth storage in SQLite (chalicelib.ports.oauth.OAuthRepository).

Tables oauth_clients, oauth_codes, oauth_grants, oauth_access_tokens and
oauth_refresh_tokens (db.py, migration 1 -> 2). Codes and tokens are keyed by their
SHA-256 only. Single use is a conditional `UPDATE … WHERE used_ms IS NULL` inside
`BEGIN IMMEDIATE`, never a read-modify-write: of racing exchanges exactly one
changes a row. Lists (scopes, redirect URIs, grant types) are JSON text. Rows come
back as the port's records (chalicelib/ports/records.py).
"""
from __future__ import annotations

import json
from typing import Any, Optional, TypeVar

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.errors import ClientCapReached
from chalicelib.ports.records import (
    AccessToken, AuthorizationCode, ClientCap, OAuthClient, OAuthGrant, RefreshToken, fields_of, from_fields,
)

CLIENT_CAP_SCOPE = "oauth-clients"  # the cap's window counters (in view_limits, like every window counter)

CLIENT_COLUMNS = ("client_id", "kind", "client_name", "redirect_uris", "scopes", "grant_types", "client_uri",
                  "logo_uri", "created_ms", "expires_ms")
CODE_COLUMNS = ("code_hash", "client_id", "client_name", "redirect_uri", "code_challenge", "resource", "scopes",
                "workspace_id", "user", "expires_ms")
GRANT_COLUMNS = ("grant_id", "workspace_id", "user", "client_id", "client_name", "scopes", "resource",
                 "created_ms")
ACCESS_COLUMNS = ("token_hash", "grant_id", "workspace_id", "client_id", "scopes", "audience", "expires_ms")
REFRESH_COLUMNS = ("token_hash", "grant_id", "client_id", "created_ms", "expires_ms")
LIST_COLUMNS = ("redirect_uris", "scopes", "grant_types")
STALE_MS = 24 * 3600 * 1000  # expired codes and unused clients are deleted this long after expiry

R = TypeVar("R", OAuthClient, AuthorizationCode, OAuthGrant, AccessToken, RefreshToken)


def _insert(table: str, columns: tuple[str, ...], record: Any, replace: bool = False) -> tuple[str, tuple]:
    """The INSERT of a record's `columns` (lists as JSON text)."""
    values = fields_of(record)
    row = tuple(json.dumps(list(values[c])) if c in LIST_COLUMNS and values[c] is not None
                else values[c] for c in columns)
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    names = ", ".join(f'"{c}"' for c in columns)
    return f"{verb} INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})", row


def _record(cls: type[R], row: Optional[dict]) -> Optional[R]:
    """The record of a row: JSON lists become tuples, NULL leaves a field at its default."""
    if row is None:
        return None
    return from_fields(cls, {k: (tuple(json.loads(v)) if k in LIST_COLUMNS and isinstance(v, str) else v)
                             for k, v in row.items() if v is not None})


class OAuthRepository:
    def __init__(self, db: Database):
        self.db = db

    # clients
    def put_client(self, client: OAuthClient, cap: Optional[ClientCap] = None) -> None:
        with self.db.write() as tx:
            if cap is not None:
                counted = one(tx, "SELECT admitted FROM view_limits WHERE scope = ? AND window_no = ?",
                              (CLIENT_CAP_SCOPE, cap.window))
                if counted is not None and counted["admitted"] >= cap.limit:
                    raise ClientCapReached()
                tx.execute("DELETE FROM view_limits WHERE scope = ? AND window_no < ?",
                           (CLIENT_CAP_SCOPE, cap.window - 1))
                tx.execute("INSERT INTO view_limits (scope, window_no, admitted, expires_at) VALUES (?, ?, 1, ?) "
                           "ON CONFLICT (scope, window_no) DO UPDATE SET admitted = admitted + 1",
                           (CLIENT_CAP_SCOPE, cap.window, cap.expires_at))
            if client.created_ms:
                tx.execute("DELETE FROM oauth_clients WHERE expires_ms IS NOT NULL AND expires_ms < ?",
                           (client.created_ms - STALE_MS,))
            tx.execute(*_insert("oauth_clients", CLIENT_COLUMNS, client, replace=True))

    def get_client(self, client_id: str) -> Optional[OAuthClient]:
        return _record(OAuthClient, self.db.one("SELECT * FROM oauth_clients WHERE client_id = ?", (client_id,)))

    def keep_client(self, client_id: str) -> None:
        with self.db.write() as tx:
            tx.execute("UPDATE oauth_clients SET expires_ms = NULL WHERE client_id = ?", (client_id,))

    # codes
    def put_code(self, code: AuthorizationCode) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM oauth_codes WHERE expires_ms < ?", (code.expires_ms - STALE_MS,))
            tx.execute(*_insert("oauth_codes", CODE_COLUMNS, code))

    def consume_code(self, code_hash: str, now_ms: int) -> tuple[Optional[AuthorizationCode], bool]:
        with self.db.write() as tx:
            changed = tx.execute("UPDATE oauth_codes SET used_ms = ? WHERE code_hash = ? AND used_ms IS NULL",
                                 (now_ms, code_hash)).rowcount == 1
            record = _record(AuthorizationCode, one(tx, "SELECT * FROM oauth_codes WHERE code_hash = ?",
                                                    (code_hash,)))
        return record, changed

    # grants and tokens
    def create_grant(self, grant: OAuthGrant, access: AccessToken, refresh: RefreshToken,
                     code_hash: Optional[str]) -> None:
        with self.db.write() as tx:
            tx.execute(*_insert("oauth_grants", GRANT_COLUMNS, grant))
            tx.execute(*_insert("oauth_access_tokens", ACCESS_COLUMNS, access))
            tx.execute(*_insert("oauth_refresh_tokens", REFRESH_COLUMNS, refresh))
            if code_hash:
                tx.execute("UPDATE oauth_codes SET grant_id = ? WHERE code_hash = ?", (grant.grant_id, code_hash))

    def get_grant(self, grant_id: str) -> Optional[OAuthGrant]:
        return _record(OAuthGrant, self.db.one("SELECT * FROM oauth_grants WHERE grant_id = ?", (grant_id,)))

    def list_grants(self, workspace_id: str) -> list[OAuthGrant]:
        rows = self.db.all("SELECT * FROM oauth_grants WHERE workspace_id = ? ORDER BY created_ms DESC, grant_id DESC",
                           (workspace_id,))
        return [grant for r in rows if (grant := _record(OAuthGrant, r)) is not None]

    def revoke_grant(self, grant_id: str, now_ms: int) -> Optional[OAuthGrant]:
        with self.db.write() as tx:
            tx.execute("UPDATE oauth_grants SET revoked_ms = ? WHERE grant_id = ? AND revoked_ms IS NULL",
                       (now_ms, grant_id))
            return _record(OAuthGrant, one(tx, "SELECT * FROM oauth_grants WHERE grant_id = ?", (grant_id,)))

    def touch_grant(self, grant_id: str, now_ms: int) -> None:
        with self.db.write() as tx:
            tx.execute("UPDATE oauth_grants SET last_used_ms = ? WHERE grant_id = ?", (now_ms, grant_id))

    def get_access(self, token_hash: str) -> tuple[Optional[AccessToken], Optional[OAuthGrant]]:
        with self.db.snapshot() as conn:
            token = _record(AccessToken, one(conn, "SELECT * FROM oauth_access_tokens WHERE token_hash = ?",
                                             (token_hash,)))
            grant = _record(OAuthGrant, one(conn, "SELECT * FROM oauth_grants WHERE grant_id = ?",
                                            (token.grant_id,))) if token else None
        return token, grant

    def delete_access(self, token_hash: str) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM oauth_access_tokens WHERE token_hash = ?", (token_hash,))

    def get_refresh(self, token_hash: str) -> Optional[RefreshToken]:
        return _record(RefreshToken, self.db.one("SELECT * FROM oauth_refresh_tokens WHERE token_hash = ?", (token_hash,)))

    def rotate_refresh(self, old_hash: str, now_ms: int, access: AccessToken, refresh: RefreshToken) -> bool:
        with self.db.write() as tx:
            if one(tx, "SELECT 1 AS x FROM oauth_grants WHERE grant_id = ? AND revoked_ms IS NULL",
                   (access.grant_id,)) is None:
                return False
            used = tx.execute("UPDATE oauth_refresh_tokens SET used_ms = ? WHERE token_hash = ? AND used_ms IS NULL",
                              (now_ms, old_hash))
            if not used.rowcount:
                return False
            tx.execute(*_insert("oauth_access_tokens", ACCESS_COLUMNS, access))
            tx.execute(*_insert("oauth_refresh_tokens", REFRESH_COLUMNS, refresh))
            # housekeeping: this grant's tokens that can never be accepted again
            tx.execute("DELETE FROM oauth_access_tokens WHERE grant_id = ? AND expires_ms < ?",
                       (access.grant_id, now_ms))
            tx.execute("DELETE FROM oauth_refresh_tokens WHERE grant_id = ? AND expires_ms < ?",
                       (access.grant_id, now_ms))
        return True

