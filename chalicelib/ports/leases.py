"""Leases: at most N holders of a scope at once, each until released or expired
(issue 33: waiting requests and pending uploads per workspace).

Both adapters decide a claim in one atomic step over the scope's current leases
(no read-then-write race: SQLite under its write lock, DynamoDB with a write
conditional on the sequence it read). A lease past its `expires_ms` counts for
nothing, whether or not anything removed it: a holder that died releases by expiring.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from chalicelib.ports.records import Lease



class LeaseRepository(Protocol):
    def held(self, scope: str, now_ms: int) -> list[Lease]:
        """The scope's leases not expired at `now_ms`, oldest expiry first."""

    def acquire(self, lease: Lease, limit: int, now_ms: int, max_weight: Optional[int] = None) -> bool:
        """Hold `lease` if, at `now_ms`, fewer than `limit` other leases of its scope are
        held and (with `max_weight`) their weights plus its own stay within it; False
        otherwise (nothing written). Holding a lease already held renews it."""

    def release(self, scope: str, holder: str) -> None:
        """Give the holder's lease back (nothing if it is not held)."""


__all__ = ["LeaseRepository"]
