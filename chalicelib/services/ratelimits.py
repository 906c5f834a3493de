"""Standalone sliding-log limits (per IP, per account, per workspace), claimed
with a conditional write on their own item. The API key's write limit is not
one of these: it rides in the version's transaction (see documents.py)."""
from __future__ import annotations

from chalicelib.domain.ratelimit import take_slot
from chalicelib.errors import RateLimited
from chalicelib.services.context import Context

CLAIM_ATTEMPTS = 5


def human_wait(seconds: int) -> str:
    return f"{seconds} seconds" if seconds < 90 else f"{(seconds + 59) // 60} minutes"


def hit(ctx: Context, scope: str, limit: int, window: int, what: str) -> None:
    """Count one event in `scope`, or raise 429 when `limit` per `window` s is used up."""
    for _attempt in range(CLAIM_ATTEMPTS):
        now_ms = ctx.now_ms()
        item = ctx.rates.get(scope)
        try:
            decision = take_slot((item or {}).get("hits", []), now_ms, limit, window)
        except RateLimited as exc:
            raise RateLimited(exc.retry_after_seconds,
                              f"{what}; try again in {human_wait(exc.retry_after_seconds)}.") from None
        if ctx.rates.claim(scope, (item or {}).get("seq", 0), decision.new_log, now_ms // 1000 + window + 60):
            return
    raise RateLimited(1, f"{what}; try again in a moment.")


def check(ctx: Context, scope: str, limit: int, window: int, what: str) -> None:
    """429 when `scope` has used up `limit` per `window` s; counts nothing (for budgets
    of failures, which are recorded with `hit` only once they happen)."""
    item = ctx.rates.get(scope)
    try:
        take_slot((item or {}).get("hits", []), ctx.now_ms(), limit, window)
    except RateLimited as exc:
        raise RateLimited(exc.retry_after_seconds,
                          f"{what}; try again in {human_wait(exc.retry_after_seconds)}.") from None


def record(ctx: Context, scope: str, limit: int, window: int, what: str) -> None:
    """Count one event in `scope` (like `hit`), never refusing: the event already happened."""
    try:
        hit(ctx, scope, limit, window, what)
    except RateLimited:
        pass  # the budget is already used up; the log is full enough to refuse what follows


def recent(ctx: Context, scope: str, window: int) -> list[int]:
    """Times (ms) of the events of `scope` in the last `window` s, oldest first."""
    now_ms = ctx.now_ms()
    return sorted(t for t in ((ctx.rates.get(scope) or {}).get("hits", [])) if t > now_ms - window * 1000)
