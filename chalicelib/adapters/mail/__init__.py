"""Outgoing mail adapters (ports/mail.py): the one place a message becomes bytes
on a wire or a disk. `build_mailer()` reads `DOCPUB_MAIL`:

- `outbox` (default outside Lambda): each message is an RFC 5322 file
  `$DOCPUB_DATA_DIR/outbox/<time>-<random>.eml`, written atomically and fsync'd;
  `make -s admin ARGS="outbox"` lists the latest ones with their links.
- `smtp://user:password@host:587` (STARTTLS, required unless `?tls=none` on a
  loopback host) or `smtps://user:password@host:465` (TLS from the first byte).
- `ses`: Amazon SES v2 `SendEmail` (the deployed stack; sender from
  `DOCPUB_MAIL_FROM`, an identity verified in SES).
"""
from __future__ import annotations

import email.policy
import email.utils
from email.message import EmailMessage

from chalicelib import config
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


def build_mailer(setting: str | None = None):
    """The configured Mailer (see the module docstring); ValueError on an unknown setting."""
    setting = (setting or config.mail()).strip()
    sender = config.mail_from()
    if setting == "outbox":
        from chalicelib.adapters.mail.outbox import OutboxMailer

        return OutboxMailer(config.outbox_dir(), sender)
    if setting.startswith(("smtp://", "smtps://")):
        from chalicelib.adapters.mail.smtp import SmtpMailer

        return SmtpMailer(setting, sender)
    if setting == "ses":
        from chalicelib.adapters.aws.mail import SesMailer

        return SesMailer(sender)
    raise ValueError("DOCPUB_MAIL must be 'outbox', an smtp:// or smtps:// URL, or 'ses'")
