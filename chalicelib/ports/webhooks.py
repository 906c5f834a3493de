"""Webhooks, the outbox of events they report, and their deliveries.

The outbox is the event log (ports/repositories.FeedbackRepository, and the
documents' own changes): every event is written in the transaction of the change
it reports and stays *pending* until `dispatch` turns it, atomically, into one
delivery per subscribed webhook. Deliveries are retried until delivered or out
of time; `claim` leases one to a single sender at a time.

Records: webhook {webhook_id, workspace_id, url, events [..], secrets
[{secret, expires_ms?}] newest first, created_ms}; delivery {delivery_id,
webhook_id, workspace_id, event_id, event_created_ms, event (type), status
pending|delivered|failed, attempts, response_status?, last_error?, created_ms,
next_attempt_ms?, updated_ms}.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from chalicelib.ports.records import Event

Record = dict[str, Any]


class WebhookRepository(Protocol):
    def create(self, webhook: Record, max_webhooks: int) -> None:
        """Store a webhook counted against `max_webhooks` per workspace (WebhookCapReached)."""

    def get(self, webhook_id: str) -> Optional[Record]: ...

    def list_for_workspace(self, workspace_id: str) -> list[Record]:
        """Oldest first."""

    def delete(self, webhook: Record) -> bool:
        """Remove it (and free its place); False if it was already gone."""

    def set_secrets(self, webhook: Record, secrets: list[Record]) -> bool:
        """Replace the secrets only if they are still `webhook["secrets"]`; False otherwise."""

    def pending_events(self, limit: int) -> list[Event]:
        """Events not yet dispatched, oldest first."""

    def get_event(self, workspace_id: str, created_ms: int, event_id: str) -> Optional[Event]: ...

    def dispatch(self, event: Event, deliveries: list[Record]) -> None:
        """The deliveries (ids chosen by the caller, deterministic), and the event no
        longer pending, atomically. Repeating it (another worker did it first) is harmless."""

    def add_direct(self, event: Event, delivery: Record) -> None:
        """An event that is not pending (a test ping) with its one delivery, atomically."""

    def due(self, now_ms: int, limit: int) -> list[Record]:
        """Pending deliveries whose `next_attempt_ms` has come, soonest first."""

    def get_delivery(self, delivery_id: str) -> Optional[Record]: ...

    def claim(self, delivery: Record, until_ms: int) -> bool:
        """Lease a pending delivery to this sender until `until_ms` (its `next_attempt_ms`
        moves there), only if nobody changed it since it was read."""

    def record(self, delivery: Record, changes: Record) -> bool:
        """Apply an attempt's outcome (status, attempts, response_status, last_error,
        next_attempt_ms, updated_ms) only if `attempts` is still `delivery["attempts"]`."""

    def deliveries(self, webhook_id: str, limit: int) -> list[Record]:
        """A webhook's deliveries, newest first."""

    def purge_events(self, before_ms: int) -> int:
        """Forget dispatched events older than `before_ms` (DynamoDB: TTL does it)."""
