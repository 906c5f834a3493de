"""Housekeeping: remove S3 objects that no stored version refers to, and finish
deletes that were interrupted.

An object is written before the transaction that references it. If that
transaction is refused, the object is deleted at once; if its outcome is
unknown (a timeout may hide a commit) or the process dies in between, the
object stays. Objects younger than the grace period may belong to a write in
flight, so only older ones are removed.

A DELETE first marks the document `deleting` (invisible from then on) and then
removes objects and items; if it is cut off and never retried, the sweep finds
the marked document through its remaining objects and finishes the job.

It also sends again the CDN invalidations of withdrawn links that the CDN did
not accept at the time (services/cdn.py).
"""
from __future__ import annotations

from typing import Any, Optional

from chalicelib.ports import FILE_ROOT
from chalicelib.services.context import Context

GRACE_SECONDS = 3600


def sweep_orphans(ctx: Context, grace_seconds: int = GRACE_SECONDS) -> dict[str, Any]:
    from chalicelib.services.documents import DocumentService

    now = ctx.clock()
    # Streamed: the listing comes a page at a time and only the current document's
    # versions are kept (a document's objects are listed one after another), so
    # memory stays constant whatever the bucket holds.
    known: dict[str, Optional[set[str]]] = {}
    checked = deleted = finished = 0
    for key, modified in ctx.blobs.iter_keys("documents/"):
        checked += 1
        parts = key.split("/")
        if len(parts) != 4 or not parts[3].endswith((".html", ".md")):
            continue
        document_id, version_id = parts[2], parts[3].rsplit(".", 1)[0]
        if document_id not in known:
            known.clear()
            doc, versions = ctx.documents.get_with_versions(document_id)
            if doc is not None and doc.deleting:
                DocumentService(ctx).finish_delete(doc)  # idempotent, safe beside a running delete
                finished += 1
                known[document_id] = None
            else:
                known[document_id] = {v.version_id for v in versions} if doc else set()
        versions_known = known[document_id]
        if versions_known is None:
            continue  # removed with its document
        if version_id not in versions_known and now - modified > grace_seconds:
            ctx.blobs.delete(key)
            deleted += 1
    from chalicelib.services import cdn, content

    # Bundle files: per workspace, those no version refers to (and untouched for the grace).
    workspaces = {key.split("/")[1] for key, _ in ctx.blobs.iter_keys(FILE_ROOT) if key.count("/") == 2}
    files_deleted = sum(content.sweep_files(ctx, ws, min(grace_seconds, content.FILE_GRACE_SECONDS))
                        for ws in sorted(workspaces))
    from chalicelib.services.downloads import sweep_downloads
    from chalicelib.services.uploads import sweep_uploads

    return {"checked": checked, "deleted": deleted, "deletes_finished": finished,
            "files_deleted": files_deleted, "uploads_deleted": sweep_uploads(ctx),
            "downloads_deleted": sweep_downloads(ctx), "cdn": cdn.retry_pending(ctx)}
