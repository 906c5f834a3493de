"""Housekeeping: remove S3 objects that no stored version refers to.

An object is written before the transaction that references it; if that
transaction fails and the clean-up after it fails too, the object is orphaned.
Objects younger than the grace period may belong to a write in flight.
"""
from __future__ import annotations

import time
from typing import Optional

from chalicelib.services.context import Context, default_context

GRACE_SECONDS = 3600


def sweep_orphans(ctx: Optional[Context] = None, grace_seconds: int = GRACE_SECONDS) -> dict:
    ctx = ctx or default_context()
    now = ctx.clock() if ctx.clock else time.time()
    known: dict[str, set[str]] = {}
    checked = deleted = 0
    for key, modified in ctx.blobs.list_keys("documents/"):
        checked += 1
        parts = key.split("/")
        if len(parts) != 4 or not parts[3].endswith(".html"):
            continue
        document_id, version_id = parts[2], parts[3][:-len(".html")]
        if document_id not in known:
            doc, versions = ctx.documents.get_with_versions(document_id)
            known[document_id] = {v["version_id"] for v in versions} if doc else set()
        if version_id not in known[document_id] and now - modified > grace_seconds:
            ctx.blobs.delete(key)
            deleted += 1
    return {"checked": checked, "deleted": deleted}
