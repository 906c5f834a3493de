"""The webhook worker's entry points (contract 7c, docs/reliability.md).

- `make run`: `run_worker` is a thread of the server process (scripts/serve_local.py):
  once a second it turns the outbox into deliveries and sends the due ones.
- Deployed: `handle(event, context)` is the WebhookWorker function (infra/resources.yaml),
  invoked by the SQS queue (the API nudges it after each event, so deliveries leave
  within seconds; a message that keeps failing lands in the dead-letter queue, which
  alarms) and by a one-minute schedule (the sweep: retries that came due, and any
  event whose nudge was lost). Either way it runs the same `run_once`.

Workspace exports (contract 7g) ride the same queue: a message `{"kind": "export",
"export_id": ...}` (sent by `POST /api/v1/exports`) makes the invocation build that export
first (services/exports.build: the zip streamed to S3), then it runs its webhook rounds.
Locally an export is built by a thread of the server instead (wiring.export_in_thread).

Quiet steps (services/quiet_steps.py) ride it too: a message `{"kind": "quiet-mail", "step":
"recipient-code" | "reset", ...}` (sent by the email step of a recipients link and by "forgot
password", after their answer) is run by wiring.run_quiet_step, which only calls the
service method that decides and mails. Locally a thread of the server runs it
(wiring.quiet_step_in_thread). The message names no code or token; a failed step is logged
(its step and error code, never the address) and not retried: the person asks again.
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger("docpub.webhooks")

WORKER_INTERVAL_SECONDS = 1.0
PURGE_EVERY_SECONDS = 3600
# A Lambda invocation stops starting new webhook rounds after this long (whatever its timeout: 900 s,
# for a workspace export it may build first).
LAMBDA_BUDGET_SECONDS = 40


def run_worker(stop=None, interval: float = WORKER_INTERVAL_SECONDS) -> None:
    """Until `stop` (a threading.Event) is set: run a round, then wait `interval` when idle.
    Errors are logged and the next round tries again (the outbox keeps everything)."""
    from chalicelib import wiring as registry

    last_purge = 0.0
    while stop is None or not stop.is_set():
        busy = False
        try:
            service = registry.webhooks()
            dispatched, sent = service.run_once()
            busy = bool(dispatched or sent)
            if time.time() - last_purge > PURGE_EVERY_SECONDS:
                service.purge()
                last_purge = time.time()
        except Exception as exc:  # noqa: BLE001 - the worker outlives storage trouble; logged, tried again
            from chalicelib.entrypoints.http import as_error

            log.error("webhook worker round failed: %s", as_error(exc).code, exc_info=True)
        if not busy:
            if stop is not None:
                stop.wait(interval)
            else:
                time.sleep(interval)


def handle(event, context) -> dict:
    """Lambda handler for the SQS nudges and the one-minute schedule: rounds until no work
    is left or the time budget is spent. A failure raises (SQS retries the message, then
    moves it to the dead-letter queue)."""
    from chalicelib import wiring as registry

    began = time.monotonic()
    for step in quiet_messages(event):
        registry.run_quiet_step(registry.default_context(), step)
    for export_id in export_ids(event):
        registry.exports().build(export_id)
    service = registry.webhooks()
    rounds = 0
    while time.monotonic() - began < LAMBDA_BUDGET_SECONDS:
        dispatched, sent = service.run_once()
        rounds += 1
        if not dispatched and not sent:
            break
    return {"rounds": rounds}


def _bodies(event) -> list:
    import json

    found = []
    for record in (event or {}).get("Records") or []:
        try:
            found.append(json.loads(record.get("body") or "{}"))
        except ValueError:
            continue
    return found


def export_ids(event) -> list[str]:
    """The exports an SQS event asks to build (other messages are nudges of the outbox)."""
    return [body["export_id"] for body in _bodies(event)
            if isinstance(body, dict) and body.get("kind") == "export" and isinstance(body.get("export_id"), str)]


def quiet_messages(event) -> list[dict]:
    """The quiet steps an SQS event carries."""
    from chalicelib.services import quiet_steps

    return [step for step in map(quiet_steps.message_of, _bodies(event)) if step is not None]
