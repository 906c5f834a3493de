"""Messages the service sends (verification, password reset, invitations, sign-in
links): rendered from `templates/mail/<name>.txt` and `.html` (chalicelib.rendering's
one jinja2 environment; the HTML autoescaped, the plain text not), with the
workspace's branding where it has some, and handed to the Mailer port. A message that cannot be sent is a 503 to the caller (nothing is
half-done: the token it carries is useless without the message); in a quiet step
(services/quiet_steps.py) the caller is the step, run after the answer, which logs it."""
from __future__ import annotations

import logging
from typing import Any, Optional

from chalicelib import rendering
from chalicelib.ports.records import Workspace
from chalicelib.errors import ServiceUnavailable
from chalicelib.ports.mail import MailUndeliverable, OutgoingMail
from chalicelib.services.context import Context

log = logging.getLogger("docpub")

SUBJECTS = {
    "verify": "Confirm your email address for Docpub",
    "reset": "Reset your Docpub password",
    "invite": "You are invited to {workspace_name} on Docpub",
    "exists": "You already have a Docpub account",
    "login": "Your Docpub sign-in link",
    "review": "Review requested: {title}",
    "recipient_code": "{code} is your code for {title}",
}


def render(kind: str, to: str, branding: Optional[dict[str, Any]] = None, **values: Any) -> OutgoingMail:
    values = {"email": to, "brand_name": None, "brand_tagline": None, **(branding or {}), **values}
    # One line: a title or a workspace name may hold line breaks, which a mail header may not.
    subject = " ".join(SUBJECTS[kind].format(**values).split())
    values["subject"] = subject
    return OutgoingMail(to=to, subject=subject, text=rendering.page(f"mail/{kind}.txt", **values),
                        html=rendering.page(f"mail/{kind}.html", **values), kind=kind)


def branding_of(workspace: Optional[Workspace]) -> dict[str, Any]:
    """A Pro workspace's own name and tagline on its messages (as on its share pages)."""
    if workspace is not None and workspace.plan == "pro" and workspace.brand_name:
        return {"brand_name": workspace.brand_name, "brand_tagline": workspace.brand_tagline}
    return {}


def send(ctx: Context, message: OutgoingMail) -> None:
    try:
        ctx.mail.send(message)
    except MailUndeliverable as exc:
        log.warning("mail not sent", extra={"kind": message.kind, "reason": str(exc)})
        raise ServiceUnavailable("We could not send the email just now; try again in a minute.") from exc
