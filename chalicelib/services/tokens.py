"""One-time account tokens (verification, reset, invitations, sign-in links) and
the dashboard links that carry them. A token is 256 random bits in the link;
storage keeps only a SHA-256 of it (domain-separated), so a leaked table opens
nothing. Shared by services/accounts.py and services/people.py."""
from __future__ import annotations

import hashlib
import re
import secrets
from typing import Optional
from urllib.parse import urlencode

from chalicelib import config
from chalicelib.ports.records import AccountToken
from chalicelib.services.context import Context

LINK_INVALID = ("This link is not valid any more: it was already used, has expired, or was replaced by a "
                "newer one. Ask for a new one.")
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{20,100}")


def normalise_email(email: Optional[str]) -> str:
    return (email or "").strip().lower()


def token_digest(token: str) -> str:
    return hashlib.sha256(("account-token:" + token).encode("utf-8")).hexdigest()


def new_token() -> tuple[str, str]:
    """(token for the link, its digest for storage)."""
    token = secrets.token_urlsafe(32)
    return token, token_digest(token)


def dashboard_url(path: str, **params: str) -> str:
    query = ("?" + urlencode(params)) if params else ""
    return f"{config.base_url()}/dashboard/{path}{query}"


def well_formed(token: Optional[str]) -> bool:
    return isinstance(token, str) and _TOKEN_SHAPE.fullmatch(token) is not None


def peek(ctx: Context, token: Optional[str], kind: str) -> Optional[AccountToken]:
    """A usable (unused, unexpired) token of `kind`, without using it (forms show it first)."""
    if not well_formed(token):
        return None
    record = ctx.people.get_token(token_digest(token))  # type: ignore[arg-type]
    if (record is None or record.kind != kind or record.used_ms is not None
            or record.expires_ms <= ctx.now_ms()):
        return None
    return record
