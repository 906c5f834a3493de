"""Standalone sliding-log limits (per IP, per account, per workspace, per document
and IP), each claimed with a conditional write on its own log. The decision is
domain/ratelimit.decide; the limits and their wording are domain/limits.py.

The API key's write limit is not one of these: its slot is claimed inside the
version's transaction (see documents.py), with the same decision function.
A feedback post claims its slot inside the feedback's transaction: it takes
`next_claim` and hands it to storage.
"""
from __future__ import annotations

import hashlib
import hmac

from chalicelib import config
from chalicelib.ports import RateClaim
from chalicelib.domain import limits
from chalicelib.domain.ratelimit import decide
from chalicelib.errors import RateLimited
from chalicelib.services.context import Context

CLAIM_ATTEMPTS = 5
# Rate logs outlive their window a little (storage TTL is cleanup only).
EXPIRY_MARGIN_SECONDS = 60


def scope_key(kind: str, *parts: str) -> str:
    return "#".join((kind,) + parts)


def viewer_scope(kind: str, document_id: str, client_ip: str) -> str:
    """Rate-log scope per document per client IP; the IP is stored only as a keyed hash."""
    digest = hmac.new(config.secret_key().encode(), client_ip.encode(), hashlib.sha256).hexdigest()[:32]
    return scope_key(kind, document_id, digest)


def next_claim(ctx: Context, scope: str, rate: tuple[int, int], what: str, count: int = 1) -> RateClaim:
    """The next state of `scope`'s log with this event (`count` events) counted, for storage
    to write conditionally; or RateLimited (Retry-After) when `rate` has no room for them."""
    limit, window = rate
    now_ms = ctx.now_ms()
    item = ctx.rates.get(scope)
    decision = decide(list(item.hits) if item else [], now_ms, limit, window, count)
    if not decision.allowed:
        assert decision.retry_after is not None
        raise RateLimited(decision.retry_after,
                          f"{what}; try again in {limits.human_wait(decision.retry_after)}.")
    return RateClaim(scope, item.seq if item else 0, decision.new_log,
                     now_ms // 1000 + window + EXPIRY_MARGIN_SECONDS)


def contended(what: str) -> RateLimited:
    """Every claim attempt lost a race with another event in the same scope."""
    return RateLimited(1, f"{what}; try again in a moment.")


def hit(ctx: Context, scope: str, rate: tuple[int, int], what: str, count: int = 1) -> None:
    """Count one event (`count` events, all or none) in `scope`, or raise 429 when `rate`
    (limit, window s) has no room for them."""
    for _attempt in range(CLAIM_ATTEMPTS):
        claim = next_claim(ctx, scope, rate, what, count)
        if ctx.rates.claim(claim.scope, claim.expected_seq, claim.new_log, claim.expires_at):
            return
    raise contended(what)


def check(ctx: Context, scope: str, rate: tuple[int, int], what: str) -> None:
    """429 when `scope` has used up `rate` (limit, window s); counts nothing. For
    budgets of failures, which are recorded (`record`) only once they happen."""
    next_claim(ctx, scope, rate, what)


def record(ctx: Context, scope: str, rate: tuple[int, int], what: str) -> None:
    """Count one event in `scope` (like `hit`), never refusing: the event already happened."""
    try:
        hit(ctx, scope, rate, what)
    except RateLimited:
        pass  # the budget is already used up: the log is full enough to refuse what follows


def recent(ctx: Context, scope: str, window: int) -> list[int]:
    """Times (ms) of the events of `scope` in the last `window` s, oldest first."""
    now_ms = ctx.now_ms()
    item = ctx.rates.get(scope)
    return sorted(t for t in (item.hits if item else ()) if t > now_ms - window * 1000)
