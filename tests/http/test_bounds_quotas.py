"""Issue 24: quotas. Findings: a free key could store about 14 GiB an hour (no
storage quota); rotating keys (180 in 7 s) or OAuth grants bypassed the write
limit; version lists were unbounded (86,000 versions gave 10-21 MB answers)."""
from __future__ import annotations

import json

import pytest

from chalicelib.domain import limits
from tests.helpers import post_json

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def _publish(client, key, html="<p>x</p>", document_id=None):
    body = {"title": "Doc", "html": html}
    if document_id:
        body["document_id"] = document_id
    return post_json(client, "/api/v1/publish", body, key)


def _me(client, key):
    return json.loads(client.http.get("/api/v1/me", headers={"X-Api-Key": key}).body)["workspace"]


def _get(client, key, document_id):
    return json.loads(client.http.get(f"/api/v1/documents/{document_id}", headers={"X-Api-Key": key}).body)


@BOTH
def test_me_reports_the_new_entitlements_and_usage(client, workspace, storage):
    _, key = workspace
    me = _me(client, key)
    assert me["entitlements"]["max_storage_bytes"] == 104857600
    assert me["entitlements"]["max_versions_per_document"] == 100
    assert me["entitlements"]["workspace_write_rate_limit"] == {"limit": 120, "window_seconds": 60}
    assert me["usage"] == {"documents": 0, "versions": 0, "storage_bytes": 0, "pending_upload_bytes": 0}
    doc = json.loads(_publish(client, key, "<p>café</p>").body)
    _publish(client, key, "<p>two</p>", doc["document_id"])
    _publish(client, key, "<p>other</p>")
    assert _me(client, key)["usage"] == {"documents": 2, "versions": 3,
                                         "storage_bytes": len("<p>café</p>".encode()) + 10 + 12,
                                         "pending_upload_bytes": 0}
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).status_code == 204
    assert _me(client, key)["usage"] == {"documents": 1, "versions": 1, "storage_bytes": 12, "pending_upload_bytes": 0}


@BOTH
def test_storage_quota(client, workspace, storage, monkeypatch):
    monkeypatch.setattr(limits, "FREE_MAX_STORAGE_BYTES", 1000)
    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>" + "a" * 593 + "</p>").body)  # 600 bytes
    r = _publish(client, key, "<p>" + "b" * 593 + "</p>", doc["document_id"])
    assert r.status_code == 403, r.body
    error = json.loads(r.body)["error"]
    assert error["code"] == "plan_limit_reached"
    assert error["details"] == {"entitlement": "max_storage_bytes", "limit": 1000, "current": 600}
    assert _publish(client, key, "<p>" + "c" * 393 + "</p>", doc["document_id"]).status_code == 200  # 400 fits
    assert _me(client, key)["usage"]["storage_bytes"] == 1000


@BOTH
def test_storage_quota_counts_every_version(client, workspace, storage, monkeypatch):
    monkeypatch.setattr(limits, "FREE_MAX_STORAGE_BYTES", 1000)
    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>" + "a" * 593 + "</p>").body)  # 600 bytes
    r = post_json(client, f"/api/v1/documents/{doc['document_id']}/edit",
                  {"edits": [{"old_string": "<p>", "new_string": "<p>x"}]}, key)
    assert r.status_code == 403, r.body
    assert json.loads(r.body)["error"]["details"]["entitlement"] == "max_storage_bytes"
    assert _get(client, key, doc["document_id"])["version_count"] == 1
    assert _me(client, key)["usage"]["storage_bytes"] == 600


@BOTH
def test_versions_per_document_and_deleting_an_old_version(client, workspace, storage, monkeypatch):
    monkeypatch.setattr(limits, "FREE_MAX_VERSIONS_PER_DOCUMENT", 3)
    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>1</p>").body)
    second = json.loads(_publish(client, key, "<p>2</p>", doc["document_id"]).body)
    third = json.loads(_publish(client, key, "<p>3</p>", doc["document_id"]).body)
    r = _publish(client, key, "<p>4</p>", doc["document_id"])
    assert r.status_code == 403, r.body
    assert json.loads(r.body)["error"]["details"] == {"entitlement": "max_versions_per_document",
                                                      "limit": 3, "current": 3}
    base = f"/api/v1/documents/{doc['document_id']}/versions"
    h = {"X-Api-Key": key}
    r = client.http.delete(f"{base}/{third['version_id']}", headers=h)
    assert r.status_code == 409 and json.loads(r.body)["error"]["code"] == "version_conflict"
    assert client.http.delete(f"{base}/v_nope", headers=h).status_code == 404
    assert client.http.delete(f"{base}/{second['version_id']}", headers=h).status_code == 204
    assert client.http.delete(f"{base}/{second['version_id']}", headers=h).status_code == 404
    got = _get(client, key, doc["document_id"])
    assert [v["number"] for v in got["versions"]] == [1, 3] and got["version_count"] == 2
    assert _me(client, key)["usage"] == {"documents": 1, "versions": 2, "storage_bytes": 16, "pending_upload_bytes": 0}
    fourth = _publish(client, key, "<p>4</p>", doc["document_id"])
    assert fourth.status_code == 200 and json.loads(fourth.body)["version_number"] == 4
    r = client.http.get(f"/api/v1/documents/{doc['document_id']}?include_html=true&version_id={second['version_id']}",
                        headers=h)
    assert r.status_code == 404


