"""Webhooks per the Standard Webhooks specification (contract 7c).

Durability: every event is written to the outbox (the event log) in the same
transaction as the change it reports, so nothing is lost if a process dies
between the change and the send. A worker (`run_once`: the `make run` worker
thread; deployed, the SQS consumer and a one-minute sweep, infra/) turns pending
events into one delivery per subscribed webhook (atomically, with deterministic
delivery ids, so two workers never make two), then sends due deliveries.

Delivery: headers `webhook-id` (the delivery id, the same on every retry),
`webhook-timestamp`, `webhook-signature` (`v1,<base64 HMAC-SHA256>` keyed with
each active secret: after a rotation the previous secret also signs for 24 h);
body `{"type", "timestamp", "data"}`. A non-2xx, a redirect, a timeout (10 s)
or a host that does not resolve is retried after base, 2 x base, 4 x base ... seconds
(base DOCPUB_WEBHOOKS_RETRY_BASE_S, default 30) while within 24 h of the event;
then the delivery is `failed`. A target refused by the outbound address check (not
public, not https) is `failed` at once: no retry can change it. Creation checks the
target the same way, so only a host whose DNS changed after creation gets there.
Every attempt is one log line with its outcome and `error` (never the URL). Sends happen only in the worker, never in an API
request, so a slow or broken receiver never slows the API. The clock and the
sender are injectable (tests move time instead of sleeping).
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets as secrets_module
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from chalicelib import config
from chalicelib.domain import limits
from chalicelib.errors import NotFound, PlanLimitReached, ValidationFailed
from chalicelib.models import (
    Webhook, WebhookCreated, WebhookCreateRequest, WebhookDelivery, WebhookDeliveryList, WebhookList,
    WebhookSecretRotated, WebhookTestQueued,
)
from chalicelib.ports import WebhookCapReached
from chalicelib.ports import records
from chalicelib.ports.records import Event, WebhookSecret
from chalicelib.services import access
from chalicelib.services.access import requires, Who
from chalicelib.services.context import Context, rfc3339

log = logging.getLogger("docpub.webhooks")

EVENTS = ("feedback.created", "feedback.replied", "feedback.resolved", "document.published", "document.deleted",
          "review.requested", "review.approved", "review.changes_requested")
TEST_EVENT = "webhook.test"
SECRET_BYTES = 32
PREVIOUS_SECRET_SECONDS = 24 * 3600
# A sender holds a delivery this long; if it dies meanwhile, another sends it then.
LEASE_MS = 60_000
BATCH = 50
SENDERS = 8
LAST_ERROR_CHARS = 300  # `last_error` is a short reason (a long host name could make it long)


def new_webhook_id() -> str:
    return "wh_" + secrets_module.token_urlsafe(12)


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets_module.token_bytes(SECRET_BYTES)).decode()


def delivery_id_for(event_id: str, webhook_id: str) -> str:
    """Deterministic: dispatching an event twice never makes two deliveries."""
    return "msg_" + hashlib.sha256(f"{event_id}\0{webhook_id}".encode()).hexdigest()[:26]


def webhook_model(item: records.Webhook) -> Webhook:
    return Webhook(webhook_id=item.webhook_id, url=item.url, events=list(item.events),
                   created_at=rfc3339(item.created_ms))


def delivery_model(item: records.WebhookDelivery) -> WebhookDelivery:
    return WebhookDelivery(delivery_id=item.delivery_id, event=item.event, status=item.status,
                           attempts=item.attempts, response_status=item.response_status,
                           created_at=rfc3339(item.created_ms),
                           next_attempt_at=rfc3339(item.next_attempt_ms) if item.status == "pending"
                           else None, last_error=item.last_error)


def signature(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the secret's decoded bytes
    (the Standard Webhooks reference library computes the same; tests verify with it)."""
    from standardwebhooks.webhooks import Webhook as Reference

    return Reference(secret).sign(msg_id, datetime.fromtimestamp(timestamp, tz=timezone.utc), body)


