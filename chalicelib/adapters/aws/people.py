"""People on the single DynamoDB table (ports/people.py).

| Item | PK | SK | GSI1 |
|---|---|---|---|
| Member | `WS#<ws>` | `MEMBER#<email>` | `USER#<email>#WORKSPACES` / `<created_ms:015d>#<ws>` |
| Account token | `ACCT#<sha256(token)>` | `TOKEN` | invitations: `WS#<ws>#INVITES` / `<created_ms:015d>#<hash>`; GSI2 `INVITEE#<email>` / the same |
| Activity | `ACT#<ws>` | `<created_ms:015d>#<activity_id>` | |
| Removal mark | `REMOVED#<ws>` | `MEMBER#<email>` | |

The workspace item counts its owners (`owner_count`); demoting or removing an
owner is one transaction with the condition `owner_count > 1`, so two owners
demoting each other at once cannot leave none. Tokens are used once by a
conditional update. `expires_at` (TTL) only cleans up; every read checks expiry.
A removal puts the removal mark in its transaction; a deliberate add (and an accepted
invitation) deletes it in theirs; single sign-on's add is conditional on its absence.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from chalicelib import config
from chalicelib.adapters.aws.keys import (
    account_token_key, activity_pk, api_key_key, invites_index_pk, invitee_index_pk, keys_index_pk, member_key,
    memberships_index_pk, removal_key, user_sessions_index_pk, workspace_key, write_shard_keys,
)
from chalicelib.adapters.aws.table import (
    ConditionFailed, Table, Transaction, decode_cursor, encode_cursor, to_item, with_expressions,
)
from chalicelib.ports.people import LastOwner, MemberExists, NotMember, Removed
from chalicelib.ports.records import (
    AccountToken, ActivityEntry, InvitationIndexing, Member, MemberRemoval, RemovalMark, fields_of, from_fields,
)
from chalicelib.ports.errors import BadCursor
from chalicelib.adapters.aws.activity import activity_item
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.adapters.aws.workspaces import ApiKeyRepository

# A transaction holds 100 actions: the member, its removal mark, the workspace, and 9 per key
# (its item and its 8 write-log shards) leave room for 10 keys in the removal's own transaction.
KEYS_IN_REMOVAL = 10

def _member(item: dict) -> Member:
    return from_fields(Member, item)


def _token(item: Optional[dict]) -> Optional[AccountToken]:
    return from_fields(AccountToken, item) if item is not None else None


def _member_item(member: Member) -> dict:
    return {**member_key(member.workspace_id, member.email), **fields_of(member),
            "GSI1PK": memberships_index_pk(member.email),
            "GSI1SK": f"{member.created_ms:015d}#{member.workspace_id}"}


@storage_errors
class PeopleRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    # ---------------------------------------------------------------- members

    def get_member(self, workspace_id: str, email: str) -> Optional[Member]:
        item = self.table.get(member_key(workspace_id, email))
        return _member(item) if item is not None else None

    def list_members(self, workspace_id: str) -> list[Member]:
        items = self.table.query_all("PK = :pk AND begins_with(SK, :m)",
                                     {":pk": workspace_key(workspace_id)["PK"], ":m": "MEMBER#"}, consistent=True)
        return sorted((_member(i) for i in items), key=lambda m: (m.created_ms, m.email))

    def list_memberships(self, email: str) -> list[Member]:
        items = self.table.query_all("GSI1PK = :pk", {":pk": memberships_index_pk(email)}, index="GSI1")
        return [_member(i) for i in items]

    def add_member(self, member: Member, unless_removed: bool = False) -> None:
        tx = Transaction()
        self._add(tx, member, unless_removed)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if unless_removed and exc.failed(len(tx.actions) - 1):
                raise Removed(member.email) from exc
            raise MemberExists(member.email) from exc

    def get_removal(self, workspace_id: str, email: str) -> Optional[RemovalMark]:
        item = self.table.get(removal_key(workspace_id, email))
        return from_fields(RemovalMark, item) if item is not None else None

    @staticmethod
    def _add(tx: Transaction, member: Member, unless_removed: bool = False) -> None:
        """The member's put (first), the owner count, and last the removal mark: deleted
        (a deliberate add), or checked absent (`unless_removed`)."""
        tx.put(_member_item(member), "attribute_not_exists(PK)")
        if member.role == "owner":
            tx.update(workspace_key(member.workspace_id),
                      "SET owner_count = if_not_exists(owner_count, :zero) + :one", "attribute_exists(PK)",
                      values={":zero": 0, ":one": 1})
        mark = removal_key(member.workspace_id, member.email)
        if unless_removed:
            tx.add({"ConditionCheck": with_expressions({"TableName": config.table_name(), "Key": to_item(mark)},
                                                       "attribute_not_exists(PK)")})
        else:
            tx.delete(mark)

    def set_role(self, workspace_id: str, email: str, role: str) -> Member:
        current = self.get_member(workspace_id, email)
        if current is None:
            raise NotMember(email)
        if current.role == role:
            return current
        tx = Transaction()
        tx.update(member_key(workspace_id, email), "SET #r = :new", "attribute_exists(PK) AND #r = :old",
                  names={"#r": "role"}, values={":new": role, ":old": current.role})
        owner_index = self._count_owner(tx, workspace_id, current.role, role)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(owner_index):
                raise LastOwner(workspace_id) from exc
            return self.set_role(workspace_id, email, role)  # the role moved meanwhile: judge again
        return replace(current, role=role)

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

    def remove_member(self, workspace_id: str, email: str, now_ms: int, removed_by: str = "") -> MemberRemoval:
        """One transaction: the member, the removal mark, the workspace's counts and (up to
        KEYS_IN_REMOVAL of) the keys the member made, each revoked on its item and its write-log shards
        (so no write through it claims a slot after this). More keys than fit are revoked
        right after, one transaction each; a key the index did not show yet is revoked
        when presented (services/access.py: its creator is no longer a member)."""
        current = self.get_member(workspace_id, email)
        if current is None:
            raise NotMember(email)
        keys = self._active_keys_of(workspace_id, email)
        now_keys, later_keys = keys[:KEYS_IN_REMOVAL], keys[KEYS_IN_REMOVAL:]
        tx = Transaction()
        tx.delete(member_key(workspace_id, email), "attribute_exists(PK) AND #r = :old", names={"#r": "role"},
                  values={":old": current.role})
        tx.put({**removal_key(workspace_id, email),
                **fields_of(RemovalMark(workspace_id, email, removed_by, now_ms))})
        sets, values, condition = [], {}, "attribute_exists(PK)"
        if current.role == "owner":
            sets.append("owner_count = owner_count - :one")
            values[":one"] = 1
            condition += " AND owner_count > :one"
        if now_keys:
            sets.append("key_count = key_count - :keys")
            values[":keys"] = len(now_keys)
        owner_index = (tx.update(workspace_key(workspace_id), "SET " + ", ".join(sets), condition, values=values)
                       if sets else None)
        for key_id in now_keys:
            tx.update(api_key_key(key_id), "SET revoked_at = :now",
                      "attribute_exists(PK) AND attribute_not_exists(revoked_at)", values={":now": now_ms})
            for shard in write_shard_keys(key_id):
                tx.update(shard, "SET revoked_at = :now", values={":now": now_ms})
        try:
            tx.commit()
        except ConditionFailed as exc:
            if current.role == "owner" and exc.failed(owner_index):
                raise LastOwner(workspace_id) from exc
            return self.remove_member(workspace_id, email, now_ms, removed_by)  # the role or a key moved: judge again
        revoked = list(now_keys)
        keys_repo = ApiKeyRepository(self.table)
        for key_id in later_keys:
            changed = keys_repo.revoke(key_id, now_ms)
            if changed is not None and changed.revoked_at == now_ms:
                revoked.append(key_id)
        sessions = self.table.query_all("GSI1PK = :pk", {":pk": user_sessions_index_pk(email)}, index="GSI1",
                                        projected=("workspace_id",))
        self.table.delete_keys([{"PK": s["PK"], "SK": s["SK"]} for s in sessions
                                if s.get("workspace_id") == workspace_id])
        return MemberRemoval(current, tuple(revoked))

    def _active_keys_of(self, workspace_id: str, email: str) -> list[str]:
        """The ids of the workspace's keys `email` made and nobody revoked, oldest first
        (the key listing's index, then the items themselves, consistently)."""
        items = self.table.query_all("GSI1PK = :pk", {":pk": keys_index_pk(workspace_id)}, index="GSI1")
        return [i["key_id"] for i in items if i.get("created_by") == email and i.get("revoked_at") is None]

    # ---------------------------------------------------------------- tokens

    def put_token(self, token: AccountToken) -> None:
        item = {**account_token_key(token.token_hash), **fields_of(token)}
        kind = token.kind
        if kind == "invite":
            item.update({"GSI1PK": invites_index_pk(token.workspace_id or ""),
                         "GSI1SK": f"{token.created_ms:015d}#{token.token_hash}",
                         "GSI2PK": invitee_index_pk(token.email),
                         "GSI2SK": f"{token.created_ms:015d}#{token.token_hash}"})
        self.table.put(item, "attribute_not_exists(PK)")

    def get_token(self, token_hash: str) -> Optional[AccountToken]:
        return _token(self.table.get(account_token_key(token_hash)))

    def use_token(self, token_hash: str, now_ms: int) -> Optional[AccountToken]:
        try:
            return _token(self.table.update(
                account_token_key(token_hash), "SET used_ms = :now",
                "attribute_exists(PK) AND attribute_not_exists(used_ms) AND expires_ms > :now",
                values={":now": now_ms}))
        except ConditionFailed:
            return None

    def accept_invite(self, token_hash: str, member: Member, now_ms: int) -> Optional[AccountToken]:
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
                raise MemberExists(member.email) from exc
            return None
        return self.get_token(token_hash)

    def list_invites(self, workspace_id: str, now_ms: int) -> list[AccountToken]:
        items = self.table.query_all("GSI1PK = :pk", {":pk": invites_index_pk(workspace_id)}, index="GSI1",
                                     forward=False)
        return [from_fields(AccountToken, i) for i in items if i.get("used_ms") is None and i["expires_ms"] > now_ms]

    def invites_for(self, email: str, now_ms: int) -> list[AccountToken]:
        items = self.table.query_all("GSI2PK = :pk", {":pk": invitee_index_pk(email)}, index="GSI2",
                                     forward=False)
        return [from_fields(AccountToken, i) for i in items if i.get("used_ms") is None and i["expires_ms"] > now_ms]

    def revoke_invites(self, workspace_id: str, email: str, now_ms: int) -> int:
        revoked = 0
        for invite in self.list_invites(workspace_id, now_ms):
            if invite.email == email and self.use_token(invite.token_hash, now_ms) is not None:
                revoked += 1
        return revoked

    def index_invitations(self, now_ms: int) -> InvitationIndexing:
        """Invitations put before `invites_for` have no GSI2 `INVITEE#<email>`: a Scan finds
        them (no index leads to them), and each pending one gets the entry `put_token` writes
        today, by an update conditional on the item being that invitation still without one
        (`attribute_exists(PK)`: an UpdateItem on a key the TTL deleted would make a stub)."""
        found = indexed = left_alone = changed = 0
        for page in self.table.scan("begins_with(PK, :acct) AND kind = :invite AND attribute_not_exists(GSI2PK)",
                                    {":acct": "ACCT#", ":invite": "invite"}):
            for item in page:
                found += 1
                if item.get("used_ms") is not None or int(item["expires_ms"]) <= now_ms:
                    left_alone += 1
                    continue
                sort = f"{int(item['created_ms']):015d}#{item['token_hash']}"
                try:
                    self.table.update(
                        {"PK": item["PK"], "SK": item["SK"]}, "SET GSI2PK = :pk, GSI2SK = :sk",
                        "attribute_exists(PK) AND kind = :invite AND email = :email AND created_ms = :created "
                        "AND attribute_not_exists(GSI2PK)",
                        values={":pk": invitee_index_pk(item["email"]), ":sk": sort, ":invite": "invite",
                                ":email": item["email"], ":created": item["created_ms"]}, returned="NONE")
                    indexed += 1
                except ConditionFailed:
                    changed += 1
        return InvitationIndexing(found, indexed, left_alone, changed)

    # ---------------------------------------------------------------- activity

    def add_activity(self, entry: ActivityEntry) -> None:
        self.table.put(activity_item(entry), "attribute_not_exists(PK)")

    def activity_page(self, workspace_id: str, since_ms: int, limit: int, cursor: Optional[str]
                      ) -> tuple[list[ActivityEntry], Optional[str]]:
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
        return [from_fields(ActivityEntry, i) for i in items], encode_cursor(last)
