"""Sliding-log rate limiting, pure: at most `limit` events in any rolling window.

A clock-aligned window lets 2x through at a boundary and a token bucket lets
more than `limit` through in one window; a log of accepted timestamps does not.

`decide` is the one decision every limit uses: the API key's write limit
(claimed inside the version's transaction), and the standalone scopes of
services/ratelimits.py (unlock, feedback, sign-in, sign-up, dashboard saves).

`claim_sharded` spreads one limit over several logs (the API key's write limit
on DynamoDB: concurrent writers through one key claim different items instead
of racing for one). Shard i holds at most its share of the limit (the shares
sum to `limit`), so the logs together never hold more than `limit` events in
any window, and a writer is refused only when every shard is full, that is
when `limit` events are in the window: the rule stays exact.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from chalicelib.errors import RateLimited


@dataclass(frozen=True)
class SlotDecision:
    """The log after claiming a slot, or (`retry_after` set) a refusal."""
    new_log: list[int]
    limit: int
    remaining: int
    reset_seconds: int
    retry_after: Optional[int] = None

    @property
    def allowed(self) -> bool:
        return self.retry_after is None

    def headers(self) -> dict[str, str]:
        return {"X-RateLimit-Limit": str(self.limit),
                "X-RateLimit-Remaining": str(self.remaining),
                "X-RateLimit-Reset": str(self.reset_seconds)}

    def refuse(self, message: str) -> RateLimited:
        """The 429 for a refused decision, with Retry-After and X-RateLimit-*."""
        assert self.retry_after is not None, "only a refused decision is refused"
        error = RateLimited(self.retry_after, message)
        error.headers.update(self.headers())
        return error


def _seconds_until(ms: int) -> int:
    return max(1, math.ceil(ms / 1000))


def _recent(log: list[int], now_ms: int, window_ms: int) -> list[int]:
    return sorted(t for t in log if t > now_ms - window_ms)


def decide(log: list[int], now_ms: int, limit: int, window_seconds: int, count: int = 1) -> SlotDecision:
    """Claim a slot (`count` slots: all or none) in `log` (timestamps in ms), or refuse with
    the wait until enough free. More slots than `limit` are never granted (retry: the window)."""
    window_ms = window_seconds * 1000
    recent = _recent(log, now_ms, window_ms)
    if len(recent) + count > limit:
        # Refused; enough slots free when the newest of the events in the way leaves the window.
        blocking = len(recent) + count - 1 - limit
        retry = (window_seconds if not 0 <= blocking < len(recent)
                 else min(window_seconds, _seconds_until(recent[blocking] + window_ms - now_ms)))
        return SlotDecision(new_log=recent, limit=limit, remaining=max(0, limit - len(recent)),
                            reset_seconds=retry, retry_after=retry)
    new_log = recent + [now_ms] * count
    return SlotDecision(
        new_log=new_log,
        limit=limit,
        remaining=limit - len(new_log),
        reset_seconds=min(window_seconds, _seconds_until(new_log[0] + window_ms - now_ms)),
    )


def take_slot(log: list[int], now_ms: int, limit: int, window_seconds: int,
              message: Optional[str] = None) -> SlotDecision:
    """`decide`, raising RateLimited (Retry-After, X-RateLimit-*) on a refusal."""
    decision = decide(log, now_ms, limit, window_seconds)
    if not decision.allowed:
        raise decision.refuse(message or f"Rate limit of {limit} per {window_seconds} s reached; "
                                         f"retry in {decision.retry_after} s.")
    return decision


def current_headers(log: list[int], now_ms: int, limit: int, window_seconds: int) -> dict[str, str]:
    """X-RateLimit-* for an answer that claimed no slot (refusals, replays)."""
    window_ms = window_seconds * 1000
    recent = _recent(log, now_ms, window_ms)
    reset = min(window_seconds, _seconds_until(recent[0] + window_ms - now_ms)) if recent else 0
    return {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(max(0, limit - len(recent))),
            "X-RateLimit-Reset": str(reset)}


@dataclass(frozen=True)
class ShardLog:
    """One shard of a sharded log as read: its number, sequence (for the
    conditional write) and accepted event times."""
    shard: int
    seq: int
    log: list[int]


@dataclass(frozen=True)
class ShardClaim:
    """Where an accepted event goes: `shard`'s log becomes `new_log`, if it is still at `expected_seq`."""
    shard: int
    expected_seq: int
    new_log: list[int]


def shard_capacity(index: int, shards: int, limit: int) -> int:
    """Shard `index`'s share of `limit` (the shares of `shards` shards sum to `limit`)."""
    return limit // shards + (1 if index < limit % shards else 0)


def claim_sharded(logs: Sequence[ShardLog], now_ms: int, limit: int, window_seconds: int,
                  choose: Callable[[list[Any]], ShardClaim] = secrets.choice) -> tuple[SlotDecision, Optional[ShardClaim]]:
    """`decide` on the union of the shards' logs, and (if allowed) a shard with room,
    chosen at random among those with room so concurrent writers spread out."""
    window_ms = window_seconds * 1000
    decision = decide([t for s in logs for t in s.log], now_ms, limit, window_seconds)
    if not decision.allowed:
        return decision, None
    ordered = sorted(logs, key=lambda s: s.shard)
    open_shards = []
    for index, shard in enumerate(ordered):
        recent = _recent(shard.log, now_ms, window_ms)
        if len(recent) < shard_capacity(index, len(ordered), limit):
            open_shards.append(ShardClaim(shard.shard, shard.seq, recent + [now_ms]))
    if not open_shards:
        # Only after the limit was lowered below what the shards already hold.
        return SlotDecision(decision.new_log[:-1], limit, 0, 1, retry_after=1), None
    return decision, choose(open_shards)
