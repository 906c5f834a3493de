"""Documents: the list, upload, one document (details, versions, link, passphrase, views),
edit, diff, restore and delete.

Each page asks the page-data service (services/dashboard_pages.py) for what it
shows, or one service for what it changes: the services find the document for
this workspace and hold every rule (a form here is only parsed).
"""
from __future__ import annotations

import re
from typing import Optional


from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import Page, redirect, render, route, ticked, url
from chalicelib import wiring as registry


def pages():
    return registry.dashboard_pages()


@route("/documents")
def document_list(page: Page):
    from chalicelib.entrypoints import charts

    query = page.query.get("q", "").strip()[:500]
    review = page.query.get("review", "")
    data = pages().documents_page(page.actor, query, page.query.get("cursor") or None, review)
    # None for a document with no views in the window: the page says so instead of drawing empty bars
    sparklines = {document_id: charts.sparkline(values, days) if any(values) else None
                  for document_id, (days, values) in data.sparklines.items()}
    from chalicelib.services.dashboard_pages import REVIEW_FILTERS

    return render(page, "documents.html", active="documents", listing=data.listing, q=query,
                  workspace=data.workspace, sparklines=sparklines,
                  review=review if review in REVIEW_FILTERS else "", review_filters=REVIEW_FILTERS)


def _views_charts(document, stats) -> dict:
    """The document page's views section: per day over 30 days, per version."""
    from chalicelib.entrypoints import charts

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


def _upload_headers() -> dict:
    """The upload page's script PUTs large files to storage (a presigned S3 URL when deployed)."""
    from chalicelib.entrypoints.dashboard.web import SECURITY_HEADERS

    return {"Content-Security-Policy": SECURITY_HEADERS["Content-Security-Policy"]
            + f"; connect-src 'self' {registry.uploads().put_origin()}"}


@route("/upload")
def upload_form(page: Page):
    document, workspace = pages().upload_page(page.actor, page.query.get("document_id") or None)
    return render(page, "upload.html", active="upload", document=document, workspace=workspace, form={},
                  headers=_upload_headers())


@route("/upload", methods=("POST",))
def upload(page: Page):
    form = page.form()
    target = form.get("document_id") or None
    uploaded = page.file("file")
    # A file too large for one request was sent to storage by dashboard.js (upload_tickets below).
    upload_id = form.get("upload_id") or None
    try:
        if uploaded is None and upload_id is None:
            raise errors.ValidationFailed.field("file", "choose a file to upload (.html, .md or .zip)")
        result = registry.editing().upload(page.actor, uploaded[1] if uploaded else None, title=form.get("title"),
                                           note=form.get("note"), document_id=target,
                                           description=form.get("description"),
                                           filename=uploaded[0] if uploaded else None,
                                           upload_id=None if uploaded else upload_id,
                                           allow_secrets=ticked(form, "allow_secrets"))
    except errors.DocpubError as exc:
        try:
            document, workspace = pages().upload_page(page.actor, target)
        except errors.NotFound:
            document, workspace = pages().upload_page(page.actor)
        return render(page, "upload.html", status=exc.status, headers={**exc.headers, **_upload_headers()},
                      error=exc,
                      active="upload", document=document, workspace=workspace, form=form)
    return redirect(url(f"/documents/{result.response.document_id}", m="published" if target else "created"))


@route("/uploads", methods=("POST",), answers_json=True)
def upload_tickets(page: Page):
    """The first step of a large upload from the upload page (dashboard.js): the same ticket
    as POST /api/v1/uploads, for this session's workspace (CSRF-checked like every form).
    The browser then PUTs the file to `upload_url` (S3 when deployed: Lambda never carries
    the bytes) and submits the upload form with `upload_id`."""
    from chalicelib.entrypoints.http import json_response, validate
    from chalicelib.models import UploadRequest

    form = page.form()
    size = (form.get("size_bytes") or "").strip()
    body = validate(UploadRequest, {"filename": form.get("filename", ""),
                                    "size_bytes": int(size) if size.isascii() and size.isdigit() else size})
    return json_response(registry.uploads().create(page.actor, body.filename, body.size_bytes), 201)


