"""Health: can the service reach its storage?"""
from __future__ import annotations

from chalicelib.errors import ServiceUnavailable
from chalicelib.services.context import Context


def check_storage(ctx: Context) -> None:
    try:
        ctx.health.check()
    except Exception as exc:  # any failure means "not healthy", said cleanly
        raise ServiceUnavailable("Storage is not reachable.") from exc
