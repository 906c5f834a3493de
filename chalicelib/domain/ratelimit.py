"""Sliding-log rate limiting, pure: at most `limit` events in any rolling window.

A clock-aligned window lets 2x through at a boundary and a token bucket lets
more than `limit` through in one window; a log of accepted timestamps does not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from chalicelib.errors import RateLimited


@dataclass(frozen=True)
class SlotDecision:
    new_log: list[int]
    limit: int
    remaining: int
    reset_seconds: int

    def headers(self) -> dict[str, str]:
        return {"X-RateLimit-Limit": str(self.limit),
                "X-RateLimit-Remaining": str(self.remaining),
                "X-RateLimit-Reset": str(self.reset_seconds)}


def _seconds_until(ms: int) -> int:
    return max(1, math.ceil(ms / 1000))


def take_slot(log: list[int], now_ms: int, limit: int, window_seconds: int) -> SlotDecision:
    """Claim a slot in `log` (timestamps in ms) or raise RateLimited with Retry-After."""
    window_ms = window_seconds * 1000
    recent = sorted(t for t in log if t > now_ms - window_ms)
    if len(recent) >= limit:
        # The request is refused; a slot frees when the oldest counted write leaves.
        oldest_blocking = recent[len(recent) - limit]
        retry = min(window_seconds, _seconds_until(oldest_blocking + window_ms - now_ms))
        error = RateLimited(retry, f"Write rate limit of {limit} per {window_seconds} s reached; "
                                   f"retry in {retry} s.")
        error.headers.update({"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0",
                              "X-RateLimit-Reset": str(retry)})
        raise error
    new_log = recent + [now_ms]
    return SlotDecision(
        new_log=new_log,
        limit=limit,
        remaining=limit - len(new_log),
        reset_seconds=min(window_seconds, _seconds_until(new_log[0] + window_ms - now_ms)),
    )


def current_headers(log: list[int], now_ms: int, limit: int, window_seconds: int) -> dict[str, str]:
    """X-RateLimit-* for an answer that claimed no slot (refusals, replays)."""
    window_ms = window_seconds * 1000
    recent = sorted(t for t in log if t > now_ms - window_ms)
    reset = min(window_seconds, _seconds_until(recent[0] + window_ms - now_ms)) if recent else 0
    return {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(max(0, limit - len(recent))),
            "X-RateLimit-Reset": str(reset)}