@route("/documents/{document_id}")
def document_page(page: Page, document_id: str):
    data = pages().document_page(page.actor, document_id)
    return render(page, "document.html", active="documents", document=data.document, workspace=data.workspace,
                  sharing_available=True, failed_unlocks=data.failed_unlocks,
                  views=_views_charts(data.document, data.views), reviews=data.reviews,
                  requested=data.requested, recipients=data.recipients)


@route("/documents/{document_id}/reviews", methods=("POST",))
def review(page: Page, document_id: str):
    """Approve, request changes or comment, as the signed-in member (any role)."""
    form = page.form()
    fields: dict[str, object] = {"decision": form.get("decision", ""), "message": form.get("message") or None}
    if form.get("version_number"):
        fields["version_number"] = _number(form.get("version_number"))
    registry.reviews().submit(page.actor, document_id, fields)
    return redirect(url(f"/documents/{document_id}", m="reviewed") + "#review")


@route("/documents/{document_id}/review-requests", methods=("POST",))
def request_review(page: Page, document_id: str):
    """Ask members to review (editors and owners): addresses separated by commas or lines."""
    form = page.form()
    reviewers = [r for r in re.split(r"[\s,;]+", form.get("reviewers", "")) if r]
    registry.reviews().request(page.actor, document_id, {"reviewers": reviewers,
                                                         "message": form.get("message") or None})
    return redirect(url(f"/documents/{document_id}", m="review-requested") + "#review")


@route("/documents/{document_id}/download")
def download(page: Page, document_id: str):
    """The version as a file (.html, .md, or a .zip of a page with its files)."""
    from chalicelib.entrypoints.http import download_response

    version_id = page.query.get("version_id") or None
    return download_response(registry.documents().download(page.actor, document_id, version_id))


@route("/documents/{document_id}/provenance")
def provenance(page: Page, document_id: str):
    """Version `number`'s signed statement as a file to hand to `docpub verify FILE --provenance`
    (contract 7g); a version made before signing answers the dashboard's not-found page."""
    from chalice import Response

    number = page.query.get("number") or ""
    answer = registry.provenance().get(page.actor, document_id, number)
    return Response(body=answer.model_dump_json(indent=2), status_code=200, headers={
        "Content-Type": "application/json; charset=utf-8", "Cache-Control": "private, no-store",
        "Content-Disposition": f'attachment; filename="provenance-v{answer.statement.version_number}.json"'})


@route("/documents/{document_id}", methods=("POST",))
def update_details(page: Page, document_id: str):
    from chalicelib.models import UpdateDocumentRequest

    from chalicelib.entrypoints.http import validate  # pydantic's error, said in the contract's words

    form = page.form()
    request = validate(UpdateDocumentRequest, {"title": form.get("title", ""),
                                               "description": form.get("description", "")})
    registry.documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="saved"))


@route("/documents/{document_id}/restore", methods=("POST",))
def restore(page: Page, document_id: str):
    registry.editing().restore_version(page.actor, document_id, _number(page.form().get("number")))
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
    document = pages().document(page.actor, document_id)
    new = _number(page.query["to"]) if page.query.get("to") else None
    old = _number(page.query["from"]) if page.query.get("from") else None
    pair = registry.editing().compare(page.actor, document_id, old, new)  # left out: latest, the one before
    return render(page, "diff.html", active="documents", document=document, pair=pair,
                  old=pair.old.number, new=pair.new.number)


@route("/documents/{document_id}/edit")
def edit_form(page: Page, document_id: str):
    data = pages().edit_page(page.actor, document_id)
    return render(page, "edit.html", active="documents", document=data.document, workspace=data.workspace,
                  html=data.html)


