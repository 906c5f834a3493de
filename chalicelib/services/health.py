"""Health: can the service reach its storage?"""
from __future__ import annotations

from chalicelib.errors import ServiceUnavailable
from chalicelib.ports import StorageFull
from chalicelib.services.context import Context


def check_storage(ctx: Context) -> None:
    """ServiceUnavailable when storage is unreachable; StorageFull (readable, but writes
    are refused) is raised as it is: the caller answers "degraded"."""
    try:
        ctx.health.check()
    except StorageFull:
        raise  # degraded, not down: the caller says so
    except Exception as exc:  # any failure means "not healthy", said cleanly
        raise ServiceUnavailable("Storage is not reachable.") from exc
