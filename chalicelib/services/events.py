"""Events: what a change reports, written in the change's own transaction to the
event log (read by waiting feedback lists; the webhook outbox). `payload` is the
webhook's `data`."""
from __future__ import annotations

import secrets
from typing import Any, Optional

from chalicelib.ports.records import Event


def new_event_id() -> str:
    return "ev_" + secrets.token_urlsafe(12)


def make_event(kind: str, workspace_id: str, document_id: Optional[str], created_ms: int, payload: dict[str, Any],
               feedback_id: Optional[str] = None, reply_id: Optional[str] = None, wakes: bool = False) -> Event:
    """`wakes`: a waiting feedback list answers for it (new feedback, a viewer's reply)."""
    return Event(event_id=new_event_id(), workspace_id=workspace_id, document_id=document_id, type=kind,
                 feedback_id=feedback_id, reply_id=reply_id, wakes=wakes, payload=payload, created_ms=created_ms)
