"""Pending CDN invalidations in DynamoDB (ports/cdn.py PendingInvalidationRepository).

Item `CDN#<path>` / `CDN`, listed oldest first through GSI1 `CDN#PENDING` /
`<created_ms:015d>#<path>`. A path pending twice is one item (attempts counted).
"""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.dynamodb import Table

PENDING_INDEX_PK = "CDN#PENDING"


def pending_key(path: str) -> dict:
    return {"PK": f"CDN#{path}", "SK": "CDN"}


class PendingInvalidationRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def add(self, path: str, reason: str, now_ms: int, error: str) -> None:
        self.table.update(
            pending_key(path),
            "SET #path = :path, reason = :reason, last_error = :error, last_attempt_ms = :now, "
            "created_ms = if_not_exists(created_ms, :now), GSI1PK = :gpk, "
            "GSI1SK = if_not_exists(GSI1SK, :gsk) ADD attempts :one",
            names={"#path": "path"},
            values={":path": path, ":reason": reason, ":error": error, ":now": now_ms,
                    ":gpk": PENDING_INDEX_PK, ":gsk": f"{now_ms:015d}#{path}", ":one": 1})

    def list(self, limit: int) -> list[dict]:
        items, _ = self.table.query("GSI1PK = :pk", {":pk": PENDING_INDEX_PK}, index="GSI1", limit=limit)
        return [{k: item.get(k) for k in ("path", "reason", "created_ms", "attempts", "last_attempt_ms",
                                           "last_error")} for item in items]

    def remove(self, path: str) -> None:
        self.table.delete_keys([pending_key(path)])
