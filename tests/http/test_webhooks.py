"""Webhooks (contract 7c): Standard Webhooks signatures verified with the reference
library, retries with an injected clock, the outbox, limits and refused targets."""
from __future__ import annotations

import json
import time

import pytest
from standardwebhooks.webhooks import Webhook as Reference

from tests.helpers import FakeClock, auth, post_json
from tests.sharing_helpers import get_json, publish, send_feedback
from tests.webhook_receiver import Receiver

ANCHOR = {"quote": "the results", "prefix": "In short, ", "suffix": " were good."}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def now_clock(storage):
    """A fake clock starting at the real time (the reference library checks timestamps
    against the real clock, within 5 minutes), used by the app's context."""
    from chalicelib.wiring import default_context

    clock = FakeClock(time.time())
    default_context().clock = clock
    return clock


@pytest.fixture
def private_ok(monkeypatch):
    monkeypatch.setenv("DOCPUB_WEBHOOKS_ALLOW_PRIVATE", "true")


def _worker():
    from chalicelib import wiring as registry

    return registry.webhooks()


def _create(client, key, url, events=("feedback.created",)):
    r = post_json(client, "/api/v1/webhooks", {"url": url, "events": list(events)}, key)
    return r.status_code, json.loads(r.body)


def _deliveries(client, key, webhook_id):
    status, body = get_json(client, f"/api/v1/webhooks/{webhook_id}/deliveries", key)
    assert status == 200, body
    return body["deliveries"]


# ------------------------------------------------------------------ managing webhooks

@pytest.mark.parametrize("url, why", [
    ("http://93.184.216.34/hook", "https"), ("https://127.0.0.1/hook", "public"), ("https://10.1.2.3/x", "public"),
    ("https://[::1]/x", "public"), ("https://[64:ff9b::7f00:1]/x", "public"), ("https://[2002:7f00:1::]/x", "public"),
    ("https://[::ffff:127.0.0.1]/x", "public"), ("https://user:pw@93.184.216.34/x", "credentials"),
    ("ftp://93.184.216.34/x", "https"), ("not a url", "https"), ("https://169.254.169.254/latest", "public"),
])
def test_refused_targets(client, workspace, url, why):
    _, key = workspace
    status, body = _create(client, key, url)
    assert status == 422, body
    assert body["error"]["code"] == "validation_error" and why in body["error"]["message"]


def test_create_list_delete_and_the_cap(client, workspace):
    _, key = workspace
    status, created = _create(client, key, "https://93.184.216.34/hook", ["feedback.created", "document.published"])
    assert status == 201, created
    assert set(created) == {"webhook_id", "url", "events", "created_at", "secret"}
    assert created["secret"].startswith("whsec_")
    import base64

    assert 24 <= len(base64.b64decode(created["secret"][6:])) <= 64
    status, listing = get_json(client, "/api/v1/webhooks", key)
    assert status == 200 and "secret" not in json.dumps(listing)
    assert listing["webhooks"][0]["events"] == ["feedback.created", "document.published"]
    for i in range(4):
        assert _create(client, key, f"https://93.184.216.34/h{i}")[0] == 201
    status, body = _create(client, key, "https://93.184.216.34/sixth")
    assert status == 403 and body["error"]["code"] == "plan_limit_reached"
    assert body["error"]["details"] == {"limit": 5, "current": 5}
    r = client.http.delete(f"/api/v1/webhooks/{created['webhook_id']}", headers=auth(key))
    assert r.status_code == 204
    assert _create(client, key, "https://93.184.216.34/sixth")[0] == 201
    assert client.http.delete(f"/api/v1/webhooks/{created['webhook_id']}", headers=auth(key)).status_code == 404


@pytest.mark.parametrize("body", [{"url": "https://93.184.216.34/x", "events": []},
                                  {"url": "https://93.184.216.34/x", "events": ["feedback.deleted"]},
                                  {"url": "https://93.184.216.34/x"}, {"events": ["feedback.created"]},
                                  {"url": "https://93.184.216.34/x", "events": ["feedback.created"], "secret": "x"}])
