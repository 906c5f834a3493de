"""Activity lines in SQLite: written by the people repository and, inside a version's
transaction, by the documents repository (kept apart from people.py, so the documents
repository loads nothing of members and tokens)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from chalicelib.ports.records import fields_of

if TYPE_CHECKING:
    from chalicelib.ports.records import ActivityEntry

ACTIVITY_COLUMNS = ("workspace_id", "created_ms", "activity_id", "actor_kind", "actor", "surface", "action",
                    "target", "detail", "expires_at")


def insert_activity(tx, entry: ActivityEntry) -> None:
    """Store an activity entry in the caller's transaction (also a version's), and sweep
    up to 100 entries past their 90 days (bounded work per write)."""
    row = {**fields_of(entry), "detail": json.dumps(dict(entry.detail), ensure_ascii=False)}
    tx.execute(f"INSERT INTO activity ({', '.join(ACTIVITY_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(ACTIVITY_COLUMNS))})",
               tuple(row[c] for c in ACTIVITY_COLUMNS))
    tx.execute("DELETE FROM activity WHERE (workspace_id, created_ms, activity_id) IN "
               "(SELECT workspace_id, created_ms, activity_id FROM activity WHERE expires_at < ? LIMIT 100)",
               (entry.created_ms // 1000,))
