"""API keys: list, create (shown once), revoke."""
from __future__ import annotations

from chalice import Response

from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import Page, redirect, render, route, url, workspaces


@route("/keys")
def keys(page: Page):
    return _keys_page(page)


def _keys_page(page: Page, status: int = 200, new_key=None, error=None) -> Response:
    workspace = workspaces().get_workspace(page.workspace_id)
    listed = workspaces().list_keys(page.workspace_id)
    active = [k for k in listed if not k["revoked"]]
    return render(page, "keys.html", status=status, active="keys", workspace=workspace, keys=listed,
                  active_count=len(active), new_key=new_key, error=error)


@route("/keys", methods=("POST",))
def create_key(page: Page):
    try:
        created = workspaces().create_key(page.workspace_id, page.form().get("name", ""))
    except errors.DocpubError as exc:
        return _keys_page(page, exc.status, error=exc)
    # Shown once, in this answer only (no redirect, not cached).
    return _keys_page(page, 201, new_key=created)


@route("/keys/{key_id}/revoke", methods=("POST",))
def revoke_key(page: Page, key_id: str):
    workspaces().revoke_key(key_id, page.workspace_id)
    return redirect(url("/keys", m="revoked"))