@route("/documents/{document_id}/edit", methods=("POST",))
def save_edit(page: Page, document_id: str):
    form = page.form()
    html = form.get("html", "").replace("\r\n", "\n")
    try:
        registry.editing().save_html(page.actor, document_id, html, note=form.get("note"),
                            base_version_id=form.get("base_version_id"), allow_secrets=ticked(form, "allow_secrets"))
    except (errors.ValidationFailed, errors.DocumentTooLarge, errors.VersionConflict, errors.SecretDetected) as exc:
        data = pages().edit_page(page.actor, document_id, html)
        return render(page, "edit.html", status=exc.status, error=exc, active="documents", document=data.document,
                      workspace=data.workspace, html=data.html, note=form.get("note", ""))
    return redirect(url(f"/documents/{document_id}", m="published"))


@route("/documents/{document_id}/delete")
def delete_form(page: Page, document_id: str):
    return render(page, "delete.html", active="documents", document=pages().document(page.actor, document_id))


@route("/documents/{document_id}/delete", methods=("POST",))
def delete(page: Page, document_id: str):
    registry.documents().delete(page.actor, document_id)
    return redirect(url("/documents", m="deleted"))


@route("/documents/{document_id}/link", methods=("POST",))
def share_link(page: Page, document_id: str):
    """Share link settings (enabled, expiry; times are UTC) or a new link (action=rotate)."""
    from chalicelib.models import UpdateDocumentRequest

    form = page.form()
    if form.get("action") == "rotate":
        registry.sharing().rotate(page.actor, document_id)
        return redirect(url(f"/documents/{document_id}", m="link-rotated"))
    expires = (form.get("share_expires_at") or "").strip()
    if expires and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}", expires):
        expires += ":00Z"  # <input type=datetime-local> has no zone: the page says UTC
    fields = {"share_enabled": form.get("share_enabled") == "on", "share_expires_at": expires or None}
    if expires and expires[:16] == (pages().document(page.actor, document_id).share_expires_at or "")[:16]:
        del fields["share_expires_at"]  # unchanged (the form shows minutes): keep it, even if already past
    from chalicelib.entrypoints.http import validate  # pydantic's error, said in the contract's words

    request = validate(UpdateDocumentRequest, fields)
    registry.documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="link-saved"))


@route("/documents/{document_id}/audience", methods=("POST",))
def audience(page: Page, document_id: str):
    """Who may open the link (contract 7d, 7f): anyone, the members, or these people (emails
    and @domains separated by commas, spaces or lines)."""
    from chalicelib.models import UpdateDocumentRequest
    from chalicelib.services import access

    access.authorize(page.actor, "update_document")  # before the form is judged: a viewer learns nothing
    form = page.form()
    fields: dict[str, object] = {"share_access": form.get("share_access", "")}
    entries = [e for e in re.split(r"[\s,;]+", form.get("share_recipients", "")) if e]
    if entries or fields["share_access"] == "recipients":
        fields["share_recipients"] = entries
    from chalicelib.entrypoints.http import validate  # pydantic's error, said in the contract's words

    request = validate(UpdateDocumentRequest, fields)
    registry.documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="audience-saved") + "#audience")


@route("/documents/{document_id}/recipients/revoke", methods=("POST",))
def revoke_recipient(page: Page, document_id: str):
    registry.recipients().revoke(page.actor, document_id, page.form().get("email", ""))
    return redirect(url(f"/documents/{document_id}", m="recipient-revoked") + "#audience")


@route("/documents/{document_id}/passphrase", methods=("POST",))
def passphrase(page: Page, document_id: str):
    sharing = registry.sharing()
    form = page.form()
    if form.get("action") == "remove":
        sharing.clear_passphrase(page.actor, document_id)
        return redirect(url(f"/documents/{document_id}", m="passphrase-removed"))
    sharing.set_passphrase(page.actor, document_id, form.get("passphrase", ""))
    return redirect(url(f"/documents/{document_id}", m="passphrase-set"))


