"""The workspace page: plan, limits, branding, most viewed documents."""
from __future__ import annotations

from chalice import Response

from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import Page, optional_service, redirect, render, route, url, workspaces


@route("/workspace")
def workspace_page(page: Page):
    return _workspace_page(page)


def _workspace_page(page: Page, status: int = 200, error=None, form=None) -> Response:
    workspace = workspaces().get_workspace(page.workspace_id)
    active_keys = [k for k in workspaces().list_keys(page.workspace_id) if not k["revoked"]]
    views = optional_service("views")
    return render(page, "workspace.html", status=status, active="workspace", workspace=workspace,
                  key_count=len(active_keys), error=error, form=form or {},
                  most_viewed=views.most_viewed(page.actor) if views else None)


@route("/workspace/branding", methods=("POST",))
def branding(page: Page):
    form = page.form()
    try:
        workspaces().set_branding(page.workspace_id, form.get("brand_name"), form.get("brand_tagline"))
    except errors.DocpubError as exc:
        return _workspace_page(page, exc.status, error=exc, form=form)
    return redirect(url("/workspace", m="branding-saved"))
