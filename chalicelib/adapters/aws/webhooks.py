"""Webhooks (`WH#<id>`, listed by GSI1 `WS#<ws>#WH`), counted on the workspace
item's `webhook_count` in the same transaction (the cap holds under concurrency);
deliveries (`WHD#<id>`, a webhook's log on GSI1 `WH#<id>#D`, the ones still to
try on GSI2 `WHD#DUE` by next attempt time); the outbox is the event items still
on GSI1 `OUTBOX#PENDING` (adapters/aws/events.py)."""
from __future__ import annotations

import json
from typing import Any, Optional

from chalicelib.adapters.aws.events import add_event, event_record
from chalicelib.adapters.aws.keys import (
    DUE_INDEX_PK, OUTBOX_INDEX_PK, deliveries_index_pk, delivery_key, event_key, webhook_key, webhooks_index_pk,
    workspace_key,
)
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.ports.errors import WebhookCapReached
from chalicelib.ports.records import Event, Webhook, WebhookDelivery, WebhookSecret, fields_of, from_fields

# What record(...) writes of an attempt's outcome.
OUTCOME = ("status", "attempts", "response_status", "last_error", "next_attempt_ms", "updated_ms")


def _sk(ms: int, ident: str) -> str:
    return f"{ms:015d}#{ident}"


def _secrets_json(secrets: tuple[WebhookSecret, ...]) -> str:
    return json.dumps([{k: v for k, v in fields_of(s).items() if v is not None} for s in secrets])


def _webhook(item: dict) -> Webhook:
    return from_fields(Webhook, {**item, "events": tuple(item["events"]),
                                 "secrets": tuple(from_fields(WebhookSecret, s)
                                                  for s in json.loads(item["secrets_json"]))})


def _delivery(item: dict) -> WebhookDelivery:
    return from_fields(WebhookDelivery, item)


def _delivery_item(delivery: WebhookDelivery) -> dict:
    item = {**delivery_key(delivery.delivery_id), **fields_of(delivery),
            "GSI1PK": deliveries_index_pk(delivery.webhook_id),
            "GSI1SK": _sk(delivery.created_ms, delivery.delivery_id)}
    if delivery.status == "pending" and delivery.next_attempt_ms is not None:
        item.update(GSI2PK=DUE_INDEX_PK, GSI2SK=_sk(delivery.next_attempt_ms, delivery.delivery_id))
    return item