def test_another_workspaces_version_is_not_found(client, workspace, services):
    _, key = workspace
    _, other = services.workspaces.create_workspace("Other", "free")
    doc = json.loads(_publish(client, key, "<p>1</p>").body)
    _publish(client, key, "<p>2</p>", doc["document_id"])
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}/versions/{doc['version_id']}",
                           headers={"X-Api-Key": other.api_key})
    assert r.status_code == 404


@BOTH
def test_rotating_keys_gains_nothing(client, services, storage, monkeypatch):
    """The workspace limit counts every key's writes, revoked keys' too."""
    monkeypatch.setattr(limits, "WORKSPACE_WRITE_RATE", limits.Rate(5, 60))
    ws, first = services.workspaces.create_workspace("Pro", "pro")
    keys = [first] + [services.workspaces.create_key(ws.id, f"k{i}") for i in range(3)]
    doc = json.loads(_publish(client, keys[0].api_key).body)
    for i in range(3):
        assert _publish(client, keys[0].api_key, f"<p>{i}</p>", doc["document_id"]).status_code == 200
    services.workspaces.revoke_key(keys[0].key_id)
    assert _publish(client, keys[1].api_key, "<p>b</p>", doc["document_id"]).status_code == 200
    r = _publish(client, keys[2].api_key, "<p>c</p>", doc["document_id"])
    assert r.status_code == 429, r.body
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    assert "all keys" in json.loads(r.body)["error"]["message"]
    assert _get(client, keys[3].api_key, doc["document_id"])["version_count"] == 5


def test_at_most_ten_keys_are_created_per_workspace_per_hour(services, clock):
    from chalicelib.errors import RateLimited

    ws, _ = services.workspaces.create_workspace("Pro", "pro")  # made by the operator: not counted
    for i in range(10):
        services.workspaces.create_key(ws.id, f"k{i}")
    with pytest.raises(RateLimited) as refused:
        services.workspaces.create_key(ws.id, "eleventh")
    assert refused.value.retry_after_seconds <= 3600
    services.workspaces.create_key(ws.id, "by the operator", operator=True)  # the CLI is not limited
    clock.advance(3601)
    services.workspaces.create_key(ws.id, "later")


@BOTH
def test_get_one_lists_the_newest_100_versions(client, workspace, storage, monkeypatch):
    monkeypatch.setattr(limits, "VERSIONS_LISTED", 3)
    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>1</p>").body)
    for i in range(2, 6):
        _publish(client, key, f"<p>{i}</p>", doc["document_id"])
    got = _get(client, key, doc["document_id"])
    assert [v["number"] for v in got["versions"]] == [3, 4, 5]
    assert got["versions_truncated"] is True and got["version_count"] == 5
    monkeypatch.setattr(limits, "VERSIONS_LISTED", 100)
    assert _get(client, key, doc["document_id"])["versions_truncated"] is False


@BOTH
def test_the_versions_route_pages_through_every_version_newest_first(client, workspace, storage):
    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>1</p>").body)
    for i in range(2, 6):
        _publish(client, key, f"<p>{i}</p>", doc["document_id"])
    h = {"X-Api-Key": key}
    base = f"/api/v1/documents/{doc['document_id']}/versions"
    first = json.loads(client.http.get(f"{base}?limit=2", headers=h).body)
    assert [v["number"] for v in first["versions"]] == [5, 4] and first["next_cursor"]
    second = json.loads(client.http.get(f"{base}?limit=2&cursor={first['next_cursor']}", headers=h).body)
    third = json.loads(client.http.get(f"{base}?limit=2&cursor={second['next_cursor']}", headers=h).body)
    assert [v["number"] for v in second["versions"] + third["versions"]] == [3, 2, 1]
    assert third["next_cursor"] is None
    assert client.http.get(f"{base}?cursor=forged", headers=h).status_code == 422
    other = "/api/v1/documents/00000000-0000-4000-8000-000000000000/versions"
    assert client.http.get(other, headers=h).status_code == 404


def test_the_workspace_limit_is_a_sliding_minute_over_http(api, clock):
    """120 writes at :59 (three keys, 40 each) and one at :01 of the next minute: 429
    with Retry-After and X-RateLimit-Reset = 58 s (when the first of the 120 leaves)."""
    from chalicelib import wiring

    ws, first = wiring.workspaces().create_workspace("Busy", "pro")
    keys = [first.api_key] + [wiring.workspaces().create_key(ws.id, f"k{i}", operator=True).api_key
                              for i in range(2)]
    boundary = (int(clock()) // 60 + 1) * 60
    clock.now = boundary - 1
    document_id = None
    for n in range(120):
        r = _publish(api, keys[n % 3], f"<p>{n}</p>", document_id)
        assert r.status_code == 200, r.body
        document_id = json.loads(r.body)["document_id"]
    clock.now = boundary + 1
    r = _publish(api, keys[0], "<p>one more</p>", document_id)
    assert r.status_code == 429, r.body
    assert r.headers["Retry-After"] == "58" and r.headers["X-RateLimit-Reset"] == "58"
    assert json.loads(r.body)["error"]["details"] == {"retry_after_seconds": 58}
    assert _get(api, keys[1], document_id)["version_count"] == 120
