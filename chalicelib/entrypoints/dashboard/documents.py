"""Documents: the list, upload, one document (details, versions, link, passphrase, views),
edit, diff, restore and delete."""
from __future__ import annotations

import re
from typing import Optional

from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import (
    UUID, Page, documents, editing, optional_service, redirect, render, route, url, workspaces,
)


@route("/documents")
def document_list(page: Page):
    query = page.query.get("q", "").strip()[:500]
    cursor = page.query.get("cursor") or None
    listing = documents().list(page.actor, 20, cursor, query or None)
    workspace = workspaces().get_workspace(page.workspace_id)
    return render(page, "documents.html", active="documents", listing=listing, q=query, workspace=workspace,
                  sparklines=_sparklines([d.document_id for d in listing.documents]))


def _sparklines(document_ids: list[str]) -> dict:
    from chalicelib.entrypoints import charts

    service = optional_service("views")
    if service is None:
        return {}
    return {document_id: charts.sparkline(values, days)
            for document_id, (days, values) in service.sparklines(document_ids, 7).items()}


def _views_charts(document) -> Optional[dict]:
    """The document page's views section: per day over 30 days, per version."""
    from chalicelib.entrypoints import charts

    service = optional_service("views")
    if service is None:
        return None
    stats = service.stats_for(document.document_id, [v.version_id for v in document.versions], 30)
    days = [(d.date, d.views) for d in stats.days]
    numbers = {v.version_id: v.number for v in document.versions}
    versions = [(f"v{numbers[v.version_id]}", v.views) for v in stats.versions]
    return {
        "stats": stats,
        "in_window": sum(v for _, v in days),
        "by_version": {v.version_id: v.views for v in stats.versions},
        "days_chart": charts.bar_chart("views-days", "Views per day, last 30 days", days),
        "days_table": charts.data_table("Views per day, last 30 days (UTC)", ("Day", "Views"),
                                        list(reversed(days))),
        "versions_chart": charts.bar_chart("views-versions", "Views per version, all time", versions,
                                           label_every=max(1, len(versions) // 10), height=140),
    }


@route("/upload")
def upload_form(page: Page):
    target = page.query.get("document_id")
    document = documents().get(page.actor, target) if target and UUID.match(target) else None
    workspace = workspaces().get_workspace(page.workspace_id)
    return render(page, "upload.html", active="upload", document=document, workspace=workspace, form={})


@route("/upload", methods=("POST",))
def upload(page: Page):
    form = page.form()
    target = form.get("document_id") or None
    uploaded = page.file("file")
    try:
        if uploaded is None:
            raise errors.ValidationFailed.field("file", "choose an HTML file to upload")
        result = editing().upload(page.actor, uploaded[1], title=form.get("title"), note=form.get("note"),
                                  document_id=target, description=form.get("description"))
    except errors.DocpubError as exc:
        document = None
        if target and UUID.match(target):
            try:
                document = documents().get(page.actor, target)
            except errors.NotFound:
                pass
        return render(page, "upload.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      active="upload", document=document,
                      workspace=workspaces().get_workspace(page.workspace_id), form=form)
    return redirect(url(f"/documents/{result.response.document_id}", m="published" if target else "created"))


@route("/documents/{document_id}")
def document_page(page: Page, document_id: str):
    document = _document(page, document_id)
    workspace = workspaces().get_workspace(page.workspace_id)
    sharing = optional_service("sharing")
    failed = None
    if sharing is not None and document.passphrase_protected:
        found = sharing.failed_unlocks(page.actor, document_id)
        from chalicelib.services.context import rfc3339
        failed = {"count": found.count, "exhausted": found.exhausted, "window_seconds": found.window_seconds,
                  "last": rfc3339(found.last_ms) if found.last_ms else None}
    return render(page, "document.html", active="documents", document=document, workspace=workspace,
                  sharing_available=sharing is not None, failed_unlocks=failed,
                  views=_views_charts(document))


def _document(page: Page, document_id: str):
    if not UUID.match(document_id or ""):
        raise errors.NotFound("No such document in this workspace.")
    return documents().get(page.actor, document_id)


@route("/documents/{document_id}", methods=("POST",))
def update_details(page: Page, document_id: str):
    from chalicelib.models import UpdateDocumentRequest

    form = page.form()
    _document(page, document_id)
    try:
        request = UpdateDocumentRequest.model_validate(
            {"title": form.get("title", ""), "description": form.get("description", "")})
    except Exception as exc:  # pydantic's error, said in the contract's words
        from chalicelib.entrypoints.http import validation_error

        raise validation_error(exc) from None
    documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="saved"))