class WebhookService:
    def __init__(self, ctx: Context, send: Optional[Callable[..., Any]] = None):
        self.ctx = ctx
        self._send = send

    @property
    def send(self) -> Callable[..., Any]:
        return self._send or self.ctx.webhook_sender.send

    # ---------------------------------------------------------------- owners

    @requires("create_webhook")
    def create(self, who: Who, request: WebhookCreateRequest) -> WebhookCreated:
        actor = access.actor(self.ctx, who)
        sender = self.ctx.webhook_sender
        try:
            sender.check_target(request.url)  # resolved now as at every delivery
        except sender.TargetRefused as exc:
            raise ValidationFailed.field("url", str(exc)) from None
        events = tuple(dict.fromkeys(request.events))
        secret = new_secret()
        item = records.Webhook(webhook_id=new_webhook_id(), workspace_id=actor.workspace_id, url=request.url,
                               events=events, secrets=(WebhookSecret(secret),), created_ms=self.ctx.now_ms())
        try:
            self.ctx.webhooks.create(item, limits.WEBHOOKS_PER_WORKSPACE)
        except WebhookCapReached as exc:
            raise PlanLimitReached(
                f"A workspace has at most {limits.WEBHOOKS_PER_WORKSPACE} webhooks; delete one first.",
                {"limit": limits.WEBHOOKS_PER_WORKSPACE, "current": exc.current}) from None
        return WebhookCreated(**webhook_model(item).model_dump(), secret=secret)

    @requires("list_webhooks")
    def list(self, who: Who) -> WebhookList:
        actor = access.actor(self.ctx, who)
        return WebhookList(webhooks=[webhook_model(w) for w in self.ctx.webhooks.list_for_workspace(actor.workspace_id)])

    @requires("delete_webhook")
    def delete(self, who: Who, webhook_id: str) -> None:
        item = self._owned(who, webhook_id)
        self.ctx.webhooks.delete(item)

    @requires("rotate_webhook_secret")
    def rotate_secret(self, who: Who, webhook_id: str) -> WebhookSecretRotated:
        """A new secret signs from now on; the previous one also signs for 24 h, so a
        receiver can switch without losing deliveries."""
        for _attempt in range(5):
            item = self._owned(who, webhook_id)
            now_ms = self.ctx.now_ms()
            secret = new_secret()
            expires_ms = now_ms + PREVIOUS_SECRET_SECONDS * 1000
            previous = WebhookSecret(item.secrets[0].secret, expires_ms=expires_ms)
            if self.ctx.webhooks.set_secrets(item, (WebhookSecret(secret), previous)):
                return WebhookSecretRotated(secret=secret, previous_secret_expires_at=rfc3339(expires_ms))
        raise NotFound("No such webhook in this workspace.")

    @requires("test_webhook")
    def test(self, who: Who, webhook_id: str) -> WebhookTestQueued:
        item = self._owned(who, webhook_id)
        now_ms = self.ctx.now_ms()
        from chalicelib.services.events import make_event

        event = make_event(TEST_EVENT, item.workspace_id, None, now_ms,
                           {"webhook_id": item.webhook_id, "message": "A test event from Docpub."})
        delivery = self._delivery(event, item, now_ms)
        self.ctx.webhooks.add_direct(event, delivery)
        return WebhookTestQueued(delivery_id=delivery.delivery_id)

    @requires("list_webhook_deliveries")
    def deliveries(self, who: Who, webhook_id: str) -> WebhookDeliveryList:
        item = self._owned(who, webhook_id)
        return WebhookDeliveryList(deliveries=[delivery_model(d) for d in self.ctx.webhooks.deliveries(
            item.webhook_id, limits.WEBHOOK_DELIVERIES_SHOWN)])

    def _owned(self, who: Who, webhook_id: str) -> records.Webhook:
        actor = access.actor(self.ctx, who)
        item = self.ctx.webhooks.get(webhook_id) if isinstance(webhook_id, str) and webhook_id.startswith(
            "wh_") and len(webhook_id) < 100 else None
        if item is None or item.workspace_id != actor.workspace_id:
            raise NotFound("No such webhook in this workspace.")
        return item

    # ---------------------------------------------------------------- the worker

    @staticmethod
    def _delivery(event: Event, webhook: records.Webhook, now_ms: int) -> records.WebhookDelivery:
        return records.WebhookDelivery(
            delivery_id=delivery_id_for(event.event_id, webhook.webhook_id), webhook_id=webhook.webhook_id,
            workspace_id=event.workspace_id, event_id=event.event_id, event_created_ms=event.created_ms,
            event=event.type, status="pending", attempts=0, created_ms=now_ms, next_attempt_ms=now_ms,
            updated_ms=now_ms)

    def dispatch_pending(self, limit: int = 100) -> int:
        """Turn pending events into deliveries (one per subscribed webhook); how many events."""
        events = self.ctx.webhooks.pending_events(limit)
        hooks: dict[str, list[records.Webhook]] = {}
        for event in events:
            workspace_id = event.workspace_id
            if workspace_id not in hooks:
                hooks[workspace_id] = self.ctx.webhooks.list_for_workspace(workspace_id)
            now_ms = self.ctx.now_ms()
            deliveries = [self._delivery(event, w, now_ms) for w in hooks[workspace_id]
                          if event.type in w.events]
            self.ctx.webhooks.dispatch(event, deliveries)
        return len(events)

    def deliver_due(self, limit: int = BATCH, parallel: int = SENDERS) -> int:
        """Send every due delivery (a few at a time); how many were attempted."""
        due = self.ctx.webhooks.due(self.ctx.now_ms(), limit)
        if parallel <= 1 or len(due) <= 1:
            return sum(1 for d in due if self.attempt(d))
        with ThreadPoolExecutor(max_workers=min(parallel, len(due))) as pool:
            return sum(1 for done in pool.map(self.attempt, due) if done)

    def run_once(self) -> tuple[int, int]:
        return self.dispatch_pending(), self.deliver_due()

    def attempt(self, delivery: records.WebhookDelivery) -> bool:
        """One try of one delivery, if this sender wins its lease. True if it was tried."""
        now_ms = self.ctx.now_ms()
        if delivery.status != "pending" or (delivery.next_attempt_ms or 0) > now_ms:
            return False
        if not self.ctx.webhooks.claim(delivery, now_ms + LEASE_MS):
            return False
        delivery = replace(delivery, next_attempt_ms=now_ms + LEASE_MS)
        webhook = self.ctx.webhooks.get(delivery.webhook_id)
        event = self.ctx.webhooks.get_event(delivery.workspace_id, delivery.event_created_ms or 0, delivery.event_id)
        attempts = delivery.attempts + 1
        if webhook is None or event is None:
            self.ctx.webhooks.record(delivery, replace(
                delivery, status="failed", last_error="webhook deleted" if webhook is None
                else "event no longer exists (its document was deleted)", next_attempt_ms=None, updated_ms=now_ms))
            return True
        body, headers = self.render(event, delivery.delivery_id, webhook, now_ms)
        result = self.send(webhook.url, body.encode("utf-8"), headers, float(limits.WEBHOOK_TIMEOUT_SECONDS))
        done_ms = self.ctx.now_ms()
        tried = replace(delivery, attempts=attempts, response_status=result.status, updated_ms=done_ms,
                        last_error=None if result.ok else (result.error or "failed")[:LAST_ERROR_CHARS])
        if result.ok:
            outcome = replace(tried, status="delivered", next_attempt_ms=None)
        elif getattr(result, "refused", False):  # the target itself is refused: no retry can help
            outcome = replace(tried, status="failed", next_attempt_ms=None)
        else:
            delay_ms = int(config.webhook_retry_base_seconds() * 1000 * (2 ** (attempts - 1)))
            if done_ms + delay_ms - event.created_ms <= limits.WEBHOOK_RETRY_SECONDS * 1000:
                outcome = replace(tried, status="pending", next_attempt_ms=done_ms + delay_ms)
            else:
                outcome = replace(tried, status="failed", next_attempt_ms=None)
        self.ctx.webhooks.record(delivery, outcome)
        # Why it did not go, never the URL (its path or query is often the receiver's secret).
        log.log(logging.INFO if result.ok else logging.WARNING, json.dumps(
            {"msg": "webhook delivery", "webhook_id": webhook.webhook_id, "delivery_id": delivery.delivery_id,
             "event": delivery.event, "attempt": attempts, "status": outcome.status,
             "response_status": result.status, "error": outcome.last_error}))
        return True

    def render(self, event: Event, delivery_id: str, webhook: records.Webhook,
               now_ms: int) -> tuple[str, dict[str, str]]:
        """The body and the Standard Webhooks headers of one attempt."""
        body = json.dumps({"type": event.type, "timestamp": rfc3339(event.created_ms),
                           "data": dict(event.payload)}, ensure_ascii=False, separators=(",", ":"))
        timestamp = now_ms // 1000
        active = [s.secret for s in webhook.secrets if s.expires_ms is None or s.expires_ms > now_ms]
        headers = {"webhook-id": delivery_id, "webhook-timestamp": str(timestamp),
                   "webhook-signature": " ".join(signature(s, delivery_id, timestamp, body) for s in active)}
        return body, headers

    def purge(self, days: int = 30) -> int:
        return self.ctx.webhooks.purge_events(self.ctx.now_ms() - days * 86400 * 1000)

