"""The workspace page: plan, limits, branding, most viewed documents."""
from __future__ import annotations

from chalice import Response

from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import Page, redirect, render, route, url
from chalicelib import wiring as registry


@route("/workspace")
def workspace_page(page: Page):
    return _workspace_page(page)


def _workspace_page(page: Page, status: int = 200, error=None, form=None) -> Response:
    data = registry.dashboard_pages().workspace_page(page.actor)
    return render(page, "workspace.html", status=status, active="workspace", workspace=data.workspace,
                  key_count=data.key_count, error=error, form=form or {}, most_viewed=data.most_viewed)


@route("/workspace/branding", methods=("POST",))
def branding(page: Page):
    form = page.form()
    try:
        registry.workspaces().set_branding(page.workspace_id, form.get("brand_name"), form.get("brand_tagline"),
                                           by=page.actor)
    except errors.DocpubError as exc:
        return _workspace_page(page, exc.status, error=exc, form=form)
    return redirect(url("/workspace", m="branding-saved"))


@route("/workspace/scanning", methods=("POST",))
def scanning_settings(page: Page):
    from chalicelib.entrypoints.http import validate
    from chalicelib.models import UpdateWorkspaceRequest

    form = page.form()
    try:
        request = validate(UpdateWorkspaceRequest, {
            name: form[name] for name in ("secret_scanning", "pii_scanning") if form.get(name)})
        registry.workspaces().update_settings(page.actor, request)
    except errors.DocpubError as exc:
        return _workspace_page(page, exc.status, error=exc, form=form)
    return redirect(url("/workspace", m="scanning-saved"))