@route("/documents/{document_id}/restore", methods=("POST",))
def restore(page: Page, document_id: str):
    _document(page, document_id)
    editing().restore_version(page.actor, document_id, _number(page.form().get("number")))
    return redirect(url(f"/documents/{document_id}", m="restored"))


def _number(value: Optional[str]) -> int:
    try:
        number = int(value or "")
    except ValueError:
        raise errors.ValidationFailed.field("number", "must be a version number") from None
    if number < 1:
        raise errors.ValidationFailed.field("number", "must be a version number")
    return number


@route("/documents/{document_id}/diff")
def diff(page: Page, document_id: str):
    document = _document(page, document_id)
    latest = document.version_count
    new = _number(page.query.get("to") or str(latest))
    old = _number(page.query.get("from") or str(max(1, new - 1)))
    pair = editing().compare(page.actor, document_id, old, new)
    return render(page, "diff.html", active="documents", document=document, pair=pair, old=old, new=new)


@route("/documents/{document_id}/edit")
def edit_form(page: Page, document_id: str):
    document = _document(page, document_id)
    workspace = workspaces().get_workspace(page.workspace_id)
    html = None
    if workspace.entitlements.dashboard_editing:
        html = documents().get(page.actor, document_id, include_html=True).html
    return render(page, "edit.html", active="documents", document=document, workspace=workspace, html=html)


@route("/documents/{document_id}/edit", methods=("POST",))
def save_edit(page: Page, document_id: str):
    form = page.form()
    html = form.get("html", "").replace("\r\n", "\n")
    try:
        editing().save_html(page.actor, document_id, html, note=form.get("note"),
                            base_version_id=form.get("base_version_id"))
    except (errors.ValidationFailed, errors.DocumentTooLarge, errors.VersionConflict) as exc:
        document = _document(page, document_id)
        return render(page, "edit.html", status=exc.status, error=exc, active="documents", document=document,
                      workspace=workspaces().get_workspace(page.workspace_id), html=html,
                      note=form.get("note", ""))
    return redirect(url(f"/documents/{document_id}", m="published"))


@route("/documents/{document_id}/delete")
def delete_form(page: Page, document_id: str):
    return render(page, "delete.html", active="documents", document=_document(page, document_id))


@route("/documents/{document_id}/delete", methods=("POST",))
def delete(page: Page, document_id: str):
    _document(page, document_id)
    documents().delete(page.actor, document_id)
    return redirect(url("/documents", m="deleted"))


@route("/documents/{document_id}/link", methods=("POST",))
def share_link(page: Page, document_id: str):
    """Share link settings (enabled, expiry; times are UTC) or a new link (action=rotate)."""
    from chalicelib.models import UpdateDocumentRequest

    document = _document(page, document_id)
    form = page.form()
    sharing = optional_service("sharing")
    if form.get("action") == "rotate" and sharing is not None:
        sharing.rotate(page.actor, document_id)
        return redirect(url(f"/documents/{document_id}", m="link-rotated"))
    expires = (form.get("share_expires_at") or "").strip()
    if expires and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}", expires):
        expires += ":00Z"  # <input type=datetime-local> has no zone: the page says UTC
    fields = {"share_enabled": form.get("share_enabled") == "on", "share_expires_at": expires or None}
    if expires and expires[:16] == (document.share_expires_at or "")[:16]:
        del fields["share_expires_at"]  # unchanged (the form shows minutes): keep it, even if already past
    try:
        request = UpdateDocumentRequest.model_validate(fields)
    except Exception as exc:  # pydantic's error, said in the contract's words
        from chalicelib.entrypoints.http import validation_error

        raise validation_error(exc) from None
    documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="link-saved"))


@route("/documents/{document_id}/passphrase", methods=("POST",))
def passphrase(page: Page, document_id: str):
    _document(page, document_id)
    sharing = optional_service("sharing")
    if sharing is None:
        raise errors.NotFound("Passphrase links are not available in this installation.")
    form = page.form()
    if form.get("action") == "remove":
        sharing.clear_passphrase(page.actor, document_id)
        return redirect(url(f"/documents/{document_id}", m="passphrase-removed"))
    passphrase = form.get("passphrase", "")
    if not 8 <= len(passphrase) <= 200:
        raise errors.ValidationFailed.field("passphrase", "must be 8 to 200 characters")
    sharing.set_passphrase(page.actor, document_id, passphrase)
    return redirect(url(f"/documents/{document_id}", m="passphrase-set"))

