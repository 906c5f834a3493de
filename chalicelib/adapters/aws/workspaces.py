"""Workspaces and their API keys. `key_count` changes in the same transaction as
the key, with a condition, so the plan's key cap holds under concurrency."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.keys import (
    WRITE_SHARDS, api_key_key, keys_index_pk, write_shard_key, write_shard_keys, workspace_key,
)
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction
from chalicelib.ports.records import KeyCapReached, Record
from chalicelib.adapters.aws.errors import storage_errors


@storage_errors
class WorkspaceRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, workspace_id: str) -> Optional[dict]:
        return self.table.get(workspace_key(workspace_id))

    def create(self, workspace: dict) -> None:
        self.table.put({**workspace_key(workspace["id"]), **workspace, "document_count": 0, "key_count": 0},
                       "attribute_not_exists(PK)")

    def set_plan(self, workspace_id: str, plan: str) -> dict:
        return self.set_fields(workspace_id, {"plan": plan})

    def set_fields(self, workspace_id: str, fields: dict) -> dict:
        names = {f"#f{i}": k for i, k in enumerate(fields)}
        sets, removes, values = [], [], {}
        for i, (k, v) in enumerate(fields.items()):
            if v is None:
                removes.append(f"#f{i}")
            else:
                sets.append(f"#f{i} = :v{i}")
                values[f":v{i}"] = v
        expression = " ".join(part for part in (
            ("SET " + ", ".join(sets)) if sets else "",
            ("REMOVE " + ", ".join(removes)) if removes else "") if part)
        return self.table.update(workspace_key(workspace_id), expression, "attribute_exists(PK)",  # type: ignore[return-value]
                                 names=names, values=values or None)


def with_write_logs(key_item: Optional[Record], shards: list[Optional[Record]]) -> Optional[Record]:
    """The key record as the port gives it: the key item plus its write-log shards
    (`write_logs`, every shard, also those never written), `writes` (all their
    entries) and `last_used_at` (the latest of the shards')."""
    if key_item is None:
        return None
    record = {k: v for k, v in key_item.items() if k not in ("writes", "writes_seq")}
    logs, last_used = [], key_item.get("last_used_at")
    for shard, item in enumerate(shards):
        item = item or {}
        log = list(item.get("writes") or [])
        if shard == 0 and not item:
            log += key_item.get("writes") or []  # the single log of before the shards, until it ages out
        logs.append({"shard": shard, "seq": item.get("writes_seq", 0), "log": log})
        if item.get("last_used_at") is not None:
            last_used = max(last_used or 0, item["last_used_at"])
    record.update(write_logs=logs, writes=sorted(t for entry in logs for t in entry["log"]),
                  last_used_at=last_used)
    return record


@storage_errors
class ApiKeyRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, key_id: str) -> Optional[dict]:
        """The key and its write-log shards: one Query of the key's partition."""
        items = self.table.query_all("PK = :pk", {":pk": api_key_key(key_id)["PK"]}, consistent=True)
        by_sk = {i["SK"]: i for i in items}
        return with_write_logs(by_sk.get("KEY"), [by_sk.get(k["SK"]) for k in write_shard_keys(key_id)])

    def create(self, record: dict, max_keys: Optional[int]) -> None:
        """Store a key, counting it against the workspace's cap in one transaction."""
        tx = Transaction()
        ws_index = tx.update(
            workspace_key(record["workspace_id"]),
            "SET key_count = key_count + :one",
            "attribute_exists(PK)" + ("" if max_keys is None else " AND key_count < :max"),
            values={":one": 1, **({} if max_keys is None else {":max": max_keys})},
            return_old=True,
        )
        tx.put({**api_key_key(record["key_id"]), **record, "writes": [], "writes_seq": 0,
                "GSI1PK": keys_index_pk(record["workspace_id"]),
                "GSI1SK": f"{record['created_ms']:015d}#{record['key_id']}"},
               "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(ws_index):
                raise KeyCapReached(exc.old_items[ws_index]) from exc
            raise

    def revoke(self, key_id: str, now_ms: int) -> Optional[dict]:
        """Mark revoked and free its place in the cap; None if unknown."""
        item = self.get(key_id)
        if item is None or item.get("revoked_at") is not None:
            return item
        tx = Transaction()
        tx.update(api_key_key(key_id), "SET revoked_at = :now",
                  "attribute_exists(PK) AND attribute_not_exists(revoked_at)", values={":now": now_ms})
        for shard in range(WRITE_SHARDS):  # a write's slot claim checks its shard: none after this
            tx.update(write_shard_key(key_id, shard), "SET revoked_at = :now", values={":now": now_ms})
        tx.update(workspace_key(item["workspace_id"]), "SET key_count = key_count - :one",
                  "key_count > :zero", values={":one": 1, ":zero": 0})
        try:
            tx.commit()
        except ConditionFailed:
            return self.get(key_id)
        item["revoked_at"] = now_ms
        return item

    def list_for_workspace(self, workspace_id: str) -> list[dict]:
        keys = self.table.query_all("GSI1PK = :pk", {":pk": keys_index_pk(workspace_id)},
                                    index="GSI1", forward=False)
        shards = self.table.batch_get([k for key in keys for k in write_shard_keys(key["key_id"])])
        return [with_write_logs(key, shards[n * WRITE_SHARDS:(n + 1) * WRITE_SHARDS]) for n, key in enumerate(keys)]  # type: ignore[misc]
