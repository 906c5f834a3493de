"""The activity log (contract 7d): who did what, from which surface, kept 90 days.

Services record an entry after a change succeeded (publish, edit, delete, share
settings, keys, members, connected apps, branding, plan). Recording is best
effort: the change already happened, so a failure to record is logged, never
turned into an error for a change that was made."""
from __future__ import annotations

import logging
import secrets
import time
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import limits
from chalicelib.errors import ValidationFailed
from chalicelib.ports import BadCursor
from chalicelib.ports.records import ActivityEntry
from chalicelib.services.access import Actor, Who, requires
from chalicelib.services.context import Context, rfc3339

if TYPE_CHECKING:
    from chalicelib.models import ActivityList

log = logging.getLogger("docpub")

DAY_MS = 86_400_000
MAX_DETAIL_CHARS = 200


def actor_of(who: Who) -> tuple[str, str, str]:
    """(actor kind, actor id, surface) for the log."""
    if isinstance(who, Actor):
        if who.client:
            return "oauth_client", who.client, who.surface
        if who.member:
            return "member", who.member, who.surface
        if who.key_item is not None:
            return "api_key", who.key_item.key_id, who.surface
        if who.surface == "cli":
            return "operator", "operator", "cli"
        return "member", "unknown", who.surface
    return "api_key", who.key_id, who.surface


def entry(ctx: Context, who: Who, workspace_id: str, action: str, target: Optional[str] = None,
          detail: Optional[dict[str, Any]] = None) -> ActivityEntry:
    """The log line for a change, to store with the change itself (publish, edit) or after it."""
    kind, actor, surface = actor_of(who)
    now_ms = ctx.now_ms()
    clipped = {k: (v[:MAX_DETAIL_CHARS] if isinstance(v, str) else v) for k, v in (detail or {}).items()}
    # Ids sort by when they were made (entries of one millisecond keep their order).
    activity_id = f"act_{time.time_ns():019d}{secrets.token_hex(3)}"
    return ActivityEntry(workspace_id=workspace_id, activity_id=activity_id, created_ms=now_ms, actor_kind=kind,
                         actor=actor, surface=surface, action=action, target=target, detail=clipped,
                         expires_at=now_ms // 1000 + limits.ACTIVITY_DAYS * 86400)


def record(ctx: Context, who: Who, workspace_id: str, action: str, target: Optional[str] = None,
           detail: Optional[dict[str, Any]] = None) -> None:
    """Log a change that was made (best effort, see the module docstring)."""
    line = entry(ctx, who, workspace_id, action, target, detail)
    try:
        ctx.people.add_activity(line)
    except Exception:  # noqa: BLE001 - the change was made; the log must not undo its answer
        log.exception("activity not recorded", extra={"action": action})


def entry_view(entry: ActivityEntry) -> dict[str, Any]:
    return {"activity_id": entry.activity_id, "created_at": rfc3339(entry.created_ms),
            "actor": {"kind": entry.actor_kind, "id": entry.actor}, "surface": entry.surface,
            "action": entry.action, "target": entry.target, "detail": dict(entry.detail)}


class ActivityService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @requires("list_activity")
    def list(self, who: Who, limit: int = 20, cursor: Optional[str] = None) -> ActivityList:
        from chalicelib.models import ActivityList
        from chalicelib.services import cursors
        from chalicelib.services.access import actor

        acting = actor(self.ctx, who)

        since = self.ctx.now_ms() - limits.ACTIVITY_DAYS * DAY_MS
        raw = cursors.unseal(acting.workspace_id, "activity", cursor)
        try:
            entries, next_cursor = self.ctx.people.activity_page(acting.workspace_id, since, limit, raw)
        except BadCursor as exc:
            raise ValidationFailed.field("cursor", cursors.MESSAGE) from exc
        return ActivityList(activity=[entry_view(e) for e in entries],  # type: ignore[misc]
                            next_cursor=cursors.seal(acting.workspace_id, "activity", next_cursor))
