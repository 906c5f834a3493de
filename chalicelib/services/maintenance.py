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


# ------------------------------------------------------------------ recounting bundle files (backfill)

def workspaces_with_files(ctx: Context) -> list[str]:
    """Every workspace that has bundle files in the blob store (files/<workspace>/<sha256>),
    streamed from the listing: the ones a recount can concern."""
    found: set[str] = set()
    for key, _modified in ctx.blobs.iter_keys(FILE_ROOT):
        parts = key.split("/")
        if len(parts) == 3 and parts[1]:
            found.add(parts[1])
    return sorted(found)


def recount_files(ctx: Context, workspace_ids: Optional[list[str]] = None) -> dict[str, Any]:
    """`make admin ARGS="[--aws] recount-files [WORKSPACE_ID ...]"`: count each workspace's
    bundle files again from its live versions and set its file counts and storage usage
    to match (DocumentRepository.recount_files). Files stored on DynamoDB before the
    storage quota counted them (issue 24) were in no workspace's usage, and a delete did
    not release them; this backfills them. Idempotent: a second run changes nothing.
    Without ids: every workspace with files in the blob store."""
    from dataclasses import asdict

    results: list[dict[str, Any]] = []
    for workspace_id in workspace_ids or workspaces_with_files(ctx):
        if ctx.workspaces.get(workspace_id) is None:
            results.append({"workspace_id": workspace_id, "error": "no such workspace"})
            continue
        results.append(asdict(ctx.documents.recount_files(workspace_id)))
    return {"workspaces": results, "changed": sum(int(r.get("changed", 0)) for r in results),
            "bytes_added": sum(int(r.get("bytes_added", 0)) for r in results)}


def index_invitations(ctx: Context) -> dict[str, Any]:
    """`make admin ARGS="[--aws] index-invitations"`: the upgrade step for invitations made
    before the welcome page of a person in no workspace listed them by email
    (PeopleRepository.index_invitations). On DynamoDB those lack GSI2 `INVITEE#<email>` and
    never showed there; each pending one gets it (a conditional write: never over a newer
    one). Idempotent: a second run indexes nothing. The embedded store has nothing to add."""
    from dataclasses import asdict

    return asdict(ctx.people.index_invitations(ctx.now_ms()))
