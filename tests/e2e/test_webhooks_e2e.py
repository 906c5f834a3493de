"""Webhooks on the real `make run` stack: an event acknowledged before a SIGKILL of
the whole stack is delivered (signed) by the next stack's worker, from the outbox."""
from __future__ import annotations

import pytest
from standardwebhooks.webhooks import Webhook as Reference

from tests.stack import LocalStack
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.e2e


def test_delivery_survives_sigkill_between_event_and_send(tmp_path):
    receiver = Receiver()
    data = tmp_path / "data"
    env = {"DOCPUB_WEBHOOKS_ALLOW_PRIVATE": "true", "DOCPUB_SECRET_KEY": "k" * 40}
    # The first stack never sends (its worker is off): the event can only wait in the outbox.
    first = LocalStack(data, env={**env, "DOCPUB_WEBHOOKS_WORKER": "off"}).start()
    try:
        with first.client() as http:
            hook = http.post("/api/v1/webhooks", json={"url": receiver.url, "events": ["feedback.created"]}).json()
            doc = http.post("/api/v1/publish", json={"title": "Draft", "html": "<p>In short, the results.</p>"}).json()
            share = doc["share_url"].rsplit("/", 1)[1]
            r = http.post(f"/d/{share}/feedback", json={"message": "Which results?",
                                                        "anchor": {"quote": "the results"}})
            assert r.status_code == 201, r.text
            feedback_id = r.json()["feedback_id"]
    finally:
        first.kill_tree()  # SIGKILL, every process at once, between the event and its send
    assert receiver.received == []
    second = LocalStack(data, port=first.port, env=env).start()
    try:
        [got] = receiver.wait_for(1, timeout=30)
        payload = Reference(hook["secret"]).verify(got.body, got.headers)
        assert payload["type"] == "feedback.created" and payload["data"]["feedback_id"] == feedback_id
        assert payload["data"]["anchor"]["quote"] == "the results"
        with second.client() as http:
            [d] = http.get(f"/api/v1/webhooks/{hook['webhook_id']}/deliveries").json()["deliveries"]
        assert d["status"] == "delivered" and d["delivery_id"] == got.headers["webhook-id"]
    finally:
        second.stop()
        receiver.close()
