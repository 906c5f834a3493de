"""Edge coherence: every change that withdraws access to a share link asks the CDN
to drop what it holds of that link.

The guarantee does not rest on this: every public share answer may be cached at
most 60 s and never past the link's expiry (entrypoints/share.py), so a
withdrawal is honoured at the edge within 60 s even if the CDN is never told.
The invalidation makes it happen in seconds instead. It is best effort: it never
blocks or fails the API call that caused it (one try, short timeouts); a failure
is logged and recorded as pending, and `retry_pending` (the maintenance sweep,
`make admin ARGS=cdn-retry`) tries again; `make admin ARGS=cdn-pending` lists them.

One wildcard path per withdrawal, `/d/<share_id>*`: the wrapper with any `?v=N`,
every content URL, unlock and feedback. CloudFront counts a wildcard as one path
(1,000 free paths a month) and allows 15 wildcard invalidations in progress.
"""
from __future__ import annotations

import logging
from typing import Any

from chalicelib.domain.links import link_ref
from chalicelib.ports.records import PendingInvalidation
from chalicelib.services.context import Context

log = logging.getLogger("docpub")

# CloudFront allows 15 wildcard paths in progress per distribution: a retry sends at most that.
RETRY_BATCH = 15


def share_paths(share_id: str) -> list[str]:
    """What a withdrawal of one link invalidates: everything under its path. Share ids
    all have the same length, so the wildcard never reaches another link."""
    return [f"/d/{share_id}*"]




def withdraw(ctx: Context, share_id: str, reason: str) -> bool:
    """Ask the CDN to forget the link (`reason`: delete, passphrase, link settings,
    rotate); True when the request was accepted. Never raises: a failure is logged
    and kept for a retry."""
    from chalicelib.services import static_pages

    static_pages.sync(ctx, share_id, reason)  # the static copy first: removed before the edge forgets
    paths = share_paths(share_id)
    try:
        ctx.cdn.invalidate(paths)
        return True
    except Exception as exc:  # noqa: BLE001 - best effort, whatever went wrong
        error = f"{type(exc).__name__}: {exc}"[:500]
        log.warning("cdn invalidation failed; kept for retry",
                    extra={"link": link_ref(share_id), "reason": reason, "error": error})
        try:
            ctx.cdn_pending.add(paths[0], reason, ctx.now_ms(), error)
        except Exception:  # noqa: BLE001 - the 60 s cache bound still holds
            log.exception("could not record a pending cdn invalidation", extra={"link": link_ref(share_id)})
        return False


def pending(ctx: Context, limit: int = RETRY_BATCH) -> list[PendingInvalidation]:
    """Invalidations not yet accepted by the CDN, oldest first."""
    return ctx.cdn_pending.list(limit) if ctx.cdn_pending is not None else []


def retry_pending(ctx: Context, limit: int = RETRY_BATCH) -> dict[str, Any]:
    """Send every pending path again, in one invalidation; drop those accepted. Pending
    static syncs (`static:<share>`, services/static_pages.py) are synced again."""
    from chalicelib.services import static_pages

    items = pending(ctx, limit)
    resynced = 0
    for item in [i for i in items if i.path.startswith(static_pages.PENDING_PREFIX) and ctx.static.enabled]:
        ctx.cdn_pending.remove(item.path)  # sync records it again if it fails again
        static_pages.sync(ctx, item.path[len(static_pages.PENDING_PREFIX):], item.reason)
        resynced += 1
    result = _invalidate_pending(ctx, [i for i in items if not i.path.startswith(static_pages.PENDING_PREFIX)])
    return {**result, "static_synced": resynced} if resynced else result


def _invalidate_pending(ctx: Context, items: list[PendingInvalidation]) -> dict[str, Any]:
    if not items:
        return {"pending": 0, "invalidated": 0}
    if not getattr(ctx.cdn, "enabled", True):  # e.g. the admin CLI run without the distribution's id
        return {"pending": len(items), "invalidated": 0,
                "error": "no CDN configured: set DOCPUB_CDN_DISTRIBUTION_ID (or DOCPUB_CDN_DISTRIBUTION_PARAMETER)"}
    paths = [item.path for item in items]
    try:
        ctx.cdn.invalidate(paths)
    except Exception as exc:  # noqa: BLE001
        error = f"{type(exc).__name__}: {exc}"[:500]
        log.warning("cdn invalidation retry failed", extra={"paths": len(paths), "error": error})
        for item in items:
            ctx.cdn_pending.add(item.path, item.reason, ctx.now_ms(), error)
        return {"pending": len(items), "invalidated": 0, "error": error}
    for path in paths:
        ctx.cdn_pending.remove(path)
    return {"pending": 0, "invalidated": len(paths)}
