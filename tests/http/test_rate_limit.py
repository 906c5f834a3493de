"""Per-key write rate limit: a sliding log of 60 accepted writes per rolling 60 s."""
import json

import pytest

from chalicelib.domain.ratelimit import take_slot
from chalicelib.errors import RateLimited
from tests.helpers import post_json, run_together


def test_sliding_log_counts_down_and_refuses_the_61st():
    log = []
    now = 1_000_000
    for i in range(60):
        decision = take_slot(log, now + i * 100, 60, 60)
        assert decision.remaining == 59 - i
        log = decision.new_log
    with pytest.raises(RateLimited) as info:
        take_slot(log, now + 6000, 60, 60)
    # The oldest write (at `now`) leaves the window at now + 60 s: 54 s from now+6 s.
    assert info.value.retry_after_seconds == 54
    assert info.value.headers["Retry-After"] == "54"


def test_no_boundary_burst_unlike_a_fixed_window():
    log = []
    for i in range(60):
        log = take_slot(log, 59_000 + i, 60, 60).new_log  # 60 writes just before a "minute" boundary
    with pytest.raises(RateLimited):
        take_slot(log, 61_000, 60, 60)  # a fixed window would have reset here
    # At 119.001 s the writes at 59.000 and 59.001 have left the window: 58 + this one.
    assert take_slot(log, 119_001, 60, 60).remaining == 1


from tests.helpers import publish_raw as publish  # noqa: E402


def test_rate_limit_headers_and_429(api, services, clock):
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    doc = json.loads(publish(api, key).body)
    remaining = []
    for i in range(59):
        clock.advance(0.5)
        r = publish(api, key, document_id=doc["document_id"]) if i % 2 else post_json(
            api, f"/api/v1/documents/{doc['document_id']}/edit",
            {"edits": [{"old_string": "</p>", "new_string": f"{i}</p>"}]}, key)
        assert r.status_code == 200, r.body
        assert r.headers["X-RateLimit-Limit"] == "60"
        remaining.append(int(r.headers["X-RateLimit-Remaining"]))
        assert 1 <= int(r.headers["X-RateLimit-Reset"]) <= 60
    assert remaining == list(range(58, -1, -1))
    clock.advance(0.5)
    refused = publish(api, key)
    assert refused.status_code == 429
    error = json.loads(refused.body)["error"]
    assert error["code"] == "rate_limited"
    retry = int(refused.headers["Retry-After"])
    assert error["details"]["retry_after_seconds"] == retry
    assert 1 <= retry <= 60
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    # Reads are not limited.
    assert api.http.get("/api/v1/me", headers={"X-Api-Key": key}).status_code == 200
    clock.advance(retry)
    assert publish(api, key).status_code == 200


def test_refused_and_invalid_requests_consume_no_slot(api, services, clock):
    ws, created = services.workspaces.create_workspace("Free", "free")
    key = created.api_key
    assert publish(api, key).status_code == 200
    for _ in range(5):  # invalid bodies, 404s and plan refusals change nothing
        assert publish(api, key, title="").status_code == 422
        assert publish(api, key, document_id="00000000-0000-4000-8000-000000000000").status_code == 404
    for _ in range(4):
        assert publish(api, key).status_code == 200
    assert publish(api, key).status_code == 403  # 6th document on free
    r = publish(api, key)
    assert r.status_code == 403
    ok = post_json(api, "/api/v1/documents/x/edit", {"edits": []}, key)
    assert ok.status_code in (404, 422)
    doc = json.loads(api.http.get("/api/v1/documents", headers={"X-Api-Key": key}).body)["documents"][0]
    r = publish(api, key, document_id=doc["document_id"])
    assert r.headers["X-RateLimit-Remaining"] == str(60 - 6)


def test_limit_is_per_key(api, services, clock, monkeypatch):
    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "3")
    ws, first = services.workspaces.create_workspace("Pro", "pro")
    second = services.workspaces.create_key(ws.id, "second")
    for _ in range(3):
        assert publish(api, first.api_key).status_code == 200
    assert publish(api, first.api_key).status_code == 429
    assert publish(api, second.api_key).status_code == 200


def test_rate_limit_holds_under_concurrency(services, monkeypatch):
    """Concurrent writes with one key: exactly `limit` accepted."""
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "5")
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    credentials = credentials_from_key(key)
    write = lambda: services.documents.publish(credentials, PublishRequest(title="t", html="<p/>"))  # noqa: E731
    accepted, failures = run_together([write] * 12)
    outcomes = ["ok"] * len(accepted) + ["limited" if f == "RateLimited" else f for f in failures]
    assert outcomes.count("ok") == 5 and outcomes.count("limited") == 7
