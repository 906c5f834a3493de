"""The one cap on waiting requests (API contract 4, "Bounds, second pass"): at most
`limits.WAITS_PER_WORKSPACE` requests of a workspace wait at once, on every surface
(`wait=` on REST lists, MCP `wait_for_*`); another is 429 `rate_limited` with
`Retry-After: 1`.

Every waiting request waits inside `wait_slot(ctx, workspace_id)`:

    with wait_slot(self.ctx, workspace_id):
        ... read, sleep, read again ...

A slot is a lease in storage (ports/leases.py), so the cap holds across processes
and Lambda invocations; it is given back when the wait ends (answer, error or
cancellation), and a wait that died without giving it back (killed process,
Lambda timeout) stops counting `limits.WAIT_LEASE_SECONDS` after it began.
"""
from __future__ import annotations

import logging
import secrets
from contextlib import contextmanager
from typing import Iterator

from chalicelib.domain import limits
from chalicelib.errors import RateLimited
from chalicelib.ports.errors import StorageError
from chalicelib.ports.records import Lease
from chalicelib.services.context import Context

log = logging.getLogger(__name__)


def wait_scope(workspace_id: str) -> str:
    return f"waits#{workspace_id}"


def refusal() -> RateLimited:
    return RateLimited(1, f"At most {limits.WAITS_PER_WORKSPACE} requests of a workspace wait at once; "
                          "retry in 1 s (or wait without `wait`).")


@contextmanager
def wait_slot(ctx: Context, workspace_id: str) -> Iterator[None]:
    """Hold one of the workspace's waiting slots for the body, or raise 429."""
    now_ms = ctx.now_ms()
    lease = Lease(scope=wait_scope(workspace_id), holder="w_" + secrets.token_urlsafe(12),
                  expires_ms=now_ms + limits.WAIT_LEASE_SECONDS * 1000)
    if not ctx.leases.acquire(lease, limits.WAITS_PER_WORKSPACE, now_ms):
        raise refusal()
    try:
        yield
    finally:
        try:
            ctx.leases.release(lease.scope, lease.holder)
        except StorageError:  # it lapses on its own (WAIT_LEASE_SECONDS)
            log.warning("wait slot not released; it lapses at its expiry", exc_info=True)
