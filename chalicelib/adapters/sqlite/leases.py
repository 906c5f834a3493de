"""Leases (ports/leases.py): one row per held place; a claim counts the scope's
unexpired rows and inserts its own under the write lock (BEGIN IMMEDIATE), so two
claims never both see the last free place."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.records import Lease


def _lease(row: dict) -> Lease:
    return Lease(scope=row["scope"], holder=row["holder"], expires_ms=row["expires_ms"], weight=row["weight"])


def _room(count: int, weight: int, lease: Lease, limit: int, max_weight: Optional[int]) -> bool:
    return count < limit and (max_weight is None or weight + lease.weight <= max_weight)


class LeaseRepository:
    def __init__(self, db: Database):
        self.db = db

    def held(self, scope: str, now_ms: int) -> list[Lease]:
        rows = self.db.all("SELECT * FROM leases WHERE scope = ? AND expires_ms > ? ORDER BY expires_ms, holder",
                           (scope, now_ms))
        return [_lease(r) for r in rows]

    def _usage(self, conn, lease: Lease, now_ms: int) -> tuple[int, int]:
        row = one(conn, "SELECT COUNT(*) AS n, COALESCE(SUM(weight), 0) AS w FROM leases "
                        "WHERE scope = ? AND holder != ? AND expires_ms > ?", (lease.scope, lease.holder, now_ms))
        return (row or {}).get("n", 0), (row or {}).get("w", 0)

    def acquire(self, lease: Lease, limit: int, now_ms: int, max_weight: Optional[int] = None) -> bool:
        # A full scope is refused from a read (WAL readers never wait for the writer), so
        # a crowd of refused claims never queues for the write lock.
        with self.db.snapshot() as conn:
            if not _room(*self._usage(conn, lease, now_ms), lease, limit, max_weight):
                return False
        with self.db.write() as tx:
            if not _room(*self._usage(tx, lease, now_ms), lease, limit, max_weight):
                return False
            tx.execute("DELETE FROM leases WHERE scope = ? AND expires_ms <= ?", (lease.scope, now_ms))
            tx.execute("INSERT INTO leases (scope, holder, expires_ms, weight) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (scope, holder) DO UPDATE SET expires_ms = excluded.expires_ms, "
                       "weight = excluded.weight", (lease.scope, lease.holder, lease.expires_ms, lease.weight))
        return True

    def release(self, scope: str, holder: str) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM leases WHERE scope = ? AND holder = ?", (scope, holder))
