"""Deployed: after an event is committed, nudge the webhook worker through SQS so the
delivery leaves within seconds. Best effort: the outbox already holds the event, and
the worker's one-minute sweep sends anything a lost nudge left behind."""
from __future__ import annotations

import logging

from chalicelib import config
from chalicelib.adapters.aws import clients as aws

log = logging.getLogger("docpub.webhooks")


def nudge() -> None:
    queue = config.webhook_queue_url()
    if not queue:
        return
    try:
        aws.sqs().send_message(QueueUrl=queue, MessageBody='{"kind":"outbox"}')
    except Exception as exc:  # noqa: BLE001 - best effort: the sweep delivers it anyway
        log.warning("webhook nudge failed: %s", type(exc).__name__)


def send_export(export_id: str) -> None:
    """Hand a started export to the worker function (entrypoints/worker.handle builds it).
    Not best effort: an export nobody builds would only fail at its deadline, so a refused
    send is the start's error (503) and the export fails at once (services/exports.py)."""
    import json

    aws.sqs().send_message(QueueUrl=config.webhook_queue_url(),
                           MessageBody=json.dumps({"kind": "export", "export_id": export_id}))


def send_quiet_step(step: dict) -> None:
    """Hand a quiet step (services/quiet_steps.py: `{"kind": "quiet-mail", "step": ...}`, no
    code or token in it) to the worker function. Not best effort: a refused send is the
    request's 503, for any address alike."""
    import json

    aws.sqs().send_message(QueueUrl=config.webhook_queue_url(), MessageBody=json.dumps(step))
