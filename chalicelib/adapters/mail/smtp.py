"""Mail through an SMTP server (self-hosting).

`smtp://[user[:password]@]host[:port]` speaks STARTTLS (port 587 by default) and
refuses to go on in plain text if the server does not offer it; `?tls=none`
allows plain text, to a loopback host only (a local catcher). `smtps://…`
(port 465) is TLS from the first byte. Certificates are verified with the
system's trust store (or `?ca_file=/path.pem`). Credentials never reach logs."""
from __future__ import annotations

import ipaddress
import smtplib
import ssl
import socket
from urllib.parse import parse_qs, unquote, urlparse

from chalicelib.adapters.mail.message import rfc5322
from chalicelib.ports.mail import MailUndeliverable, OutgoingMail

TIMEOUT_SECONDS = 10


class SmtpMailer:
    def __init__(self, url: str, sender: str):
        parsed = urlparse(url)
        if parsed.scheme not in ("smtp", "smtps") or not parsed.hostname:
            raise ValueError("DOCPUB_MAIL: an SMTP URL is smtp://host[:port] or smtps://host[:port]")
        options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        self.implicit_tls = parsed.scheme == "smtps"
        self.host = parsed.hostname
        self.port = parsed.port or (465 if self.implicit_tls else 587)
        self.user = unquote(parsed.username) if parsed.username else None
        self.password = unquote(parsed.password) if parsed.password else None
        self.plain = options.get("tls") == "none"
        if self.plain and (self.implicit_tls or not _loopback(self.host)):
            raise ValueError("DOCPUB_MAIL: ?tls=none is allowed only for smtp:// to a loopback host")
        self.ca_file = options.get("ca_file")
        self.sender = sender

    def __repr__(self) -> str:  # never the password
        return f"SmtpMailer({'smtps' if self.implicit_tls else 'smtp'}://{self.host}:{self.port})"

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file)

    def send(self, message: OutgoingMail) -> None:
        built = rfc5322(message, self.sender)
        try:
            connection: smtplib.SMTP
            if self.implicit_tls:
                connection = smtplib.SMTP_SSL(self.host, self.port, timeout=TIMEOUT_SECONDS, context=self._tls())
            else:
                connection = smtplib.SMTP(self.host, self.port, timeout=TIMEOUT_SECONDS)
            with connection as smtp:
                smtp.ehlo()
                if not self.implicit_tls and not self.plain:
                    if not smtp.has_extn("starttls"):
                        raise MailUndeliverable("the SMTP server does not offer STARTTLS")
                    smtp.starttls(context=self._tls())
                    smtp.ehlo()
                if self.user:
                    smtp.login(self.user, self.password or "")
                smtp.send_message(built)
        except MailUndeliverable:
            raise
        except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
            raise MailUndeliverable(f"SMTP {self.host}:{self.port}: {type(exc).__name__}") from exc


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(a[4][0]).is_loopback for a in socket.getaddrinfo(host, None))
        except OSError:
            return False
