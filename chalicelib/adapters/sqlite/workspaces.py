"""Workspaces and their API keys. A key and the workspace's `key_count` change in
one transaction, under the write lock, so the plan's key cap is exact."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.records import KeyCapReached, WriteRefused

WORKSPACE_FIELDS = ("name", "plan", "brand_name", "brand_tagline")


class WorkspaceRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, workspace_id: str) -> Optional[dict]:
        return self.db.one("SELECT * FROM workspaces WHERE id = ?", (workspace_id,))

    def create(self, workspace: dict) -> None:
        with self.db.write() as tx:
            if one(tx, "SELECT 1 AS x FROM workspaces WHERE id = ?", (workspace["id"],)):
                raise WriteRefused("exists")
            tx.execute("INSERT INTO workspaces (id, name, plan, created_ms, brand_name, brand_tagline) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (workspace["id"], workspace["name"], workspace["plan"], workspace["created_ms"],
                        workspace.get("brand_name"), workspace.get("brand_tagline")))

    def set_plan(self, workspace_id: str, plan: str) -> dict:
        return self.set_fields(workspace_id, {"plan": plan})

    def set_fields(self, workspace_id: str, fields: dict) -> dict:
        unknown = set(fields) - set(WORKSPACE_FIELDS)
        if unknown:
            raise ValueError(f"not workspace fields: {sorted(unknown)}")
        with self.db.write() as tx:
            assignments = ", ".join(f"{name} = ?" for name in fields)
            changed = tx.execute(f"UPDATE workspaces SET {assignments} WHERE id = ?",  # noqa: S608 - names checked
                                 (*fields.values(), workspace_id)).rowcount
            if not changed:
                raise WriteRefused("missing")
            return one(tx, "SELECT * FROM workspaces WHERE id = ?", (workspace_id,)) or {}  # it was just updated


class ApiKeyRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, key_id: str) -> Optional[dict]:
        return self.db.one("SELECT * FROM api_keys WHERE key_id = ?", (key_id,))

    def create(self, record: dict, max_keys: Optional[int]) -> None:
        with self.db.write() as tx:
            workspace = one(tx, "SELECT * FROM workspaces WHERE id = ?", (record["workspace_id"],))
            if workspace is None or (max_keys is not None and workspace["key_count"] >= max_keys):
                raise KeyCapReached(workspace)
            if one(tx, "SELECT 1 AS x FROM api_keys WHERE key_id = ?", (record["key_id"],)):
                raise WriteRefused("exists")
            tx.execute("UPDATE workspaces SET key_count = key_count + 1 WHERE id = ?", (record["workspace_id"],))
            tx.execute("INSERT INTO api_keys (key_id, workspace_id, key_hash, name, prefix, created_ms) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (record["key_id"], record["workspace_id"], record["key_hash"], record["name"],
                        record.get("prefix"), record["created_ms"]))

    def revoke(self, key_id: str, now_ms: int) -> Optional[dict]:
        with self.db.write() as tx:
            item = one(tx, "SELECT * FROM api_keys WHERE key_id = ?", (key_id,))
            if item is None or item.get("revoked_at") is not None:
                return item
            tx.execute("UPDATE api_keys SET revoked_at = ? WHERE key_id = ?", (now_ms, key_id))
            tx.execute("UPDATE workspaces SET key_count = key_count - 1 WHERE id = ? AND key_count > 0",
                       (item["workspace_id"],))
        item["revoked_at"] = now_ms
        return item

    def list_for_workspace(self, workspace_id: str) -> list[dict]:
        return self.db.all("SELECT * FROM api_keys WHERE workspace_id = ? ORDER BY created_ms DESC, key_id DESC",
                           (workspace_id,))
