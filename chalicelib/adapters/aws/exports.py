"""Workspace exports (ports/exports.py) on DynamoDB.

- `EXPORT#<export_id>` / `EXPORT`: the export's record (TTL `expires_at`).
- `EXPORTS#<workspace_id>` / `RUNNING`: the workspace's one place for a running export
  (`export_id`, `deadline_ms`).

A start is one transaction: the place, written only if it is free (absent, or its
holder's deadline passed), and the new record; of two concurrent starts one commits and
the other's condition fails. A finish is one transaction too: the record's outcome (only
if it is still running) and the place given back (only if this export still holds it;
if a later export took it over past the deadline, the outcome is stored alone).
"""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.adapters.aws.keys import export_key, running_export_key
from chalicelib.adapters.aws.table import RETRY, ConditionFailed, Table, Transaction
from chalicelib.ports.records import Export, fields_of, from_fields

# A start that lost to a place freed meanwhile decides again this many times.
ATTEMPTS = 4
_FINISHED = ("status", "finished_ms", "blob_key", "size_bytes", "available_until_ms", "error", "expires_at")


@storage_errors
class ExportRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, export_id: str) -> Optional[Export]:
        item = self.table.get(export_key(export_id))
        return from_fields(Export, item) if item else None

    def start(self, export: Export, now_ms: int) -> Optional[Export]:
        for attempt in range(ATTEMPTS):
            if attempt:
                RETRY.pause(attempt)
            tx = Transaction()
            tx.put({**running_export_key(export.workspace_id), "export_id": export.export_id,
                    "deadline_ms": export.deadline_ms, "expires_at": export.expires_at},
                   "attribute_not_exists(PK) OR deadline_ms <= :now", {":now": now_ms})
            tx.put({**export_key(export.export_id), **fields_of(export)}, "attribute_not_exists(PK)")
            try:
                tx.commit()
                return None
            except ConditionFailed as exc:
                if not exc.failed(0):
                    raise
            place = self.table.get(running_export_key(export.workspace_id))
            holder = self.get(place["export_id"]) if place else None
            if holder is not None and holder.running_at(now_ms):
                return holder
            # The holder finished (or passed its deadline) since: decide again.
        raise ConditionFailed(["ConditionalCheckFailed"], [None])

    def finish(self, export: Export) -> bool:
        values = fields_of(export)
        sets = ", ".join(f"#{name} = :{name}" for name in _FINISHED if values[name] is not None)
        names = {f"#{name}": name for name in _FINISHED if values[name] is not None}
        update_values = {f":{name}": values[name] for name in _FINISHED if values[name] is not None}
        condition_values = {**update_values, ":running": "running"}
        tx = Transaction()
        tx.update(export_key(export.export_id), f"SET {sets}", "#status = :running", names, condition_values)
        tx.delete(running_export_key(export.workspace_id), "export_id = :id", {":id": export.export_id})
        try:
            tx.commit()
            return True
        except ConditionFailed as exc:
            if exc.failed(0):
                return False
        # The place was taken over by a later export (this one passed its deadline): the outcome alone.
        try:
            self.table.update(export_key(export.export_id), f"SET {sets}", "#status = :running", names,
                              condition_values, returned="NONE")
        except ConditionFailed:
            return False
        return True
