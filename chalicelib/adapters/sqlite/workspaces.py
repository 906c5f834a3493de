"""Workspaces and their API keys. A key and the workspace's `key_count` change in
one transaction, under the write lock, so the plan's key cap is exact."""
from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any, Mapping, Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.records import ApiKey, KeyWriteLog, Workspace, WorkspaceFields, from_fields
from chalicelib.ports.errors import KeyCapReached, WriteRefused

WORKSPACE_FIELDS = ("name", "plan", "brand_name", "brand_tagline", "secret_scanning", "pii_scanning")
# sso_auto_join changes through set_sso_auto_join only (JSON; what sso_auto_join_for reads).


def workspace_record(row: Optional[Mapping[str, Any]]) -> Optional[Workspace]:
    """The Workspace of a `workspaces` row (its key column is `id`)."""
    if row is None:
        return None
    return from_fields(Workspace, {**row, "workspace_id": row["id"]})


def api_key_record(row: Optional[Mapping[str, Any]]) -> Optional[ApiKey]:
    """The ApiKey of an `api_keys` row: its one write log (`writes`, `writes_seq`) is shard 0."""
    if row is None:
        return None
    log = KeyWriteLog(0, int(row.get("writes_seq") or 0), tuple(int(t) for t in row.get("writes") or ()))
    return from_fields(ApiKey, {**row, "write_logs": (log,)})


def read_workspace(conn: sqlite3.Connection, workspace_id: str) -> Optional[Workspace]:
    return workspace_record(one(conn, "SELECT * FROM workspaces WHERE id = ?", (workspace_id,)))


class WorkspaceRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, workspace_id: str) -> Optional[Workspace]:
        return workspace_record(self.db.one("SELECT * FROM workspaces WHERE id = ?", (workspace_id,)))

    def create(self, workspace: Workspace) -> None:
        with self.db.write() as tx:
            if one(tx, "SELECT 1 AS x FROM workspaces WHERE id = ?", (workspace.workspace_id,)):
                raise WriteRefused("exists")
            tx.execute("INSERT INTO workspaces (id, name, plan, created_ms, brand_name, brand_tagline) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (workspace.workspace_id, workspace.name, workspace.plan, workspace.created_ms,
                        workspace.brand_name, workspace.brand_tagline))

    def set_plan(self, workspace_id: str, plan: str) -> Workspace:
        return self.set_fields(workspace_id, {"plan": plan})

    def set_fields(self, workspace_id: str, fields: WorkspaceFields) -> Workspace:
        unknown = set(fields) - set(WORKSPACE_FIELDS)
        if unknown:
            raise ValueError(f"not workspace fields: {sorted(unknown)}")
        with self.db.write() as tx:
            assignments = ", ".join(f"{name} = ?" for name in fields)
            changed = tx.execute(f"UPDATE workspaces SET {assignments} WHERE id = ?",  # noqa: S608 - names checked
                                 (*fields.values(), workspace_id)).rowcount
            if not changed:
                raise WriteRefused("missing")
            stored = read_workspace(tx, workspace_id)
        assert stored is not None  # it was just updated, under the write lock
        return stored

    def set_sso_auto_join(self, workspace_id: str, domain: Optional[str], role: Optional[str]) -> Workspace:
        import json

        setting = {"domain": domain, "role": role} if domain else None
        with self.db.write() as tx:
            changed = tx.execute("UPDATE workspaces SET sso_auto_join = ? WHERE id = ?",
                                 (json.dumps(setting) if setting else None, workspace_id)).rowcount
            if not changed:
                raise WriteRefused("missing")
            stored = read_workspace(tx, workspace_id)
        assert stored is not None
        return stored

    def sso_auto_join_for(self, domain: str) -> list[tuple[str, str]]:
        rows = self.db.all("SELECT id, json_extract(sso_auto_join, '$.role') AS role FROM workspaces "
                           "WHERE json_extract(sso_auto_join, '$.domain') = ? ORDER BY id",
                           (domain,))
        return [(row["id"], row["role"]) for row in rows]


class ApiKeyRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, key_id: str) -> Optional[ApiKey]:
        return api_key_record(self.db.one("SELECT * FROM api_keys WHERE key_id = ?", (key_id,)))

    def create(self, key: ApiKey, max_keys: Optional[int]) -> None:
        with self.db.write() as tx:
            workspace = read_workspace(tx, key.workspace_id)
            if workspace is None or (max_keys is not None and workspace.key_count >= max_keys):
                raise KeyCapReached(workspace)
            if one(tx, "SELECT 1 AS x FROM api_keys WHERE key_id = ?", (key.key_id,)):
                raise WriteRefused("exists")
            tx.execute("UPDATE workspaces SET key_count = key_count + 1 WHERE id = ?", (key.workspace_id,))
            tx.execute("INSERT INTO api_keys (key_id, workspace_id, key_hash, name, prefix, created_ms, created_by) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key.key_id, key.workspace_id, key.key_hash, key.name, key.prefix, key.created_ms,
                        key.created_by))

    def revoke(self, key_id: str, now_ms: int) -> Optional[ApiKey]:
        with self.db.write() as tx:
            item = api_key_record(one(tx, "SELECT * FROM api_keys WHERE key_id = ?", (key_id,)))
            if item is None or item.revoked_at is not None:
                return item
            tx.execute("UPDATE api_keys SET revoked_at = ? WHERE key_id = ?", (now_ms, key_id))
            tx.execute("UPDATE workspaces SET key_count = key_count - 1 WHERE id = ? AND key_count > 0",
                       (item.workspace_id,))
        return dataclasses.replace(item, revoked_at=now_ms)

    def list_for_workspace(self, workspace_id: str) -> list[ApiKey]:
        rows = self.db.all("SELECT * FROM api_keys WHERE workspace_id = ? ORDER BY created_ms DESC, key_id DESC",
                           (workspace_id,))
        return [key for row in rows if (key := api_key_record(row)) is not None]
