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
seconds) only cleans up: the service checks `expires_ms` on every read.
"""
from __future__ import annotations

from typing import Optional

from chalicelib import config
from chalicelib.adapters.aws.keys import rate_key
from chalicelib.adapters.aws.keys import (
    access_key, client_key, code_key, grant_key, grants_index_pk, refresh_key,
)
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction, to_item
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.ports.errors import ClientCapReached
from chalicelib.ports.records import ClientCap

EXPIRY_GRACE_SECONDS = 3600


def _ttl(record: dict) -> dict:
    expires_ms = record.get("expires_ms")
    return {"expires_at": expires_ms // 1000 + EXPIRY_GRACE_SECONDS} if expires_ms else {}


def _strip(item: Optional[dict]) -> Optional[dict]:
    if item is None:
        return None
    return {k: v for k, v in item.items() if k not in ("PK", "SK", "GSI1PK", "GSI1SK", "expires_at")}


@storage_errors
class OAuthRepository:
    """chalicelib.ports.oauth.OAuthRepository on the single table."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    # clients
    def put_client(self, client: dict, cap: Optional[ClientCap] = None) -> None:
        item = {**client_key(client["client_id"]), **client, **_ttl(client)}
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

    def get_client(self, client_id: str) -> Optional[dict]:
        return _strip(self.table.get(client_key(client_id)))

    def keep_client(self, client_id: str) -> None:
        try:
            self.table.update(client_key(client_id), "REMOVE expires_ms, expires_at", "attribute_exists(PK)")
        except ConditionFailed:
            pass

    # codes
    def put_code(self, code: dict) -> None:
        self.table.put({**code_key(code["code_hash"]), **code, **_ttl(code)}, "attribute_not_exists(PK)")

    def consume_code(self, code_hash: str, now_ms: int) -> tuple[Optional[dict], bool]:
        tx = Transaction()
        tx.update(code_key(code_hash), "SET used_ms = :now",
                  "attribute_exists(PK) AND attribute_not_exists(used_ms)", values={":now": now_ms},
                  return_old=True)
        try:
            tx.commit()
        except ConditionFailed as exc:
            return _strip(exc.old_items[0]), False
        return _strip(self.table.get(code_key(code_hash))), True

    # grants and tokens
    def create_grant(self, grant: dict, access: dict, refresh: dict, code_hash: Optional[str]) -> None:
        tx = Transaction()
        tx.put({**grant_key(grant["grant_id"]), **grant, "GSI1PK": grants_index_pk(grant["workspace_id"]),
                "GSI1SK": f"{grant['created_ms']:015d}#{grant['grant_id']}"}, "attribute_not_exists(PK)")
        tx.put({**access_key(access["token_hash"]), **access, **_ttl(access)}, "attribute_not_exists(PK)")
        tx.put({**refresh_key(refresh["token_hash"]), **refresh, **_ttl(refresh)}, "attribute_not_exists(PK)")
        if code_hash:
            tx.update(code_key(code_hash), "SET grant_id = :g", "attribute_exists(PK)",
                      values={":g": grant["grant_id"]})
        tx.commit()

    def get_grant(self, grant_id: str) -> Optional[dict]:
        return _strip(self.table.get(grant_key(grant_id)))

    def list_grants(self, workspace_id: str) -> list[dict]:
        items = self.table.query_all("GSI1PK = :pk", {":pk": grants_index_pk(workspace_id)}, index="GSI1",
                                     forward=False)
        return [grant for i in items if (grant := _strip(i)) is not None]

    def revoke_grant(self, grant_id: str, now_ms: int) -> Optional[dict]:
        try:
            return _strip(self.table.update(grant_key(grant_id), "SET revoked_ms = :now",
                                            "attribute_exists(PK) AND attribute_not_exists(revoked_ms)",
                                            values={":now": now_ms}))
        except ConditionFailed:
            return self.get_grant(grant_id)

    def touch_grant(self, grant_id: str, now_ms: int) -> None:
        try:
            self.table.update(grant_key(grant_id), "SET last_used_ms = :now", "attribute_exists(PK)",
                              values={":now": now_ms})
        except ConditionFailed:
            pass

    def get_access(self, token_hash: str) -> tuple[Optional[dict], Optional[dict]]:
        token = self.table.get(access_key(token_hash))
        if token is None:
            return None, None
        return _strip(token), self.get_grant(token["grant_id"])

    def delete_access(self, token_hash: str) -> None:
        self.table.delete_keys([access_key(token_hash)])

    def get_refresh(self, token_hash: str) -> Optional[dict]:
        return _strip(self.table.get(refresh_key(token_hash)))

    def rotate_refresh(self, old_hash: str, now_ms: int, access: dict, refresh: dict) -> bool:
        tx = Transaction()
        tx.update(refresh_key(old_hash), "SET used_ms = :now",
                  "attribute_exists(PK) AND attribute_not_exists(used_ms)", values={":now": now_ms})
        tx.add({"ConditionCheck": {"TableName": config.table_name(), "Key": to_item(grant_key(access["grant_id"])),
                                   "ConditionExpression": "attribute_exists(PK) AND attribute_not_exists(revoked_ms)"}})
        tx.put({**access_key(access["token_hash"]), **access, **_ttl(access)}, "attribute_not_exists(PK)")
        tx.put({**refresh_key(refresh["token_hash"]), **refresh, **_ttl(refresh)}, "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed:
            return False
        return True

