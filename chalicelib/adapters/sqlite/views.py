"""View counters in SQLite: one row per document and day, one per document and
version (with the last view's time); each view is two upserts
(`INSERT … ON CONFLICT DO UPDATE SET views = views + 1`) in one write
transaction, so concurrent views never lose a count. SQLite has one writer at a
time, so there is nothing to shard: `shard` is ignored.

The per-address cap is a fixed-window counter row per scope and window; a claim
also drops the scope's older windows."""
from __future__ import annotations

from typing import Optional, Sequence

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.views import MAX_TALLIES_PER_BATCH, ViewCounts, ViewTally


class ViewCounterRepository:
    def __init__(self, db: Database):
        self.db = db

    def add_view(self, document_id: str, version_id: str, day: str, now_ms: int, shard: int,
                 count: int = 1) -> None:
        with self.db.write() as tx:
            tx.execute("INSERT INTO view_days (document_id, day, views) VALUES (?, ?, ?) "
                       "ON CONFLICT (document_id, day) DO UPDATE SET views = views + excluded.views",
                       (document_id, day, count))
            tx.execute("INSERT INTO view_versions (document_id, version_id, views, last_ms) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (document_id, version_id) DO UPDATE SET views = views + excluded.views, "
                       "last_ms = MAX(last_ms, excluded.last_ms)", (document_id, version_id, count, now_ms))

    def add_views_once(self, batch_id: str, tallies: Sequence[ViewTally], expires_at: int) -> bool:
        """One write transaction: the batch's marker (a `view_limits` row of its own scope,
        swept when it expires) and the upserts."""
        if len(tallies) > MAX_TALLIES_PER_BATCH:
            raise ValueError(f"at most {MAX_TALLIES_PER_BATCH} tallies per batch")
        with self.db.write() as tx:
            if one(tx, "SELECT admitted FROM view_limits WHERE scope = ? AND window_no = 0",
                   ("viewlog#" + batch_id,)) is not None:
                return False
            tx.execute("INSERT INTO view_limits (scope, window_no, admitted, expires_at) VALUES (?, 0, 1, ?)",
                       ("viewlog#" + batch_id, expires_at))
            for tally in tallies:
                tx.execute("INSERT INTO view_days (document_id, day, views) VALUES (?, ?, ?) "
                           "ON CONFLICT (document_id, day) DO UPDATE SET views = views + excluded.views",
                           (tally.document_id, tally.day, tally.count))
                tx.execute("INSERT INTO view_versions (document_id, version_id, views, last_ms) "
                           "VALUES (?, ?, ?, ?) ON CONFLICT (document_id, version_id) DO UPDATE SET "
                           "views = views + excluded.views, last_ms = MAX(last_ms, excluded.last_ms)",
                           (tally.document_id, tally.version_id, tally.count, tally.last_ms))
        return True

    def counts(self, document_id: str, first_day: str, last_day: str) -> ViewCounts:
        with self.db.snapshot() as conn:
            versions = conn.execute("SELECT version_id, views, last_ms FROM view_versions WHERE document_id = ?",
                                    (document_id,)).fetchall()
            days = conn.execute("SELECT day, views FROM view_days WHERE document_id = ? AND day BETWEEN ? AND ?",
                                (document_id, first_day, last_day)).fetchall()
        result = ViewCounts(days={row["day"]: row["views"] for row in days},
                            versions={row["version_id"]: row["views"] for row in versions})
        result.total = sum(result.versions.values())
        result.last_viewed_ms = max((row["last_ms"] for row in versions), default=None)
        return result

    def counts_many(self, document_ids: Sequence[str], first_day: str, last_day: str) -> dict[str, ViewCounts]:
        ids = list(dict.fromkeys(document_ids))
        found = {document_id: ViewCounts() for document_id in ids}
        with self.db.snapshot() as conn:
            for start in range(0, len(ids), 500):  # SQLite's bound on parameters
                chunk = ids[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                for row in conn.execute(f"SELECT document_id, version_id, views, last_ms FROM view_versions "
                                        f"WHERE document_id IN ({marks})", chunk):
                    counts = found[row["document_id"]]
                    counts.versions[row["version_id"]] = row["views"]
                    counts.total += row["views"]
                    if row["last_ms"] is not None and (counts.last_viewed_ms is None
                                                       or row["last_ms"] > counts.last_viewed_ms):
                        counts.last_viewed_ms = row["last_ms"]
                for row in conn.execute(f"SELECT document_id, day, views FROM view_days WHERE document_id IN "
                                        f"({marks}) AND day BETWEEN ? AND ?", [*chunk, first_day, last_day]):
                    found[row["document_id"]].days[row["day"]] = row["views"]
        return found

    def totals(self, document_ids: Sequence[str]) -> dict[str, tuple[int, Optional[int]]]:
        found: dict[str, tuple[int, Optional[int]]] = {}
        ids = list(dict.fromkeys(document_ids))
        with self.db.snapshot() as conn:
            for start in range(0, len(ids), 500):  # SQLite's bound on parameters
                chunk = ids[start:start + 500]
                rows = conn.execute(
                    "SELECT document_id, SUM(views) AS views, MAX(last_ms) AS last_ms FROM view_versions "
                    f"WHERE document_id IN ({', '.join('?' * len(chunk))}) GROUP BY document_id", chunk).fetchall()
                found.update({row["document_id"]: (int(row["views"] or 0), row["last_ms"]) for row in rows})
        return {document_id: found.get(document_id, (0, None)) for document_id in ids}

    def admit(self, scope: str, window: int, limit: int, expires_at: int) -> bool:
        with self.db.write() as tx:
            current = one(tx, "SELECT admitted FROM view_limits WHERE scope = ? AND window_no = ?", (scope, window))
            if current is not None and current["admitted"] >= limit:
                return False
            tx.execute("DELETE FROM view_limits WHERE scope = ? AND window_no < ?", (scope, window))
            tx.execute("INSERT INTO view_limits (scope, window_no, admitted, expires_at) VALUES (?, ?, 1, ?) "
                       "ON CONFLICT (scope, window_no) DO UPDATE SET admitted = admitted + 1", (scope, window, expires_at))
            return True

    def delete_for_document(self, document_id: str) -> None:
        with self.db.write() as tx:
            tx.execute("DELETE FROM view_days WHERE document_id = ?", (document_id,))
            tx.execute("DELETE FROM view_versions WHERE document_id = ?", (document_id,))
