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

from chalicelib import config


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
