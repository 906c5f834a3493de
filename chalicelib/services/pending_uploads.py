"""Pending uploads (created, neither published nor expired) as the quota sees them:
one lease each in the workspace's `uploads#<workspace>` scope (ports/leases.py),
weighing its declared size. Read by services/uploads.py (which takes and gives the
leases), documents (a version's quota keeps room for them) and workspaces (`usage`)."""
from __future__ import annotations

from chalicelib.ports.records import Lease
from chalicelib.services.context import Context


def upload_scope(workspace_id: str) -> str:
    return f"uploads#{workspace_id}"


def pending_uploads(ctx: Context, workspace_id: str, now_ms: int) -> list[Lease]:
    """The workspace's pending uploads' leases, `weight` being each one's declared size."""
    return ctx.leases.held(upload_scope(workspace_id), now_ms)
