"""The feedback inbox: threads (anchor, replies), filter, reply, resolve and reopen, and
suggested edits accepted (a new version) or rejected (resolved)."""
from __future__ import annotations

from urllib.parse import quote

from chalicelib.entrypoints.dashboard.web import Page, current_path, redirect, render, route, safe_next, ticked, url
from chalicelib import errors
from chalicelib import wiring as registry


@route("/feedback")
def feedback_inbox(page: Page):
    """One page of feedback: one query for the feedback, one for the documents it names."""
    inbox = registry.dashboard_pages().inbox(page.actor, status=page.query.get("status") or None,
                                             document_id=page.query.get("document_id") or None,
                                             cursor=page.query.get("cursor") or None)
    return render(page, "feedback.html", active="feedback", available=True, items=inbox.entries,
                  documents=inbox.documents, filter_status=inbox.status, document_id=inbox.document_id,
                  next_cursor=inbox.next_cursor, back=current_path(page.request))


def _inbox_page(form: dict) -> str:
    """The inbox page the form came from (its filter and cursor), never anywhere else."""
    back = safe_next(form.get("back"))
    return back if back.startswith(url("/feedback")) else url("/feedback")


def _back_to(back: str, message: str, feedback_id: str = ""):
    """Back to that inbox page, saying `message`, at the thread when one is named."""
    separator = "&" if "?" in back else "?"
    return redirect(back + separator + "m=" + quote(message) + ("#fb-" + quote(feedback_id) if feedback_id else ""))


@route("/feedback/{feedback_id}/resolve", methods=("POST",))
def resolve_feedback(page: Page, feedback_id: str):
    resolved = page.form().get("resolved", "true") != "false"
    registry.feedback().resolve(page.actor, feedback_id, resolved=resolved)
    return _back_to(_inbox_page(page.form()), "resolved" if resolved else "reopened")


@route("/feedback/{feedback_id}/replies", methods=("POST",))
def reply_to_feedback(page: Page, feedback_id: str):
    """The owner answers a thread from the inbox; the viewer sees it on the share page."""
    form = page.form()
    registry.feedback().reply(page.actor, feedback_id, form.get("message", ""))
    return _back_to(_inbox_page(form), "replied", feedback_id)


@route("/feedback/{feedback_id}/accept", methods=("POST",))
def accept_suggestion(page: Page, feedback_id: str):
    """Apply a suggested edit (a new version; the thread resolved in it). A refusal (the
    passage is no longer there, several places fit, a newer version) is an error page
    naming it, and nothing changes. A blocked secret (contract 7g) is a page naming what
    was found (never the secret) with "Accept anyway" (allow_secrets, as the edit form's
    "Publish anyway"); warnings of the scan (warn mode, or allowed) are shown after it."""
    form = page.form()
    back = _inbox_page(form)
    try:
        accepted = registry.suggestions().accept(page.actor, feedback_id,
                                                 allow_secrets=ticked(form, "allow_secrets") or None)
    except errors.SecretDetected as exc:
        return render(page, "accept.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      active="feedback", feedback_id=feedback_id, back=back)
    if accepted.response.warnings:
        return render(page, "accept.html", headers=dict(accepted.headers), active="feedback",
                      accepted=accepted.response, feedback_id=feedback_id, back=back)
    return _back_to(back, f"accepted in version {accepted.response.document.version_number}", feedback_id)
