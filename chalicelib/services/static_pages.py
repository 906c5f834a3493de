"""Public share links as static objects (issue 38): what a viewer of a public link
gets is the same for everyone, so it is written once, when it changes, and served by
the CDN from storage with no function and no database on a cache miss.

A link is *public* when its document is live, the link enabled, with no passphrase, no
expiry and public access (`is_public`). For such a link `sync` writes (ports/static.py):

- `/d/<share>`: the share page of the latest version, as the function renders it for
  anyone, with its CSP in a `<meta>` tag and a view beacon that is a GET of
  `/d/<share>/seen?v=N` (answered by the CDN from a cached empty object and counted
  from its logs: services/view_logs.py);
- `/d/<share>/v/<version>` (`…/index.html` for a bundle): the version's content, on the
  content site when there is a content domain;
- `/d/<share>/seen`: the beacon's empty object.

For any other link it removes every object of the link. Everything else (pinned
versions `?v=N`, passphrases, expiry, workspace or recipient access, comments, live
refresh, feedback) stays on the function: the static page calls it like the function's
page does.

When: after every change that alters what a link shows or who may see it: a new
version (publish, edit), the link's settings, title or description, a passphrase set
or removed, a rotation (the old id is removed, the new one written), deletes, and the
workspace's branding or plan. Withdrawals go through `cdn.withdraw`, which syncs before
it invalidates. A new version or a branding change replaces the objects without an
invalidation (the page is cached at most 60 s: `links.EDGE_TTL_SECONDS`; an
invalidation per publish would cost more than the publish).

Races: `sync` reads the link (strongly consistent), writes, and reads it again; if it
is no longer public the objects are removed, and if what the page shows moved meanwhile
it writes again (a withdrawal that committed before the second read is seen by it; one
that committed after it removes the objects itself). A failure (storage down) removes
what it can and leaves the link pending (`cdn.retry_pending` syncs it again): a static
copy is never the only thing standing between a withdrawal and the viewer.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from chalicelib.domain import links
from chalicelib.domain.links import link_ref
from chalicelib.ports.records import Document, ShareLink, Workspace
from chalicelib.ports.static import SITES
from chalicelib.services.context import Context

log = logging.getLogger("docpub")

# What a pending entry (ports/cdn.py PendingInvalidationRepository) of a link whose
# static copies could not be synced starts with; never a CDN path.
PENDING_PREFIX = "static:"
ATTEMPTS = 3


def is_public(share: Optional[ShareLink], doc: Optional[Document], share_id: str, now_ms: int) -> bool:
    """The same page for every viewer: live, enabled, no passphrase, no expiry, public access."""
    return (share is not None and doc is not None and not doc.deleting and doc.share_id == share_id
            and links.enabled(doc) and not doc.passphrase_hash and links.expires_ms(doc) is None
            and (doc.share_access or "public") == "public" and not links.expired(doc, now_ms))


def _shown(doc: Document, workspace: Optional[Workspace]) -> tuple[Any, ...]:
    """What the static page depends on: a change of any of it means writing again."""
    brand = (workspace.plan, workspace.brand_name, workspace.brand_tagline) if workspace else None
    return (doc.latest_version_id, doc.version_count, doc.title, doc.description, doc.latest_content, brand)


def sync(ctx: Context, share_id: Optional[str], reason: str) -> None:
    """Make the link's static objects match what the link is now. Never raises."""
    if not share_id or not ctx.static.enabled:
        return
    try:
        _sync(ctx, share_id)
    except Exception as exc:  # noqa: BLE001 - storage trouble: remove what we can, retry later
        error = f"{type(exc).__name__}: {exc}"[:500]
        log.warning("static copies not synced; kept for retry",
                    extra={"link": link_ref(share_id), "reason": reason, "error": error})
        try:
            remove(ctx, share_id)
        except Exception:  # noqa: BLE001 - the pending entry below brings it back
            pass
        try:
            ctx.cdn_pending.add(PENDING_PREFIX + share_id, reason, ctx.now_ms(), error)
        except Exception:  # noqa: BLE001
            log.exception("could not record a pending static sync", extra={"link": link_ref(share_id)})


def remove(ctx: Context, share_id: str) -> None:
    for site in SITES:
        ctx.static.delete_link(site, share_id)


def _sync(ctx: Context, share_id: str) -> None:
    for _attempt in range(ATTEMPTS):
        looked_up = ctx.documents.get_for_share(share_id, None, consistent=True)
        share, doc, workspace, _ = looked_up
        if doc is None or not is_public(share, doc, share_id, ctx.now_ms()):
            remove(ctx, share_id)
            return
        # The share surface draws it (entrypoints/share_pages.static_objects, given by wiring):
        # the page exactly as the function renders it for anyone.
        for site, obj in ctx.static_render(ctx, share_id, looked_up):
            if obj.path == f"/d/{share_id}/seen" and ctx.static.get(site, obj.path) is not None:
                continue  # the beacon's object never changes: a GET is a tenth of a PUT's price
            ctx.static.put(site, obj)
        share, again, workspace_now, _ = ctx.documents.get_for_share(share_id, None, consistent=True)
        if again is None or not is_public(share, again, share_id, ctx.now_ms()):
            remove(ctx, share_id)
            return
        if _shown(again, workspace_now) == _shown(doc, workspace):
            return
    remove(ctx, share_id)  # it kept moving: nothing static rather than something stale


def sync_workspace(ctx: Context, workspace_id: str, reason: str) -> int:
    """Branding or plan changed: write every public link of the workspace again; the
    number synced."""
    if not ctx.static.enabled:
        return 0
    synced = 0
    for listing in ctx.documents.list_all(workspace_id):
        if listing.share_id and links.enabled(listing) and listing.share_expires_ms is None \
                and (listing.share_access or "public") == "public":
            sync(ctx, listing.share_id, reason)
            synced += 1
    return synced


def sync_all(ctx: Context) -> dict[str, int]:
    """Write the static copy of every public link (once, after deploying issue 38: links
    published before it have none and are served by the function until they change). The
    workspaces are those with documents in storage; safe to repeat."""
    if not ctx.static.enabled:
        return {"workspaces": 0, "links": 0}
    workspaces: list[str] = []
    for key, _modified in ctx.blobs.iter_keys("documents/"):
        workspace_id = key.split("/")[1] if key.count("/") >= 2 else ""
        if workspace_id and (not workspaces or workspaces[-1] != workspace_id):
            workspaces.append(workspace_id)
    unique = list(dict.fromkeys(workspaces))
    return {"workspaces": len(unique), "links": sum(sync_workspace(ctx, w, "backfill") for w in unique)}
