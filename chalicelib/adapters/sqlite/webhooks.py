"""Webhooks, the outbox (the `events` table's pending rows) and deliveries."""
from __future__ import annotations

import json
from typing import Optional

from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.adapters.sqlite.feedback import event_from_row, insert_event
from chalicelib.ports.records import Event, Webhook, WebhookDelivery, WebhookSecret, fields_of, from_fields
from chalicelib.ports.errors import WebhookCapReached

DELIVERY_COLUMNS = ("delivery_id", "webhook_id", "workspace_id", "event_id", "event", "status", "attempts",
                    "response_status", "last_error", "created_ms", "next_attempt_ms", "updated_ms")
# A delivery with its event's time (the `events` row; gone once the log is purged).
DELIVERIES = ("SELECT d.*, e.created_ms AS event_created_ms FROM webhook_deliveries d "
              "LEFT JOIN events e ON e.event_id = d.event_id")


def _insert_delivery(tx, delivery: WebhookDelivery) -> None:
    values = fields_of(delivery)
    tx.execute(f"INSERT OR IGNORE INTO webhook_deliveries ({', '.join(DELIVERY_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(DELIVERY_COLUMNS))})",
               tuple(values[c] for c in DELIVERY_COLUMNS))


def _delivery(row: dict) -> WebhookDelivery:
    return from_fields(WebhookDelivery, row)


def secrets_json(secrets: tuple[WebhookSecret, ...]) -> str:
    return json.dumps([{k: v for k, v in fields_of(s).items() if v is not None} for s in secrets])


def _webhook(row: dict) -> Webhook:
    return from_fields(Webhook, {**row, "events": tuple(row["events"]),
                                 "secrets": tuple(from_fields(WebhookSecret, s) for s in row["secrets"])})


class WebhookRepository:
    def __init__(self, db: Database):
        self.db = db

    def create(self, webhook: Webhook, max_webhooks: int) -> None:
        with self.db.write() as tx:
            count = one(tx, "SELECT COUNT(*) AS n FROM webhooks WHERE workspace_id = ?", (webhook.workspace_id,))
            held = count["n"] if count else 0
            if held >= max_webhooks:
                raise WebhookCapReached(held)
            tx.execute("INSERT INTO webhooks (webhook_id, workspace_id, url, events, secrets, created_ms) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (webhook.webhook_id, webhook.workspace_id, webhook.url, json.dumps(list(webhook.events)),
                        secrets_json(webhook.secrets), webhook.created_ms))

    def get(self, webhook_id: str) -> Optional[Webhook]:
        row = self.db.one("SELECT * FROM webhooks WHERE webhook_id = ?", (webhook_id,))
        return _webhook(row) if row is not None else None

    def list_for_workspace(self, workspace_id: str) -> list[Webhook]:
        return [_webhook(r) for r in self.db.all(
            "SELECT * FROM webhooks WHERE workspace_id = ? ORDER BY created_ms, webhook_id", (workspace_id,))]

    def delete(self, webhook: Webhook) -> bool:
        with self.db.write() as tx:
            return tx.execute("DELETE FROM webhooks WHERE webhook_id = ?", (webhook.webhook_id,)).rowcount > 0

    def set_secrets(self, webhook: Webhook, secrets: tuple[WebhookSecret, ...]) -> bool:
        with self.db.write() as tx:
            return tx.execute("UPDATE webhooks SET secrets = ? WHERE webhook_id = ? AND secrets = ?",
                              (secrets_json(secrets), webhook.webhook_id, secrets_json(webhook.secrets))).rowcount > 0

    def pending_events(self, limit: int) -> list[Event]:
        return [event_from_row(r) for r in
                self.db.all("SELECT * FROM events WHERE pending = 1 ORDER BY seq LIMIT ?", (limit,))]

    def get_event(self, workspace_id: str, created_ms: int, event_id: str) -> Optional[Event]:
        row = self.db.one("SELECT * FROM events WHERE event_id = ? AND workspace_id = ?", (event_id, workspace_id))
        return event_from_row(row) if row is not None else None

    def dispatch(self, event: Event, deliveries: list[WebhookDelivery]) -> None:
        with self.db.write() as tx:
            if not one(tx, "SELECT 1 AS x FROM events WHERE event_id = ? AND pending = 1", (event.event_id,)):
                return  # dispatched already
            for delivery in deliveries:
                _insert_delivery(tx, delivery)
            tx.execute("UPDATE events SET pending = 0 WHERE event_id = ?", (event.event_id,))

    def add_direct(self, event: Event, delivery: WebhookDelivery) -> None:
        with self.db.write() as tx:
            insert_event(tx, event)
            tx.execute("UPDATE events SET pending = 0 WHERE event_id = ?", (event.event_id,))
            _insert_delivery(tx, delivery)

    def due(self, now_ms: int, limit: int) -> list[WebhookDelivery]:
        return [_delivery(r) for r in self.db.all(
            DELIVERIES + " WHERE d.status = 'pending' AND d.next_attempt_ms <= ? "
            "ORDER BY d.next_attempt_ms LIMIT ?", (now_ms, limit))]

    def get_delivery(self, delivery_id: str) -> Optional[WebhookDelivery]:
        row = self.db.one(DELIVERIES + " WHERE d.delivery_id = ?", (delivery_id,))
        return _delivery(row) if row is not None else None

    def claim(self, delivery: WebhookDelivery, until_ms: int) -> bool:
        with self.db.write() as tx:
            return tx.execute(
                "UPDATE webhook_deliveries SET next_attempt_ms = ? WHERE delivery_id = ? AND status = 'pending' "
                "AND attempts = ? AND next_attempt_ms = ?",
                (until_ms, delivery.delivery_id, delivery.attempts, delivery.next_attempt_ms)).rowcount > 0

    def record(self, delivery: WebhookDelivery, outcome: WebhookDelivery) -> bool:
        names = ("status", "attempts", "response_status", "last_error", "next_attempt_ms", "updated_ms")
        with self.db.write() as tx:
            return tx.execute(
                f"UPDATE webhook_deliveries SET {', '.join(f'{n} = ?' for n in names)} "
                "WHERE delivery_id = ? AND attempts = ?",
                tuple(getattr(outcome, n) for n in names) + (delivery.delivery_id, delivery.attempts)).rowcount > 0

    def deliveries(self, webhook_id: str, limit: int) -> list[WebhookDelivery]:
        return [_delivery(r) for r in self.db.all(
            DELIVERIES + " WHERE d.webhook_id = ? ORDER BY d.created_ms DESC, d.delivery_id DESC LIMIT ?",
            (webhook_id, limit))]

    def purge_events(self, before_ms: int) -> int:
        with self.db.write() as tx:
            return tx.execute("DELETE FROM events WHERE pending = 0 AND created_ms < ?", (before_ms,)).rowcount
