"""OAuth storage on the single DynamoDB table (see docs/architecture.md, key table).

| Item | PK | SK | GSI1 |
|---|---|---|---|
| OAuth client | `OAUTHCLIENT#<client_id, or sha256 of a metadata URL>` | `CLIENT` | |
| Authorization code | `OAUTHCODE#<sha256(code)>` | `CODE` | |
| Grant | `GRANT#<grant_id>` | `GRANT` | `WS#<ws>#GRANTS` / `<created_ms:015d>#<grant_id>` |
| Access token | `ATOKEN#<sha256(token)>` | `TOKEN` | |
| Refresh token | `RTOKEN#<sha256(token)>` | `TOKEN` | |

Single use of codes and refresh tokens are conditional updates
(`attribute_not_exists(used_ms)`), never read-modify-write. `expires_at` (TTL,
seconds) only cleans up: the service checks `expires_ms` on every read. Items come
back as the port's records (chalicelib/ports/records.py), keys left behind.
"""
from __future__ import annotations

from typing import Any, Optional, TypeVar

from chalicelib import config
from chalicelib.adapters.aws.keys import rate_key
from chalicelib.adapters.aws.keys import (
    access_key, client_key, code_key, grant_key, grants_index_pk, refresh_key,
)
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction, to_item
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.ports.errors import ClientCapReached
from chalicelib.ports.records import (
    AccessToken, AuthorizationCode, ClientCap, OAuthClient, OAuthGrant, RefreshToken, fields_of, from_fields,
)

EXPIRY_GRACE_SECONDS = 3600
LISTS = ("redirect_uris", "scopes", "grant_types")

R = TypeVar("R", OAuthClient, AuthorizationCode, OAuthGrant, AccessToken, RefreshToken)


def _item(key: dict, record: Any) -> dict:
    """The item of a record: its key, its fields (lists as lists; `to_item` leaves None
    out) and `expires_at` (TTL, seconds) for an expiring one."""
    fields: dict[str, Any] = {k: (list(v) if k in LISTS and v is not None else v)
                              for k, v in fields_of(record).items()}
    expires_ms = fields.get("expires_ms")
    return {**key, **fields, **({"expires_at": expires_ms // 1000 + EXPIRY_GRACE_SECONDS} if expires_ms else {})}


def _record(cls: type[R], item: Optional[dict]) -> Optional[R]:
    """The record of an item: keys, index keys and `expires_at` are left behind, lists
    become tuples."""
    if item is None:
        return None
    return from_fields(cls, {k: (tuple(v) if k in LISTS and isinstance(v, list) else v)
                             for k, v in item.items() if v is not None})


@storage_errors
class OAuthRepository:
    """chalicelib.ports.oauth.OAuthRepository on the single table."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    # clients
    def put_client(self, client: OAuthClient, cap: Optional[ClientCap] = None) -> None:
        item = _item(client_key(client.client_id), client)
        if cap is None:
            self.table.put(item)
            return
        # The window's counter and the client in one transaction: never a client past the cap.
        tx = Transaction()
        tx.update(rate_key(f"oauth-clients#{cap.window}"), "ADD hits :one SET expires_at = :exp",
                  "attribute_not_exists(hits) OR hits < :limit",
                  values={":one": 1, ":exp": cap.expires_at, ":limit": cap.limit})
        tx.put(item)
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise ClientCapReached() from exc

    def get_client(self, client_id: str) -> Optional[OAuthClient]:
        return _record(OAuthClient, self.table.get(client_key(client_id)))

    def keep_client(self, client_id: str) -> None:
        try:
            self.table.update(client_key(client_id), "REMOVE expires_ms, expires_at", "attribute_exists(PK)")
        except ConditionFailed:
            pass

    # codes
    def put_code(self, code: AuthorizationCode) -> None:
        self.table.put(_item(code_key(code.code_hash), code), "attribute_not_exists(PK)")

    def consume_code(self, code_hash: str, now_ms: int) -> tuple[Optional[AuthorizationCode], bool]:
        tx = Transaction()
        tx.update(code_key(code_hash), "SET used_ms = :now",
                  "attribute_exists(PK) AND attribute_not_exists(used_ms)", values={":now": now_ms},
                  return_old=True)
        try:
            tx.commit()
        except ConditionFailed as exc:
            return _record(AuthorizationCode, exc.old_items[0]), False
        return _record(AuthorizationCode, self.table.get(code_key(code_hash))), True

    # grants and tokens
    def create_grant(self, grant: OAuthGrant, access: AccessToken, refresh: RefreshToken,
                     code_hash: Optional[str]) -> None:
        tx = Transaction()
        tx.put({**_item(grant_key(grant.grant_id), grant), "GSI1PK": grants_index_pk(grant.workspace_id),
                "GSI1SK": f"{grant.created_ms:015d}#{grant.grant_id}"}, "attribute_not_exists(PK)")
        tx.put(_item(access_key(access.token_hash), access), "attribute_not_exists(PK)")
        tx.put(_item(refresh_key(refresh.token_hash), refresh), "attribute_not_exists(PK)")
        if code_hash:
            tx.update(code_key(code_hash), "SET grant_id = :g", "attribute_exists(PK)",
                      values={":g": grant.grant_id})
        tx.commit()

    def get_grant(self, grant_id: str) -> Optional[OAuthGrant]:
        return _record(OAuthGrant, self.table.get(grant_key(grant_id)))

    def list_grants(self, workspace_id: str) -> list[OAuthGrant]:
        items = self.table.query_all("GSI1PK = :pk", {":pk": grants_index_pk(workspace_id)}, index="GSI1",
                                     forward=False)
        return [grant for i in items if (grant := _record(OAuthGrant, i)) is not None]

    def revoke_grant(self, grant_id: str, now_ms: int) -> Optional[OAuthGrant]:
        try:
            return _record(OAuthGrant, self.table.update(
                grant_key(grant_id), "SET revoked_ms = :now",
                "attribute_exists(PK) AND attribute_not_exists(revoked_ms)", values={":now": now_ms}))
        except ConditionFailed:
            return self.get_grant(grant_id)

    def touch_grant(self, grant_id: str, now_ms: int) -> None:
        try:
            self.table.update(grant_key(grant_id), "SET last_used_ms = :now", "attribute_exists(PK)",
                              values={":now": now_ms})
        except ConditionFailed:
            pass

    def get_access(self, token_hash: str) -> tuple[Optional[AccessToken], Optional[OAuthGrant]]:
        token = _record(AccessToken, self.table.get(access_key(token_hash)))
        if token is None:
            return None, None
        return token, self.get_grant(token.grant_id)

    def delete_access(self, token_hash: str) -> None:
        self.table.delete_keys([access_key(token_hash)])

    def get_refresh(self, token_hash: str) -> Optional[RefreshToken]:
        return _record(RefreshToken, self.table.get(refresh_key(token_hash)))

    def rotate_refresh(self, old_hash: str, now_ms: int, access: AccessToken, refresh: RefreshToken) -> bool:
        tx = Transaction()
        tx.update(refresh_key(old_hash), "SET used_ms = :now",
                  "attribute_exists(PK) AND attribute_not_exists(used_ms)", values={":now": now_ms})
        tx.add({"ConditionCheck": {"TableName": config.table_name(), "Key": to_item(grant_key(access.grant_id)),
                                   "ConditionExpression": "attribute_exists(PK) AND attribute_not_exists(revoked_ms)"}})
        tx.put(_item(access_key(access.token_hash), access), "attribute_not_exists(PK)")
        tx.put(_item(refresh_key(refresh.token_hash), refresh), "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed:
            return False
        return True
