"""People on the single DynamoDB table (ports/people.py).

| Item | PK | SK | GSI1 |
|---|---|---|---|
| Member | `WS#<ws>` | `MEMBER#<email>` | `USER#<email>#WORKSPACES` / `<created_ms:015d>#<ws>` |
| Account token | `ACCT#<sha256(token)>` | `TOKEN` | invitations: `WS#<ws>#INVITES` / `<created_ms:015d>#<hash>` |
| Activity | `ACT#<ws>` | `<created_ms:015d>#<activity_id>` | |

The workspace item counts its owners (`owner_count`); demoting or removing an
owner is one transaction with the condition `owner_count > 1`, so two owners
demoting each other at once cannot leave none. Tokens are used once by a
conditional update. `expires_at` (TTL) only cleans up; every read checks expiry.
"""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.keys import (
    account_token_key, activity_pk, invites_index_pk, member_key, memberships_index_pk, user_sessions_index_pk,
    workspace_key,
)
from chalicelib.adapters.aws.table import (
    ConditionFailed, Table, Transaction, decode_cursor, encode_cursor,
)
from chalicelib.ports.people import LastOwner, MemberExists, NotMember
from chalicelib.ports.records import BadCursor
from chalicelib.adapters.aws.errors import storage_errors

MEMBER_FIELDS = ("workspace_id", "email", "role", "created_ms", "added_by")
INTERNAL = ("PK", "SK", "GSI1PK", "GSI1SK")


def _strip(item: Optional[dict], keep_expiry: bool = False) -> Optional[dict]:
    if item is None:
        return None
    return {k: v for k, v in item.items() if k not in INTERNAL and (keep_expiry or k != "expires_at")}


def _member_item(member: dict) -> dict:
    return {**member_key(member["workspace_id"], member["email"]),
            **{k: member[k] for k in MEMBER_FIELDS if member.get(k) is not None},
            "GSI1PK": memberships_index_pk(member["email"]),
            "GSI1SK": f"{member['created_ms']:015d}#{member['workspace_id']}"}


def activity_item(entry: dict) -> dict:
    """The item of an activity entry (also written inside a version's transaction)."""
    return {"PK": activity_pk(entry["workspace_id"]), "SK": f"{entry['created_ms']:015d}#{entry['activity_id']}",
            **entry}


