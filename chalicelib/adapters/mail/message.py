"""A message as every mail adapter sends it (outbox, SMTP, SES): RFC 5322 bytes.
Kept apart from the package's `build_mailer`, which imports the adapters: they
import this, never the package (tests/unit/test_layers.py: no import circle)."""
from __future__ import annotations

import email.policy
import email.utils
from email.message import EmailMessage

from chalicelib.ports.mail import OutgoingMail


def rfc5322(message: OutgoingMail, sender: str) -> EmailMessage:
    """The message as every adapter sends it: text/plain with a text/html alternative."""
    built = EmailMessage(policy=email.policy.SMTP)
    built["From"] = sender
    built["To"] = message.to
    built["Subject"] = message.subject
    built["Date"] = email.utils.formatdate(usegmt=True)
    built["Message-ID"] = email.utils.make_msgid(domain=_sender_domain(sender))
    built["Auto-Submitted"] = "auto-generated"
    if message.kind:
        built["X-Docpub-Kind"] = message.kind
    built.set_content(message.text)
    built.add_alternative(message.html, subtype="html")
    return built


def _sender_domain(sender: str) -> str:
    address = email.utils.parseaddr(sender)[1]
    return address.rpartition("@")[2] or "docpub.local"
