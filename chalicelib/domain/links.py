"""Share-link lifecycle rules (pure, no I/O): expiry, disable, and how long a
cache may keep an answer.

A document carries `share_enabled` (default true) and `share_expires_ms`
(None: never). A link is expired *at* its expiry instant (now >= expiry).

Edge coherence (docs/sharing.md): every publicly cacheable share answer may be
kept by a shared cache at most EDGE_TTL_SECONDS, and never past the link's
expiry, so an expired link is never served from a cache after
`share_expires_at` without anyone touching the document.
"""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Optional, Protocol

from chalicelib.errors import ValidationFailed


class LinkSettings(Protocol):
    """A document's share link settings (ports/records.Document and DocumentListing)."""

    @property
    def share_enabled(self) -> bool: ...

    @property
    def share_expires_ms(self) -> Optional[int]: ...

    @property
    def share_access(self) -> str: ...

MAX_EXPIRY_DAYS = 366
MAX_EXPIRY_MS = MAX_EXPIRY_DAYS * 24 * 3600 * 1000
# The longest any shared cache (CloudFront) may keep a public share answer; the
# bound on "withdrawn at the edge" when an invalidation is late or lost.
EDGE_TTL_SECONDS = 60
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_expiry(value: Optional[str], now_ms: int) -> Optional[int]:
    """`share_expires_at` (RFC 3339 UTC, already normalised by the model) as epoch ms;
    None clears. Must lie in the future and at most 366 days ahead."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    # Exact integer milliseconds (timestamp() * 1000 is a float: .123 could become 122).
    expires_ms = (moment - EPOCH) // timedelta(milliseconds=1)
    if expires_ms <= now_ms:
        raise ValidationFailed.field("share_expires_at", "must be in the future")
    if expires_ms - now_ms > MAX_EXPIRY_MS:
        raise ValidationFailed.field("share_expires_at", f"must be at most {MAX_EXPIRY_DAYS} days ahead")
    return expires_ms


def enabled(doc: LinkSettings) -> bool:
    return doc.share_enabled is not False


def expires_ms(doc: LinkSettings) -> Optional[int]:
    value = doc.share_expires_ms
    return int(value) if value is not None else None


def expired(doc: LinkSettings, now_ms: int) -> bool:
    moment = expires_ms(doc)
    return moment is not None and now_ms >= moment


def cache_seconds(doc: LinkSettings, now_ms: int, ceiling: int = EDGE_TTL_SECONDS) -> int:
    """How long a cache may keep a public answer of this link: at most `ceiling`,
    and never beyond the expiry (rounded down: a cached copy dies before the link)."""
    moment = expires_ms(doc)
    if moment is None:
        return ceiling
    return max(0, min(ceiling, (moment - now_ms) // 1000))


def withdraws(before: LinkSettings, changes: Mapping[str, Any], now_ms: int) -> bool:
    """Does changing `before` by `changes` (document fields) withdraw access that
    a cache may still be serving? Disabling the link does; so does moving its expiry
    earlier to a moment a copy cached before the change could outlive (cached copies
    live at most EDGE_TTL_SECONDS, so a later expiry needs nothing)."""
    if "share_enabled" in changes and enabled(before) and changes["share_enabled"] is False:
        return True
    if changes.get("share_access") in ("workspace", "recipients") and (before.share_access or "public") == "public":
        return True  # a public copy at the edge must not outlive the move to members or recipients only
    new = changes.get("share_expires_ms")
    if new is not None:
        old = expires_ms(before)
        return bool((old is None or new < old) and new - now_ms < EDGE_TTL_SECONDS * 1000)
    return False


def link_ref(share_id: str) -> str:
    """What logs say instead of a share id (a link is a capability: never logged)."""
    return hashlib.sha256(share_id.encode()).hexdigest()[:12]
