"""Workspace exports (ports/exports.py): one row each. A start looks for a running export
of the workspace and inserts its own under the write lock (BEGIN IMMEDIATE), so two
concurrent starts never both see the workspace free."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.records import Export, fields_of, from_fields

_COLUMNS = tuple(fields_of(Export("", "", "running", 0, 0, 0)))
_RUNNING = "SELECT * FROM exports WHERE workspace_id = ? AND status = 'running' AND deadline_ms > ? LIMIT 1"


def _export(row: Optional[dict]) -> Optional[Export]:
    return from_fields(Export, row) if row else None


class ExportRepository:
    def __init__(self, db: Database):
        self.db = db

    def start(self, export: Export, now_ms: int) -> Optional[Export]:
        with self.db.write() as tx:
            running = _export(one(tx, _RUNNING, (export.workspace_id, now_ms)))
            if running is not None:
                return running
            values = fields_of(export)
            tx.execute(f"INSERT INTO exports ({', '.join(_COLUMNS)}) "  # noqa: S608 - column names are ours
                       f"VALUES ({', '.join('?' for _ in _COLUMNS)})", tuple(values[c] for c in _COLUMNS))
        return None

    def get(self, export_id: str) -> Optional[Export]:
        return _export(self.db.one("SELECT * FROM exports WHERE export_id = ?", (export_id,)))

    def finish(self, export: Export) -> bool:
        values = fields_of(export)
        changed = [c for c in _COLUMNS if c not in ("export_id", "workspace_id", "created_ms")]
        with self.db.write() as tx:
            cursor = tx.execute(f"UPDATE exports SET {', '.join(f'{c} = ?' for c in changed)} "  # noqa: S608
                                "WHERE export_id = ? AND status = 'running'",
                                (*(values[c] for c in changed), export.export_id))
            return cursor.rowcount == 1
