"""Port for outgoing mail: one message, plain text and HTML, to one person.

Adapters (chalicelib/adapters/mail): an outbox folder of RFC 5322 `.eml` files
(`make run`, tests), SMTP with STARTTLS or implicit TLS (self-hosting), Amazon
SES v2 (the deployed stack). `DOCPUB_MAIL` picks one (chalicelib/config.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class OutgoingMail:
    to: str
    subject: str
    text: str
    html: str
    # What the message is for ("verify", "reset", "invite", "login"): a header for
    # tools and tests, never a secret.
    kind: str = ""


class MailUndeliverable(Exception):
    """The mail service refused or could not be reached; nothing was sent."""


class Mailer(Protocol):
    def send(self, message: OutgoingMail) -> None:
        """Hand the message to the mail service (durably, for the outbox) or raise MailUndeliverable."""
