"""The feedback inbox: threads (anchor, replies), filter, reply, resolve and reopen."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

from chalicelib import errors
from chalicelib.entrypoints.dashboard.web import (
    UUID, Page, current_path, documents, optional_service, redirect, render, route, safe_next, url,
)


@route("/feedback")
def feedback_inbox(page: Page):
    service = optional_service("feedback")
    status = page.query.get("status") or "open"
    if status not in ("open", "resolved", "all"):
        status = "open"
    document_id = page.query.get("document_id") or None
    if document_id and not UUID.match(document_id):
        document_id = None
    documents_list = documents().list(page.actor, 100).documents
    if service is None:
        return render(page, "feedback.html", active="feedback", available=False, items=[],
                      documents=documents_list, filter_status=status, document_id=document_id, next_cursor=None)
    listing = service.list(page.actor, document_id=document_id, status=status, limit=20,
                           cursor=page.query.get("cursor") or None)
    details: dict[str, Any] = {}
    items = []
    for item in listing.feedback:
        if item.document_id not in details:
            try:
                details[item.document_id] = documents().get(page.actor, item.document_id)
            except errors.NotFound:
                details[item.document_id] = None
        document = details[item.document_id]
        number = next((v.number for v in document.versions if v.version_id == item.version_id), None) \
            if document else None
        items.append({"feedback": item, "document": document, "version_number": number})
    return render(page, "feedback.html", active="feedback", available=True, items=items,
                  documents=documents_list, filter_status=status, document_id=document_id,
                  next_cursor=listing.next_cursor, back=current_path(page.request))


@route("/feedback/{feedback_id}/resolve", methods=("POST",))
def resolve_feedback(page: Page, feedback_id: str):
    service = optional_service("feedback")
    if service is None:
        raise errors.NotFound("The feedback inbox is not available in this installation.")
    resolved = page.form().get("resolved", "true") != "false"
    service.resolve(page.actor, feedback_id, resolved=resolved)
    back = safe_next(page.form().get("back"))
    if not back.startswith(url("/feedback")):
        back = url("/feedback")
    separator = "&" if "?" in back else "?"
    return redirect(back + separator + "m=" + quote("resolved" if resolved else "reopened"))



@route("/feedback/{feedback_id}/replies", methods=("POST",))
def reply_to_feedback(page: Page, feedback_id: str):
    """The owner answers a thread from the inbox; the viewer sees it on the share page."""
    from chalicelib.entrypoints.http import validate
    from chalicelib.models import ReplyRequest

    service = optional_service("feedback")
    if service is None:
        raise errors.NotFound("The feedback inbox is not available in this installation.")
    form = page.form()
    request = validate(ReplyRequest, {"message": form.get("message", "")})
    service.reply(page.actor, feedback_id, request.message)
    back = safe_next(form.get("back"))
    if not back.startswith(url("/feedback")):
        back = url("/feedback")
    separator = "&" if "?" in back else "?"
    return redirect(back + separator + "m=" + quote("replied") + "#fb-" + quote(feedback_id))
