"""Health: can the service reach its storage?"""
from __future__ import annotations

from typing import Optional

from chalicelib.errors import ServiceUnavailable
from chalicelib.services.context import Context


def check_storage(ctx: Optional[Context] = None) -> None:
    from chalicelib.services import registry

    from chalicelib.ports import StorageFull

    try:
        (ctx or registry.default_context()).health.check()
    except StorageFull:
        raise  # degraded, not down: the caller says so
    except Exception as exc:  # any failure means "not healthy", said cleanly
        raise ServiceUnavailable("Storage is not reachable.") from exc
