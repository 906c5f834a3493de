"""Webhooks, the outbox of events they report, and their deliveries.

The outbox is the event log (ports/repositories.FeedbackRepository, and the
documents' own changes): every event is written in the transaction of the change
it reports and stays *pending* until `dispatch` turns it, atomically, into one
delivery per subscribed webhook. Deliveries are retried until delivered or out
of time; `claim` leases one to a single sender at a time.

Records (chalicelib/ports/records.py): `Webhook` (its `WebhookSecret`s newest first),
`WebhookDelivery`, `Event`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

from chalicelib.ports.records import Event

if TYPE_CHECKING:
    from chalicelib.ports.records import Webhook, WebhookDelivery, WebhookSecret


class WebhookRepository(Protocol):
    def create(self, webhook: Webhook, max_webhooks: int) -> None:
        """Store a webhook counted against `max_webhooks` per workspace (WebhookCapReached)."""

    def get(self, webhook_id: str) -> Optional[Webhook]: ...

    def list_for_workspace(self, workspace_id: str) -> list[Webhook]:
        """Oldest first."""

    def delete(self, webhook: Webhook) -> bool:
        """Remove it (and free its place); False if it was already gone."""

    def set_secrets(self, webhook: Webhook, secrets: tuple[WebhookSecret, ...]) -> bool:
        """Replace the secrets only if they are still `webhook.secrets`; False otherwise."""

    def pending_events(self, limit: int) -> list[Event]:
        """Events not yet dispatched, oldest first."""

    def get_event(self, workspace_id: str, created_ms: int, event_id: str) -> Optional[Event]: ...

    def dispatch(self, event: Event, deliveries: list[WebhookDelivery]) -> None:
        """The deliveries (ids chosen by the caller, deterministic), and the event no
        longer pending, atomically. Repeating it (another worker did it first) is harmless."""

    def add_direct(self, event: Event, delivery: WebhookDelivery) -> None:
        """An event that is not pending (a test ping) with its one delivery, atomically."""

    def due(self, now_ms: int, limit: int) -> list[WebhookDelivery]:
        """Pending deliveries whose `next_attempt_ms` has come, soonest first."""

    def get_delivery(self, delivery_id: str) -> Optional[WebhookDelivery]: ...

    def claim(self, delivery: WebhookDelivery, until_ms: int) -> bool:
        """Lease a pending delivery to this sender until `until_ms` (its `next_attempt_ms`
        moves there), only if nobody changed it since it was read."""

    def record(self, delivery: WebhookDelivery, outcome: WebhookDelivery) -> bool:
        """Store an attempt's outcome (its status, attempts, response_status, last_error,
        next_attempt_ms, updated_ms) only if `attempts` is still `delivery.attempts`."""

    def deliveries(self, webhook_id: str, limit: int) -> list[WebhookDelivery]:
        """A webhook's deliveries, newest first."""

    def purge_events(self, before_ms: int) -> int:
        """Forget dispatched events older than `before_ms` (where the store does not expire them itself)."""
