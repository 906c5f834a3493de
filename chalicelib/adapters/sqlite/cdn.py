"""Pending CDN invalidations (ports/cdn.py PendingInvalidationRepository) in SQLite:
table `cdn_pending`, one row per path, oldest first. Same meaning as the DynamoDB
adapter: a path pending twice is one row with its attempts counted."""
from __future__ import annotations

from chalicelib.adapters.sqlite.db import Database
from chalicelib.ports.records import PendingInvalidation, from_fields

COLUMNS = "path, reason, created_ms, attempts, last_attempt_ms, last_error"


class PendingInvalidationRepository:
    def __init__(self, db: Database):
        self.db = db

    def add(self, path: str, reason: str, now_ms: int, error: str) -> None:
        with self.db.write() as tx:
            tx.execute("INSERT INTO cdn_pending (path, reason, created_ms, attempts, last_attempt_ms, last_error) "
                       "VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (path) DO UPDATE SET attempts = attempts + 1, "
                       "reason = excluded.reason, last_attempt_ms = excluded.last_attempt_ms, "
                       "last_error = excluded.last_error",
                       (path, reason, now_ms, now_ms, error))

    def list(self, limit: int) -> list[PendingInvalidation]:
        return [from_fields(PendingInvalidation, row) for row in self.db.all(
            f"SELECT {COLUMNS} FROM cdn_pending ORDER BY created_ms, path LIMIT ?", (limit,))]  # noqa: S608

    def remove(self, path: str) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM cdn_pending WHERE path = ?", (path,))