@storage_errors
class WebhookRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def create(self, webhook: Webhook, max_webhooks: int) -> None:
        tx = Transaction()
        ws_index = tx.update(workspace_key(webhook.workspace_id), "ADD webhook_count :one",
                             "attribute_exists(PK) AND (attribute_not_exists(webhook_count) OR webhook_count < :max)",
                             values={":one": 1, ":max": max_webhooks}, return_old=True)
        record = fields_of(webhook)
        record.pop("secrets")  # stored as JSON text (a list of maps)
        record["events"] = list(webhook.events)
        tx.put({**webhook_key(webhook.webhook_id), **record, "secrets_json": _secrets_json(webhook.secrets),
                "GSI1PK": webhooks_index_pk(webhook.workspace_id),
                "GSI1SK": _sk(webhook.created_ms, webhook.webhook_id)}, "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(ws_index):
                old = exc.old_items[ws_index] or {}
                raise WebhookCapReached(old.get("webhook_count", max_webhooks)) from exc
            raise

    def get(self, webhook_id: str) -> Optional[Webhook]:
        item = self.table.get(webhook_key(webhook_id))
        return _webhook(item) if item is not None else None

    def list_for_workspace(self, workspace_id: str) -> list[Webhook]:
        return [_webhook(i) for i in self.table.query_all("GSI1PK = :pk", {":pk": webhooks_index_pk(workspace_id)},
                                                          index="GSI1")]

    def delete(self, webhook: Webhook) -> bool:
        tx = Transaction()
        tx.delete(webhook_key(webhook.webhook_id), "attribute_exists(PK)")
        tx.update(workspace_key(webhook.workspace_id), "ADD webhook_count :minus", "webhook_count > :zero",
                  values={":minus": -1, ":zero": 0})
        try:
            tx.commit()
        except ConditionFailed:
            return False
        # Its delivery log goes too (best effort: a delivery of a deleted webhook is never sent).
        items = self.table.query_all("GSI1PK = :pk", {":pk": deliveries_index_pk(webhook.webhook_id)},
                                     index="GSI1", projected=())
        self.table.delete_keys([{"PK": i["PK"], "SK": i["SK"]} for i in items])
        return True

    def set_secrets(self, webhook: Webhook, secrets: tuple[WebhookSecret, ...]) -> bool:
        try:
            self.table.update(webhook_key(webhook.webhook_id), "SET secrets_json = :new",
                              "secrets_json = :old", values={":new": _secrets_json(secrets),
                                                             ":old": _secrets_json(webhook.secrets)})
        except ConditionFailed:
            return False
        return True

    def pending_events(self, limit: int) -> list[Event]:
        # The events themselves, read after the index (it may lag): those dispatched since are left out.
        items, _ = self.table.query("GSI1PK = :pk", {":pk": OUTBOX_INDEX_PK}, index="GSI1", limit=limit)
        return [event_record(event) for event in items]

    def get_event(self, workspace_id: str, created_ms: int, event_id: str) -> Optional[Event]:
        item = self.table.get(event_key(workspace_id, created_ms, event_id))
        return event_record(item) if item else None

    def dispatch(self, event: Event, deliveries: list[WebhookDelivery]) -> None:
        tx = Transaction()
        for delivery in deliveries:
            tx.put(_delivery_item(delivery), "attribute_not_exists(PK)")
        tx.update(event_key(event.workspace_id, event.created_ms, event.event_id),
                  "REMOVE GSI1PK, GSI1SK", "attribute_exists(GSI1PK)")
        try:
            tx.commit()
        except ConditionFailed:
            return  # another worker dispatched it first

    def add_direct(self, event: Event, delivery: WebhookDelivery) -> None:
        tx = Transaction()
        add_event(tx, event)
        tx.actions[-1]["Put"]["Item"].pop("GSI1PK", None)
        tx.actions[-1]["Put"]["Item"].pop("GSI1SK", None)
        tx.put(_delivery_item(delivery), "attribute_not_exists(PK)")
        tx.commit()

    def due(self, now_ms: int, limit: int) -> list[WebhookDelivery]:
        items, _ = self.table.query("GSI2PK = :pk AND GSI2SK <= :now", {":pk": DUE_INDEX_PK,
                                                                          ":now": _sk(now_ms, "~")},
                                    index="GSI2", limit=limit)
        return [_delivery(i) for i in items]

    def get_delivery(self, delivery_id: str) -> Optional[WebhookDelivery]:
        item = self.table.get(delivery_key(delivery_id))
        return _delivery(item) if item is not None else None

    def claim(self, delivery: WebhookDelivery, until_ms: int) -> bool:
        try:
            self.table.update(delivery_key(delivery.delivery_id),
                              "SET next_attempt_ms = :until, GSI2SK = :sk",
                              "#s = :pending AND attempts = :attempts AND next_attempt_ms = :was",
                              names={"#s": "status"},
                              values={":until": until_ms, ":sk": _sk(until_ms, delivery.delivery_id),
                                      ":pending": "pending", ":attempts": delivery.attempts,
                                      ":was": delivery.next_attempt_ms})
        except ConditionFailed:
            return False
        return True

    def record(self, delivery: WebhookDelivery, outcome: WebhookDelivery) -> bool:
        changes = {name: getattr(outcome, name) for name in OUTCOME}
        sets: list[str] = []
        removes: list[str] = []
        names: dict[str, str] = {}
        values: dict[str, Any] = {":attempts_was": delivery.attempts}
        for i, (name, value) in enumerate(changes.items()):
            names[f"#f{i}"] = name
            if value is None:
                removes.append(f"#f{i}")
            else:
                sets.append(f"#f{i} = :v{i}")
                values[f":v{i}"] = value
        if changes.get("status") == "pending" and changes.get("next_attempt_ms") is not None:
            sets.append("GSI2PK = :due, GSI2SK = :sk")
            values.update({":due": DUE_INDEX_PK, ":sk": _sk(changes["next_attempt_ms"], delivery.delivery_id)})
        else:
            removes += ["GSI2PK", "GSI2SK"]
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        names["#att"] = "attempts"
        try:
            self.table.update(delivery_key(delivery.delivery_id), update, "#att = :attempts_was",
                              names=names, values=values)
        except ConditionFailed:
            return False
        return True

    def deliveries(self, webhook_id: str, limit: int) -> list[WebhookDelivery]:
        items, _ = self.table.query("GSI1PK = :pk", {":pk": deliveries_index_pk(webhook_id)}, index="GSI1",
                                    limit=limit, forward=False)
        return [_delivery(i) for i in items]

    def purge_events(self, before_ms: int) -> int:
        return 0  # TTL (`expires_at`) removes old events