@storage_errors
class PeopleRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    # ---------------------------------------------------------------- members

    def get_member(self, workspace_id: str, email: str) -> Optional[dict]:
        return _strip(self.table.get(member_key(workspace_id, email)))

    def list_members(self, workspace_id: str) -> list[dict]:
        items = self.table.query_all("PK = :pk AND begins_with(SK, :m)",
                                     {":pk": workspace_key(workspace_id)["PK"], ":m": "MEMBER#"}, consistent=True)
        return sorted((_strip(i) for i in items), key=lambda m: (m["created_ms"], m["email"]))  # type: ignore[misc]

    def list_memberships(self, email: str) -> list[dict]:
        items = self.table.query_all("GSI1PK = :pk", {":pk": memberships_index_pk(email)}, index="GSI1")
        return [_strip(i) for i in items]  # type: ignore[misc]

    def add_member(self, member: dict) -> None:
        tx = Transaction()
        self._add(tx, member)
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise MemberExists(member["email"]) from exc

    @staticmethod
    def _add(tx: Transaction, member: dict) -> None:
        tx.put(_member_item(member), "attribute_not_exists(PK)")
        if member["role"] == "owner":
            tx.update(workspace_key(member["workspace_id"]),
                      "SET owner_count = if_not_exists(owner_count, :zero) + :one", "attribute_exists(PK)",
                      values={":zero": 0, ":one": 1})

    def set_role(self, workspace_id: str, email: str, role: str) -> dict:
        current = self.get_member(workspace_id, email)
        if current is None:
            raise NotMember(email)
        if current["role"] == role:
            return current
        tx = Transaction()
        tx.update(member_key(workspace_id, email), "SET #r = :new", "attribute_exists(PK) AND #r = :old",
                  names={"#r": "role"}, values={":new": role, ":old": current["role"]})
        owner_index = self._count_owner(tx, workspace_id, current["role"], role)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(owner_index):
                raise LastOwner(workspace_id) from exc
            return self.set_role(workspace_id, email, role)  # the role moved meanwhile: judge again
        return {**current, "role": role}

    @staticmethod
    def _count_owner(tx: Transaction, workspace_id: str, old: Optional[str], new: Optional[str]) -> Optional[int]:
        if old == "owner" and new != "owner":
            return tx.update(workspace_key(workspace_id), "SET owner_count = owner_count - :one",
                             "owner_count > :one", values={":one": 1})
        if new == "owner" and old != "owner":
            return tx.update(workspace_key(workspace_id),
                             "SET owner_count = if_not_exists(owner_count, :zero) + :one", "attribute_exists(PK)",
                             values={":zero": 0, ":one": 1})
        return None

    def remove_member(self, workspace_id: str, email: str) -> dict:
        current = self.get_member(workspace_id, email)
        if current is None:
            raise NotMember(email)
        tx = Transaction()
        tx.delete(member_key(workspace_id, email), "attribute_exists(PK) AND #r = :old", names={"#r": "role"},
                  values={":old": current["role"]})
        owner_index = self._count_owner(tx, workspace_id, current["role"], None)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(owner_index):
                raise LastOwner(workspace_id) from exc
            return self.remove_member(workspace_id, email)
        sessions = self.table.query_all("GSI1PK = :pk", {":pk": user_sessions_index_pk(email)}, index="GSI1",
                                        projected=("workspace_id",))
        self.table.delete_keys([{"PK": s["PK"], "SK": s["SK"]} for s in sessions
                                if s.get("workspace_id") == workspace_id])
        return current

    # ---------------------------------------------------------------- tokens

    def put_token(self, token: dict) -> None:
        item = {**account_token_key(token["token_hash"]), **token}
        kind = token["kind"]
        if kind == "invite":
            item.update({"GSI1PK": invites_index_pk(token["workspace_id"]),
                         "GSI1SK": f"{token['created_ms']:015d}#{token['token_hash']}"})
        self.table.put(item, "attribute_not_exists(PK)")

    def get_token(self, token_hash: str) -> Optional[dict]:
        return _strip(self.table.get(account_token_key(token_hash)), keep_expiry=True)

    def use_token(self, token_hash: str, now_ms: int) -> Optional[dict]:
        try:
            return _strip(self.table.update(
                account_token_key(token_hash), "SET used_ms = :now",
                "attribute_exists(PK) AND attribute_not_exists(used_ms) AND expires_ms > :now",
                values={":now": now_ms}), keep_expiry=True)
        except ConditionFailed:
            return None

    def accept_invite(self, token_hash: str, member: dict, now_ms: int) -> Optional[dict]:
        tx = Transaction()
        tx.update(account_token_key(token_hash), "SET used_ms = :now",
                  "attribute_exists(PK) AND kind = :invite AND attribute_not_exists(used_ms) AND expires_ms > :now",
                  values={":now": now_ms, ":invite": "invite"})
        member_index = len(tx.actions)
        self._add(tx, member)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if not exc.failed(0) and exc.failed(member_index):
                raise MemberExists(member["email"]) from exc
            return None
        return self.get_token(token_hash)

    def list_invites(self, workspace_id: str, now_ms: int) -> list[dict]:
        items = self.table.query_all("GSI1PK = :pk", {":pk": invites_index_pk(workspace_id)}, index="GSI1",
                                     forward=False)
        return [_strip(i, keep_expiry=True) for i in items  # type: ignore[misc]
                if i.get("used_ms") is None and i["expires_ms"] > now_ms]

    def revoke_invites(self, workspace_id: str, email: str, now_ms: int) -> int:
        revoked = 0
        for invite in self.list_invites(workspace_id, now_ms):
            if invite["email"] == email and self.use_token(invite["token_hash"], now_ms) is not None:
                revoked += 1
        return revoked

    # ---------------------------------------------------------------- activity

    def add_activity(self, entry: dict) -> None:
        self.table.put(activity_item(entry), "attribute_not_exists(PK)")

    def activity_page(self, workspace_id: str, since_ms: int, limit: int, cursor: Optional[str]
                      ) -> tuple[list[dict], Optional[str]]:
        start = decode_cursor(cursor, ("PK", "SK"))
        if start is not None and start["PK"]["S"] != activity_pk(workspace_id):
            raise BadCursor("cursor belongs to another listing")
        items, last = self.table.query("PK = :pk AND SK >= :since",
                                       {":pk": activity_pk(workspace_id), ":since": f"{since_ms:015d}#"},
                                       limit=limit, start_key=start, forward=False)
        # A full page may be the last one: look ahead once so no empty page follows.
        if last is not None and len(items) == limit:
            more, _ = self.table.query("PK = :pk AND SK >= :since",
                                       {":pk": activity_pk(workspace_id), ":since": f"{since_ms:015d}#"},
                                       limit=1, start_key=last, forward=False)
            if not more:
                last = None
        return [_strip(i) for i in items], encode_cursor(last)  # type: ignore[misc]
