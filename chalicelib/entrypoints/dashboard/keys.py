"""API keys: list, create (shown once), revoke."""
from __future__ import annotations

from chalice import Response

from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import Page, redirect, render, route, url
from chalicelib import wiring as registry


@route("/keys")
def keys(page: Page):
    return _keys_page(page)


def _keys_page(page: Page, status: int = 200, new_key=None, error=None) -> Response:
    data = registry.dashboard_pages().keys_page(page.actor)
    return render(page, "keys.html", status=status, active="keys", workspace=data.workspace, keys=data.keys,
                  active_count=data.active_count, new_key=new_key, error=error)


@route("/keys", methods=("POST",))
def create_key(page: Page):
    try:
        created = registry.workspaces().create_key(page.workspace_id, page.form().get("name", ""), by=page.actor)
    except errors.DocpubError as exc:
        return _keys_page(page, exc.status, error=exc)
    # Shown once, in this answer only (no redirect, not cached).
    return _keys_page(page, 201, new_key=created)


@route("/keys/{key_id}/revoke", methods=("POST",))
def revoke_key(page: Page, key_id: str):
    registry.workspaces().revoke_key(key_id, page.workspace_id, by=page.actor)
    return redirect(url("/keys", m="revoked"))