def test_bad_webhook_bodies_are_422(client, workspace, body):
    _, key = workspace
    r = post_json(client, "/api/v1/webhooks", body, key)
    assert r.status_code == 422, r.body


def test_other_workspaces_webhooks_are_not_found(client, workspace, services):
    _, key = workspace
    _, created = _create(client, key, "https://93.184.216.34/hook")
    _, other = services.workspaces.create_workspace("Other", "free")
    for method, path in (("delete", ""), ("post", "/test"), ("get", "/deliveries"), ("post", "/rotate-secret")):
        r = getattr(client.http, method)(f"/api/v1/webhooks/{created['webhook_id']}{path}", headers=auth(other.api_key))
        assert r.status_code == 404, (method, path, r.body)
    assert client.http.get("/api/v1/webhooks", headers={}).status_code == 401


# ------------------------------------------------------------------ deliveries

def test_feedback_delivery_is_signed_per_standard_webhooks(client, workspace, receiver, private_ok, now_clock):
    _, key = workspace
    _, hook = _create(client, key, receiver.url, ["feedback.created", "feedback.replied"])
    doc = publish(client, key, html="<p>In short, the results were good.</p>")
    r = send_feedback(client, doc["share_id"], {"message": "Which results?", "anchor": ANCHOR, "name": "Ana"})
    feedback_id = json.loads(r.body)["feedback_id"]
    assert receiver.received == []  # the API never sends: the worker does
    _worker().run_once()
    [got] = receiver.wait_for(1)
    payload = Reference(hook["secret"]).verify(got.body, got.headers)
    assert payload["type"] == "feedback.created" and payload["timestamp"].endswith("Z")
    data = payload["data"]
    assert data["feedback_id"] == feedback_id and data["anchor"] == ANCHOR and data["replies"] == []
    # where the passage is now, as every Feedback answer says (issue 34 left it null in payloads)
    assert data["anchor_state"] == {"version_number": 1, "status": "exact", "quote_now": None}
    assert got.headers["webhook-id"].startswith("msg_")
    assert int(got.headers["webhook-timestamp"]) == int(now_clock())
    with pytest.raises(Exception):
        Reference("whsec_" + "A" * 43).verify(got.body, got.headers)
    # a reply: data is the thread with its replies, plus `reply`
    now_clock.advance(1)
    post_json(client, f"/api/v1/feedback/{feedback_id}/replies", {"message": "Fixed"}, key)
    _worker().run_once()
    second = receiver.wait_for(2)[1]
    replied = Reference(hook["secret"]).verify(second.body, second.headers)
    assert replied["type"] == "feedback.replied" and replied["data"]["reply"]["message"] == "Fixed"
    assert [x["message"] for x in replied["data"]["replies"]] == ["Fixed"]
    assert replied["data"]["anchor_state"]["status"] == "exact"
    [d2, d1] = _deliveries(client, key, hook["webhook_id"])
    assert d1["delivery_id"] == got.headers["webhook-id"]
    assert (d1["status"], d1["attempts"], d1["response_status"], d1["event"]) == ("delivered", 1, 200,
                                                                                   "feedback.created")
    # not subscribed: nothing sent
    client.http.post(f"/api/v1/feedback/{feedback_id}/resolve", headers=auth(key), body=b"")
    _worker().run_once()
    assert len(receiver.received) == 2


