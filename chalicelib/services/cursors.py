"""Opaque list cursors: the storage adapter's cursor, sealed with an HMAC bound
to the workspace and the listing it came from.

A cursor the service did not issue (crafted, truncated, or issued to another
workspace or listing) is refused as 422 `validation_error` before storage ever
sees it, whatever the adapter's own cursor format.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Optional

from chalicelib import config
from chalicelib.errors import ValidationFailed

MESSAGE = "is not a cursor this service returned"


def _tag(workspace_id: str, listing: str, raw: str) -> str:
    key = hashlib.sha256(b"docpub-cursor\0" + config.secret_key().encode()).digest()
    mac = hmac.new(key, f"{workspace_id}\0{listing}\0{raw}".encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def seal(workspace_id: str, listing: str, raw: Optional[str]) -> Optional[str]:
    if raw is None:
        return None
    return f"{raw}.{_tag(workspace_id, listing, raw)}"


def unseal(workspace_id: str, listing: str, cursor: Optional[str]) -> Optional[str]:
    """The adapter's cursor inside `cursor` (None for the first page), or 422."""
    if not cursor:
        return None
    raw, dot, tag = cursor.rpartition(".")
    if not dot or not raw or not hmac.compare_digest(tag.encode(), _tag(workspace_id, listing, raw).encode()):
        raise ValidationFailed.field("cursor", MESSAGE)
    return raw


def unseal_since(workspace_id: str, listing: str, since: str, message: str) -> str:
    """A waiting listing's `since` token: the raw position it was sealed from, or 422 naming
    `since` with `message` (an empty token, a forged one, or one of another listing)."""
    try:
        raw = unseal(workspace_id, listing, since) if since else None
    except ValidationFailed:
        raw = None
    if raw is None:
        raise ValidationFailed.field("since", message)
    return raw
