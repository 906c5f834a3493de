"""Leases (ports/leases.py) on both stores: at most `limit` holders of a scope at once,
each until released or expired; a weight cap over the holders' weights; no race lets
two claims take the last place (issue 33: waiting requests and pending uploads)."""
from __future__ import annotations

import threading

import pytest

from chalicelib.ports.records import Lease

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def _lease(holder: str, expires_ms: int, weight: int = 0, scope: str = "waits#ws_a") -> Lease:
    return Lease(scope=scope, holder=holder, expires_ms=expires_ms, weight=weight)


@BOTH
def test_at_most_limit_holders_until_one_releases(ctx, storage):
    now = 1_000_000
    leases = ctx.leases
    for i in range(10):
        assert leases.acquire(_lease(f"h{i}", now + 40_000), 10, now)
    assert not leases.acquire(_lease("h10", now + 40_000), 10, now)
    assert [x.holder for x in leases.held("waits#ws_a", now)] == [f"h{i}" for i in range(10)]
    # Other scopes are apart.
    assert leases.acquire(_lease("other", now + 40_000, scope="waits#ws_b"), 10, now)
    leases.release("waits#ws_a", "h3")
    leases.release("waits#ws_a", "h3")  # twice: harmless
    leases.release("waits#ws_a", "never")  # never held: harmless
    assert leases.acquire(_lease("h10", now + 40_000), 10, now)
    assert not leases.acquire(_lease("h11", now + 40_000), 10, now)
    assert len(leases.held("waits#ws_a", now)) == 10


@BOTH
def test_an_expired_lease_counts_for_nothing(ctx, storage):
    """A holder that died (killed process, Lambda timeout) never released: its place
    comes back when its lease expires, without any sweep."""
    now = 1_000_000
    for i in range(10):
        assert ctx.leases.acquire(_lease(f"dead{i}", now + 40_000), 10, now)
    assert not ctx.leases.acquire(_lease("late", now + 80_000), 10, now + 39_999)
    later = now + 40_000
    assert ctx.leases.held("waits#ws_a", later) == []
    for i in range(10):
        assert ctx.leases.acquire(_lease(f"new{i}", later + 40_000), 10, later)
    assert not ctx.leases.acquire(_lease("new10", later + 40_000), 10, later)


@BOTH
def test_the_weight_cap_counts_every_unexpired_holder(ctx, storage):
    now = 5_000_000
    scope = "uploads#ws_a"
    assert ctx.leases.acquire(_lease("u1", now + 3_600_000, 60, scope), 10, now, max_weight=100)
    assert not ctx.leases.acquire(_lease("u2", now + 3_600_000, 41, scope), 10, now, max_weight=100)
    assert ctx.leases.acquire(_lease("u2", now + 3_600_000, 40, scope), 10, now, max_weight=100)
    assert [(x.holder, x.weight) for x in ctx.leases.held(scope, now)] == [("u1", 60), ("u2", 40)]
    # Holding again renews (the same holder is not counted twice).
    assert ctx.leases.acquire(_lease("u2", now + 7_200_000, 40, scope), 10, now, max_weight=100)
    assert [x.expires_ms for x in ctx.leases.held(scope, now)] == [now + 3_600_000, now + 7_200_000]
    ctx.leases.release(scope, "u1")
    assert ctx.leases.acquire(_lease("u3", now + 3_600_000, 60, scope), 10, now, max_weight=100)
    assert sum(x.weight for x in ctx.leases.held(scope, now)) == 100


@BOTH
def test_concurrent_claims_never_pass_the_limit(ctx, storage):
    """40 threads claim one scope of 10 at once: exactly 10 hold it."""
    now = 1_000_000
    won: list[str] = []
    start = threading.Barrier(40)

    def claim(i: int) -> None:
        start.wait()
        if ctx.leases.acquire(_lease(f"t{i}", now + 40_000), 10, now):
            won.append(f"t{i}")

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = {x.holder for x in ctx.leases.held("waits#ws_a", now)}
    assert held == set(won)
    assert len(won) <= 10
    assert len(won) >= 1