def test_document_events(client, workspace, receiver, private_ok, now_clock):
    _, key = workspace
    _, hook = _create(client, key, receiver.url, ["document.published", "document.deleted"])
    doc = publish(client, key, "Plan")
    publish(client, key, "Plan v2", document_id=doc["document_id"])
    post_json(client, f"/api/v1/documents/{doc['document_id']}/edit",
              {"edits": [{"old_string": "hello", "new_string": "bye"}]}, key)
    client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key))
    _worker().run_once()
    got = receiver.wait_for(4)
    payloads = [Reference(hook["secret"]).verify(g.body, g.headers) for g in got]
    payloads.sort(key=lambda p: (p["type"] == "document.deleted", p["data"]["version_count"]))
    # Deliveries go out in parallel: their order is not promised (Standard Webhooks neither).
    assert [p["type"] for p in payloads] == ["document.published"] * 3 + ["document.deleted"]
    assert [p["data"]["version_count"] for p in payloads[:3]] == [1, 2, 3]
    assert payloads[1]["data"]["title"] == "Plan v2" and payloads[0]["data"]["document_id"] == doc["document_id"]


def test_retries_back_off_and_keep_the_same_id(client, workspace, receiver, private_ok, now_clock):
    receiver.answers = [500, 503, 200]
    _, key = workspace
    _, hook = _create(client, key, receiver.url)
    doc = publish(client, key)
    send_feedback(client, doc["share_id"], {"message": "m"})
    worker = _worker()
    worker.run_once()
    assert len(receiver.received) == 1
    [d] = _deliveries(client, key, hook["webhook_id"])
    assert (d["status"], d["attempts"], d["response_status"]) == ("pending", 1, 500)
    worker.run_once()
    now_clock.advance(29)
    worker.run_once()
    assert len(receiver.received) == 1  # the first retry comes after 30 s
    now_clock.advance(1)
    worker.run_once()
    assert len(receiver.received) == 2
    now_clock.advance(59)
    worker.run_once()
    assert len(receiver.received) == 2  # then 60 s
    now_clock.advance(1)
    worker.run_once()
    assert len(receiver.received) == 3
    assert len({g.headers["webhook-id"] for g in receiver.received}) == 1
    for g in receiver.received:
        Reference(hook["secret"]).verify(g.body, g.headers)
    [d] = _deliveries(client, key, hook["webhook_id"])
    assert (d["status"], d["attempts"], d["response_status"]) == ("delivered", 3, 200)


def test_gives_up_after_24_hours(client, workspace, receiver, private_ok, now_clock, monkeypatch):
    monkeypatch.setenv("DOCPUB_WEBHOOKS_RETRY_BASE_S", "30")
    receiver.answers = [500]
    _, key = workspace
    _, hook = _create(client, key, receiver.url)
    doc = publish(client, key)
    start = now_clock()
    send_feedback(client, doc["share_id"], {"message": "m"})
    worker = _worker()
    for _ in range(40):
        worker.run_once()
        [d] = _deliveries(client, key, hook["webhook_id"])
        if d["status"] != "pending":
            break
        due_ms = worker.ctx.webhooks.get_delivery(d["delivery_id"]).next_attempt_ms
        now_clock.now = max(now_clock.now, due_ms / 1000)
    assert d["status"] == "failed" and d["attempts"] == 12  # 0, 30, 90, ... 61,410 s; next would pass 24 h
    assert now_clock() - start <= 24 * 3600
    assert len(receiver.received) == 12


@pytest.mark.parametrize("answer, expect_status", [("garbage", None), (("redirect", "http://127.0.0.1:9/x"), 302),
                                                  (404, 404)])
def test_bad_answers_are_failed_attempts(client, workspace, receiver, private_ok, now_clock, answer, expect_status):
    receiver.answers = [answer]
    _, key = workspace
    _, hook = _create(client, key, receiver.url)
    doc = publish(client, key)
    send_feedback(client, doc["share_id"], {"message": "m"})
    _worker().run_once()
    [d] = _deliveries(client, key, hook["webhook_id"])
    assert (d["status"], d["attempts"], d["response_status"]) == ("pending", 1, expect_status)
    assert d["last_error"]


