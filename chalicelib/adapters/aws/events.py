"""The event log on DynamoDB: `EV#<workspace>` / `<created_ms>#<event_id>`, appended
inside the transaction of the change it reports. Events not yet turned into
webhook deliveries are listed by GSI1 (`OUTBOX#PENDING`). Items expire (TTL)
after EVENT_DAYS; correctness never depends on it."""
from __future__ import annotations

import json
from typing import Optional

from chalicelib.adapters.aws.keys import OUTBOX_INDEX_PK, event_key
from chalicelib.adapters.aws.table import Transaction
from chalicelib.ports.records import Event, fields_of, from_fields

EVENT_DAYS = 30


def event_item(event: Event) -> dict:
    key = event_key(event.workspace_id, event.created_ms, event.event_id)
    item = {**key, **{k: v for k, v in fields_of(event).items() if k != "payload"},
            "wakes": bool(event.wakes),
            "payload_json": json.dumps(dict(event.payload), ensure_ascii=False, separators=(",", ":")),
            "GSI1PK": OUTBOX_INDEX_PK, "GSI1SK": key["SK"],
            "expires_at": event.created_ms // 1000 + EVENT_DAYS * 86400}
    return item


def add_event(tx: Transaction, event: Optional[Event]) -> Optional[int]:
    if event is None:
        return None
    return tx.put(event_item(event), "attribute_not_exists(PK)")


def event_record(item: dict) -> Event:
    """An event item as the port's record (payload decoded, keys dropped)."""
    return from_fields(Event, {**item, "wakes": bool(item.get("wakes")),
                               "payload": json.loads(item.get("payload_json") or "{}")})
