"""The workspace page: plan, limits, branding, most viewed documents."""
from __future__ import annotations

from chalice import Response

from chalicelib import errors
from chalicelib.domain import roles
from chalicelib.entrypoints.dashboard.web import Page, redirect, render, route, url
from chalicelib import wiring as registry


@route("/workspace")
def workspace_page(page: Page):
    return _workspace_page(page)


def _workspace_page(page: Page, status: int = 200, error=None, form=None) -> Response:
    from chalicelib import config

    data = registry.dashboard_pages().workspace_page(page.actor)
    sso = registry.sso()
    return render(page, "workspace.html", status=status, active="workspace", workspace=data.workspace,
                  key_count=data.key_count, error=error, form=form or {}, most_viewed=data.most_viewed,
                  export=_export_shown(page),
                  sso_enabled=sso.enabled, sso_name=config.oidc_name(), auto_join=sso.auto_join(page.workspace_id),
                  sso_domain=page.signed_in.sso_domain)


def _export_shown(page: Page):
    """The export this page was sent back to follow (`?export=`), with its status; None if
    there is none, or it is not one the person may see (it is then simply not shown)."""
    export_id = page.query.get("export")
    if not export_id or not roles.allows(page.actor.role, "get_export"):
        return None
    try:
        return {"export_id": export_id, **registry.exports().status(page.actor, export_id).model_dump()}
    except errors.NotFound:
        return None


@route("/workspace/export", methods=("POST",))
def start_export(page: Page):
    """The "Export workspace" button (owners): start it, then follow it on the workspace page."""
    try:
        started = registry.exports().start(page.actor)
    except errors.DocpubError as exc:
        return _workspace_page(page, exc.status, error=exc)
    return redirect(url("/workspace", export=started.export_id) + "#export")


@route("/workspace/exports/{export_id}", answers_json=True)
def export_status(page: Page, export_id: str):
    """What the workspace page's script polls while an export runs (the session's owner)."""
    from chalicelib.entrypoints.http import json_response

    return json_response(registry.exports().status(page.actor, export_id))


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