def test_a_slow_receiver_times_out_and_never_slows_the_api(client, workspace, receiver, private_ok, now_clock,
                                                             monkeypatch):
    from chalicelib.domain import limits

    monkeypatch.setattr(limits, "WEBHOOK_TIMEOUT_SECONDS", 0.5)
    receiver.answers = [("sleep", 3)]
    _, key = workspace
    _create(client, key, receiver.url)
    doc = publish(client, key)
    began = time.monotonic()
    assert send_feedback(client, doc["share_id"], {"message": "m"}).status_code == 201
    assert time.monotonic() - began < 1.0
    began = time.monotonic()
    _worker().run_once()
    assert time.monotonic() - began < 2.5
    d = _worker().ctx.webhooks.due(10**15, 10)[0]
    assert d.last_error.startswith("no answer within") and d.response_status is None


def test_private_targets_are_refused_at_delivery(client, workspace, receiver, private_ok, now_clock, monkeypatch):
    _, key = workspace
    _, hook = _create(client, key, receiver.url)
    monkeypatch.setenv("DOCPUB_WEBHOOKS_ALLOW_PRIVATE", "false")
    doc = publish(client, key)
    send_feedback(client, doc["share_id"], {"message": "m"})
    _worker().run_once()
    assert receiver.received == []
    [d] = _deliveries(client, key, hook["webhook_id"])
    assert d["status"] == "failed" and "target refused" in d["last_error"]  # at once (issue 33)


def test_test_ping_and_secret_rotation(client, workspace, receiver, private_ok, now_clock):
    _, key = workspace
    _, hook = _create(client, key, receiver.url)
    r = client.http.post(f"/api/v1/webhooks/{hook['webhook_id']}/test", headers=auth(key))
    assert r.status_code == 202, r.body
    delivery_id = json.loads(r.body)["delivery_id"]
    _worker().run_once()
    [ping] = receiver.wait_for(1)
    assert ping.headers["webhook-id"] == delivery_id
    assert Reference(hook["secret"]).verify(ping.body, ping.headers)["type"] == "webhook.test"
    r = client.http.post(f"/api/v1/webhooks/{hook['webhook_id']}/rotate-secret", headers=auth(key))
    rotated = json.loads(r.body)
    assert r.status_code == 200 and rotated["secret"] != hook["secret"]
    client.http.post(f"/api/v1/webhooks/{hook['webhook_id']}/test", headers=auth(key))
    _worker().run_once()
    second = receiver.wait_for(2)[1]
    assert len(second.headers["webhook-signature"].split(" ")) == 2
    Reference(rotated["secret"]).verify(second.body, second.headers)
    Reference(hook["secret"]).verify(second.body, second.headers)  # the old one, for 24 h
    now_clock.advance(24 * 3600 + 1)
    client.http.post(f"/api/v1/webhooks/{hook['webhook_id']}/test", headers=auth(key))
    _worker().run_once()
    third = receiver.wait_for(3)[2]
    assert len(third.headers["webhook-signature"].split(" ")) == 1


def test_two_workers_never_send_one_delivery_twice(client, workspace, receiver, private_ok, now_clock):
    from chalicelib.services.webhooks import WebhookService
    from tests.helpers import run_together

    _, key = workspace
    _create(client, key, receiver.url)
    doc = publish(client, key)
    for i in range(5):
        send_feedback(client, doc["share_id"], {"message": f"m{i}"})
    ctx = _worker().ctx
    run_together([lambda: WebhookService(ctx).run_once() for _ in range(4)])
    WebhookService(ctx).run_once()
    got = receiver.wait_for(5)
    time.sleep(0.2)
    assert len(receiver.received) == 5
    assert len({g.headers["webhook-id"] for g in got}) == 5


@pytest.mark.aws
def test_webhooks_on_dynamodb(client, workspace, receiver, private_ok, now_clock):
    test_feedback_delivery_is_signed_per_standard_webhooks(client, workspace, receiver, private_ok, now_clock)


@pytest.mark.aws
def test_retries_and_cap_on_dynamodb(client, workspace, receiver, private_ok, now_clock, services):
    test_retries_back_off_and_keep_the_same_id(client, workspace, receiver, private_ok, now_clock)
    ws, key = services.workspaces.create_workspace("Second", "free")
    test_create_list_delete_and_the_cap(client, (ws, key.api_key))
