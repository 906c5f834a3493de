"""Leases (ports/leases.py): one item per scope, `LEASE#<scope>` / `LEASE`, holding
`held` (holder -> [expires_ms, weight]) and a sequence number. A claim reads the item
(consistent), decides on the unexpired leases, and writes the whole map back (expired
ones left out) only if `seq` is still what it read: two claims never both take the last
place, and a claim that lost re-reads (bounded; still contended: refused). A release
removes its entry and moves `seq` in one update. TTL (`expires_at`) only cleans up."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.adapters.aws.keys import lease_key
from chalicelib.adapters.aws.table import RETRY, ConditionFailed, Table
from chalicelib.ports.records import Lease

# Claims that lose the race for one scope's item re-read this many times, then refuse.
ATTEMPTS = 8


def _leases(scope: str, item: Optional[dict], now_ms: int) -> list[Lease]:
    held = (item or {}).get("held") or {}
    found = [Lease(scope=scope, holder=holder, expires_ms=int(value[0]), weight=int(value[1]))
             for holder, value in held.items()]
    return sorted((lease for lease in found if lease.expires_ms > now_ms), key=lambda x: (x.expires_ms, x.holder))


@storage_errors
class LeaseRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def held(self, scope: str, now_ms: int) -> list[Lease]:
        return _leases(scope, self.table.get(lease_key(scope)), now_ms)

    def acquire(self, lease: Lease, limit: int, now_ms: int, max_weight: Optional[int] = None) -> bool:
        for attempt in range(ATTEMPTS):
            if attempt:
                RETRY.pause(attempt)
            item = self.table.get(lease_key(lease.scope))
            others = [x for x in _leases(lease.scope, item, now_ms) if x.holder != lease.holder]
            if len(others) >= limit or (max_weight is not None
                                        and sum(x.weight for x in others) + lease.weight > max_weight):
                return False
            seq = int((item or {}).get("seq") or 0)
            kept = {x.holder: [x.expires_ms, x.weight] for x in others}
            kept[lease.holder] = [lease.expires_ms, lease.weight]
            last = max(v[0] for v in kept.values())
            try:
                self.table.put({**lease_key(lease.scope), "held": kept, "seq": seq + 1,
                                "expires_at": last // 1000 + 3600},
                               "attribute_not_exists(PK)" if item is None else "seq = :seq",
                               None if item is None else {":seq": seq})
            except ConditionFailed:
                continue  # another claim or release wrote first: decide again on what it left
            return True
        return False

    def release(self, scope: str, holder: str) -> None:
        try:
            self.table.update(lease_key(scope), "REMOVE held.#h SET seq = seq + :one", "attribute_exists(held.#h)",
                              names={"#h": holder}, values={":one": 1}, returned="NONE")
        except ConditionFailed:
            pass  # not held (released already, or expired and dropped by a claim)
