"""Sliding logs of standalone limits: `RATE#<scope>` holds the log and a sequence
number; a claim replaces the log only if the sequence did not move."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.keys import rate_key
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction
from chalicelib.ports.records import RateClaim, RateLog
from chalicelib.adapters.aws.errors import storage_errors


def _log(scope: str, item: Optional[dict]) -> Optional[RateLog]:
    if item is None:
        return None
    return RateLog(scope=scope, hits=tuple(item.get("hits") or ()), seq=item.get("seq", 0),
                   expires_at=item.get("expires_at"))


def _claim_update(claim: RateClaim) -> tuple[str, str, dict]:
    condition = "attribute_not_exists(PK)" if claim.expected_seq == 0 else "seq = :seq"
    values = {":log": claim.new_log, ":next": claim.expected_seq + 1, ":exp": claim.expires_at}
    if claim.expected_seq:
        values[":seq"] = claim.expected_seq
    return "SET hits = :log, seq = :next, expires_at = :exp", condition, values


def add_rate_claim(tx: Transaction, claim: RateClaim) -> int:
    """Add the claim to a transaction; returns its action index."""
    update, condition, values = _claim_update(claim)
    return tx.update(rate_key(claim.scope), update, condition, values=values)


@storage_errors
class RateLimitRepository:
    """Sliding logs for per-IP limits (unlock attempts, feedback posts) and others."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, scope: str) -> Optional[RateLog]:
        return _log(scope, self.table.get(rate_key(scope)))

    def get_many(self, scopes: list[str]) -> list[Optional[RateLog]]:
        """One BatchGetItem (consistent) of the scopes' logs."""
        return [_log(scope, item) for scope, item in zip(scopes, self.table.batch_get([rate_key(s) for s in scopes]))]

    def claim(self, scope: str, expected_seq: int, new_log: list[int], expires_at: int) -> bool:
        """Write the new log only if nobody else wrote since we read it."""
        update, condition, values = _claim_update(RateClaim(scope, expected_seq, new_log, expires_at))
        try:
            self.table.update(rate_key(scope), update, condition, values=values)
        except ConditionFailed:
            return False
        return True
