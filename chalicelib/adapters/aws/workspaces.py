"""Workspaces and their API keys. `key_count` changes in the same transaction as
the key, with a condition, so the plan's key cap holds under concurrency."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Sequence

from chalicelib.adapters.aws.keys import (
    WRITE_SHARDS, api_key_key, keys_index_pk, sso_join_key, write_shard_key, write_shard_keys, workspace_key,
)
from chalicelib.adapters.aws.table import ConditionFailed, Item, Table, Transaction
from chalicelib.ports.records import ApiKey, KeyWriteLog, Workspace, WorkspaceFields, fields_of, from_fields
from chalicelib.ports.errors import KeyCapReached
from chalicelib.adapters.aws.errors import storage_errors


def workspace_record(item: Optional[Mapping[str, Any]]) -> Optional[Workspace]:
    """The Workspace of a `WS#` item (its id is the `id` attribute; usage counters a
    workspace never changed are absent: 0)."""
    if item is None:
        return None
    return from_fields(Workspace, {**item, "workspace_id": item["id"]})


@storage_errors
class WorkspaceRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, workspace_id: str) -> Optional[Workspace]:
        return workspace_record(self.table.get(workspace_key(workspace_id)))

    def create(self, workspace: Workspace) -> None:
        item = {"id": workspace.workspace_id, "name": workspace.name, "plan": workspace.plan,
                "created_ms": workspace.created_ms, "brand_name": workspace.brand_name,
                "brand_tagline": workspace.brand_tagline}
        self.table.put({**workspace_key(workspace.workspace_id),
                        **{k: v for k, v in item.items() if v is not None}, "document_count": 0, "key_count": 0},
                       "attribute_not_exists(PK)")

    def set_plan(self, workspace_id: str, plan: str) -> Workspace:
        return self.set_fields(workspace_id, {"plan": plan})

    def set_fields(self, workspace_id: str, fields: WorkspaceFields) -> Workspace:
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
        stored = workspace_record(self.table.update(workspace_key(workspace_id), expression, "attribute_exists(PK)",
                                                    names=names, values=values or None))
        assert stored is not None  # the update returns the item it changed
        return stored

    def set_sso_auto_join(self, workspace_id: str, domain: Optional[str], role: Optional[str]) -> Workspace:
        """The workspace's field and its `SSOJOIN#<domain>` item change in one transaction,
        conditional on the setting read (two owners saving at once: one wins, the other
        reads again), so the lookup item always matches the field."""
        from chalicelib.ports.errors import WriteRefused

        setting = {"domain": domain, "role": role} if domain else None
        for _attempt in range(5):
            current = self.get(workspace_id)
            if current is None:
                raise WriteRefused("missing")
            old = current.sso_auto_join or None
            names = {"#s": "sso_auto_join"}
            values: dict[str, Any] = {}
            if old is None:
                condition = "attribute_exists(PK) AND attribute_not_exists(#s)"
            else:
                names.update({"#d": "domain", "#r": "role"})
                condition = "attribute_exists(PK) AND #s.#d = :od AND #s.#r = :or"
                values.update({":od": old["domain"], ":or": old["role"]})
            tx = Transaction()
            if setting:
                tx.update(workspace_key(workspace_id), "SET #s = :s", condition, names=names,
                          values={**values, ":s": dict(setting)})
            else:
                tx.update(workspace_key(workspace_id), "REMOVE #s", condition, names=names, values=values or None)
            if old is not None and (not setting or setting["domain"] != old["domain"]):
                tx.delete(sso_join_key(old["domain"], workspace_id))
            if domain:
                tx.put({**sso_join_key(domain, workspace_id), "workspace_id": workspace_id, "role": role})
            try:
                tx.commit()
            except ConditionFailed:
                continue
            stored = self.get(workspace_id)
            assert stored is not None
            return stored
        raise WriteRefused("contended")

    def sso_auto_join_for(self, domain: str) -> list[tuple[str, str]]:
        items = self.table.query_all("PK = :pk", {":pk": sso_join_key(domain, "")["PK"]})
        return sorted((str(item["workspace_id"]), str(item["role"])) for item in items)


def with_write_logs(key_item: Optional[Item], shards: Sequence[Optional[Item]]) -> Optional[ApiKey]:
    """The ApiKey of a key item and its write-log shard items (`write_logs`: every
    shard, also those never written; `last_used_at`: the latest of the shards')."""
    if key_item is None:
        return None
    logs, last_used = [], key_item.get("last_used_at")
    for shard, item in enumerate(shards):
        item = item or {}
        times = [int(t) for t in item.get("writes") or ()]
        if shard == 0 and not item:
            times += [int(t) for t in key_item.get("writes") or ()]  # the single log of before the shards, until it ages out
        logs.append(KeyWriteLog(shard, int(item.get("writes_seq", 0)), tuple(times)))
        if item.get("last_used_at") is not None:
            last_used = max(last_used or 0, item["last_used_at"])
    return from_fields(ApiKey, {**key_item, "write_logs": tuple(logs), "last_used_at": last_used})


def new_key_item(key: ApiKey) -> Item:
    """The `KEY#` item of a new key: never used, an empty write log, in the workspace's key listing."""
    fields = {k: v for k, v in fields_of(key).items() if v is not None and k not in ("write_logs", "revoked_at",
                                                                                       "last_used_at")}
    return {**api_key_key(key.key_id), **fields, "writes": [], "writes_seq": 0,
            "GSI1PK": keys_index_pk(key.workspace_id), "GSI1SK": f"{key.created_ms:015d}#{key.key_id}"}


@storage_errors
class ApiKeyRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, key_id: str) -> Optional[ApiKey]:
        """The key and its write-log shards: one Query of the key's partition."""
        items = self.table.query_all("PK = :pk", {":pk": api_key_key(key_id)["PK"]}, consistent=True)
        by_sk = {i["SK"]: i for i in items}
        return with_write_logs(by_sk.get("KEY"), [by_sk.get(k["SK"]) for k in write_shard_keys(key_id)])

    def create(self, key: ApiKey, max_keys: Optional[int]) -> None:
        """Store a key, counting it against the workspace's cap in one transaction."""
        tx = Transaction()
        ws_index = tx.update(
            workspace_key(key.workspace_id),
            "SET key_count = key_count + :one",
            "attribute_exists(PK)" + ("" if max_keys is None else " AND key_count < :max"),
            values={":one": 1, **({} if max_keys is None else {":max": max_keys})},
            return_old=True,
        )
        tx.put(new_key_item(key), "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(ws_index):
                raise KeyCapReached(workspace_record(exc.old_items[ws_index])) from exc
            raise

    def revoke(self, key_id: str, now_ms: int) -> Optional[ApiKey]:
        """Mark revoked and free its place in the cap; None if unknown."""
        item = self.get(key_id)
        if item is None or item.revoked_at is not None:
            return item
        tx = Transaction()
        tx.update(api_key_key(key_id), "SET revoked_at = :now",
                  "attribute_exists(PK) AND attribute_not_exists(revoked_at)", values={":now": now_ms})
        for shard in range(WRITE_SHARDS):  # a write's slot claim checks its shard: none after this
            tx.update(write_shard_key(key_id, shard), "SET revoked_at = :now", values={":now": now_ms})
        tx.update(workspace_key(item.workspace_id), "SET key_count = key_count - :one",
                  "key_count > :zero", values={":one": 1, ":zero": 0})
        try:
            tx.commit()
        except ConditionFailed:
            return self.get(key_id)
        return dataclasses.replace(item, revoked_at=now_ms)

    def list_for_workspace(self, workspace_id: str) -> list[ApiKey]:
        keys = self.table.query_all("GSI1PK = :pk", {":pk": keys_index_pk(workspace_id)},
                                    index="GSI1", forward=False)
        shards = self.table.batch_get([k for key in keys for k in write_shard_keys(key["key_id"])])
        listed = (with_write_logs(key, shards[n * WRITE_SHARDS:(n + 1) * WRITE_SHARDS]) for n, key in enumerate(keys))
        return [key for key in listed if key is not None]
