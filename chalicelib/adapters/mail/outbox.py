"""Mail as files: `<folder>/<epoch ms>-<random>.eml`, one RFC 5322 message each.

Written to a temporary name, fsync'd, renamed, and the folder fsync'd: a message
the service reported as sent is on disk after a crash. Nothing is ever sent."""
from __future__ import annotations

import email
import email.policy
import os
import re
import secrets
import time
from pathlib import Path

from chalicelib.adapters.mail.message import rfc5322
from chalicelib.ports.mail import MailUndeliverable, OutgoingMail

_LINK = re.compile(r"https?://[^\s<>\"']+")


class OutboxMailer:
    def __init__(self, folder: str | Path, sender: str):
        self.folder = Path(folder)
        self.sender = sender

    def send(self, message: OutgoingMail) -> None:
        data = rfc5322(message, self.sender).as_bytes()
        name = f"{int(time.time() * 1000):015d}-{secrets.token_hex(4)}.eml"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temporary = self.folder / f".{name}.tmp"
            with open(temporary, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.folder / name)
            directory = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            raise MailUndeliverable(f"outbox not writable: {exc.strerror}") from exc


def read_outbox(folder: str | Path, limit: int = 10) -> list[dict]:
    """The newest messages first: {file, to, subject, date, kind, links} (links from the text part)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    files = sorted((p for p in folder.glob("*.eml")), key=lambda p: p.name, reverse=True)[:max(0, limit)]
    listed = []
    for path in files:
        parsed = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        text_part = parsed.get_body(preferencelist=("plain",))
        text = text_part.get_content() if text_part is not None else ""
        listed.append({"file": str(path), "to": str(parsed["To"] or ""), "subject": str(parsed["Subject"] or ""),
                       "date": str(parsed["Date"] or ""), "kind": str(parsed["X-Docpub-Kind"] or ""),
                       "links": list(dict.fromkeys(_LINK.findall(text)))})
    return listed
