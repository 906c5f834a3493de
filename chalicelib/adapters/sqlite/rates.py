"""Sliding logs of standalone limits: one row per scope with its log and a
sequence number; a claim replaces the log only if the sequence did not move."""
from __future__ import annotations

import json
import sqlite3
from typing import Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.ports.records import RateClaim, RateLog


def _log(row: Optional[dict]) -> Optional[RateLog]:
    if row is None:
        return None
    return RateLog(scope=row["scope"], hits=tuple(row.get("hits") or ()), seq=row.get("seq", 0),
                   expires_at=row.get("expires_at"))


def try_claim(tx: sqlite3.Connection, claim: RateClaim) -> bool:
    """Inside a write transaction: apply the claim if the log is where it was read."""
    current = one(tx, "SELECT seq FROM rate_logs WHERE scope = ?", (claim.scope,))
    if (current["seq"] if current else 0) != claim.expected_seq or (current is None) != (claim.expected_seq == 0):
        return False
    tx.execute("INSERT INTO rate_logs (scope, hits, seq, expires_at) VALUES (?, ?, ?, ?) "
               "ON CONFLICT (scope) DO UPDATE SET hits = excluded.hits, seq = excluded.seq, "
               "expires_at = excluded.expires_at",
               (claim.scope, json.dumps(claim.new_log), claim.expected_seq + 1, claim.expires_at))
    return True


class RateLimitRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, scope: str) -> Optional[RateLog]:
        return _log(self.db.one("SELECT * FROM rate_logs WHERE scope = ?", (scope,)))

    def get_many(self, scopes: list[str]) -> list[Optional[RateLog]]:
        with self.db.snapshot() as conn:
            return [_log(one(conn, "SELECT * FROM rate_logs WHERE scope = ?", (scope,))) for scope in scopes]

    def claim(self, scope: str, expected_seq: int, new_log: list[int], expires_at: int) -> bool:
        with self.db.write() as tx:
            return try_claim(tx, RateClaim(scope, expected_seq, new_log, expires_at))
