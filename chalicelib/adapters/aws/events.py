"""The event log on DynamoDB: `EV#<workspace>` / `<created_ms>#<event_id>`, appended
inside the transaction of the change it reports. Events not yet turned into
webhook deliveries are listed by GSI1 (`OUTBOX#PENDING`). Items expire (TTL)
after EVENT_DAYS; correctness never depends on it."""
from __future__ import annotations

import json
from typing import Optional

from chalicelib.adapters.aws.keys import OUTBOX_INDEX_PK, event_key
from chalicelib.adapters.aws.table import Transaction

EVENT_DAYS = 30


def event_item(event: dict) -> dict:
    key = event_key(event["workspace_id"], event["created_ms"], event["event_id"])
    item = {**key, **{k: v for k, v in event.items() if k != "payload"},
            "wakes": bool(event.get("wakes")),
            "payload_json": json.dumps(event.get("payload") or {}, ensure_ascii=False, separators=(",", ":")),
            "GSI1PK": OUTBOX_INDEX_PK, "GSI1SK": key["SK"],
            "expires_at": event["created_ms"] // 1000 + EVENT_DAYS * 86400}
    return item


def add_event(tx: Transaction, event: Optional[dict]) -> Optional[int]:
    if event is None:
        return None
    return tx.put(event_item(event), "attribute_not_exists(PK)")


def event_record(item: dict) -> dict:
    """An event item as the port's record (payload decoded, keys dropped)."""
    out = {k: v for k, v in item.items() if k not in ("PK", "SK", "GSI1PK", "GSI1SK", "expires_at", "payload_json")}
    out["payload"] = json.loads(item.get("payload_json") or "{}")
    return out
