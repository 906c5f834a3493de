"""Authentication, workspace isolation and the contract's error shapes."""
import json

import pytest

from chalicelib.ports.records import fields_of
from tests.helpers import post_json

UNKNOWN_KEY = "dpk_" + "A" * 43


from tests.helpers import publish_raw as _publish  # noqa: E402


def _error(response):
    body = json.loads(response.body)
    assert set(body) == {"error"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


def test_x_api_key_header_authenticates(client, workspace):
    _, key = workspace
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key})
    assert r.status_code == 200
    assert json.loads(r.body)["workspace"]["name"] == "Acme"


def test_bearer_header_authenticates(client, workspace):
    _, key = workspace
    r = client.http.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200


def test_missing_key_is_401_unauthorized_with_challenge(client, workspace):
    r = client.http.get("/api/v1/me")
    assert r.status_code == 401
    assert _error(r)["code"] == "unauthorized"
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("headers", [
    {"X-Api-Key": UNKNOWN_KEY},
    {"X-Api-Key": "not-a-key"},
    {"Authorization": "Basic abc"},
    {"Authorization": "Bearer "},
])
def test_unknown_or_malformed_key_is_401_invalid(client, workspace, headers):
    r = client.http.get("/api/v1/me", headers=headers)
    assert r.status_code == 401
    assert _error(r)["code"] in ("invalid_api_key", "unauthorized")
    assert "WWW-Authenticate" in r.headers


def test_two_different_keys_are_refused(client, workspace):
    _, key = workspace
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key, "Authorization": f"Bearer {UNKNOWN_KEY}"})
    assert r.status_code == 401
    assert _error(r)["code"] == "invalid_api_key"


def test_same_key_in_both_headers_is_fine(client, workspace):
    _, key = workspace
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key, "Authorization": f"Bearer {key}"})
    assert r.status_code == 200


def test_revoked_key_stops_working(client, services, workspace):
    ws, key = workspace
    [summary] = services.workspaces.list_keys(ws.id)
    services.workspaces.revoke_key(summary["key_id"])
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key})
    assert r.status_code == 401
    assert _error(r)["code"] == "invalid_api_key"


def test_keys_are_stored_hashed_only(services, workspace, ctx):
    ws, key = workspace
    [summary] = services.workspaces.list_keys(ws.id)
    item = ctx.keys.get(summary["key_id"])
    assert item is not None and key not in json.dumps(fields_of(item), default=str)
    assert key.startswith("dpk_") and len(key) >= 36


def test_other_workspaces_documents_are_404(client, services, workspace):
    _, key = workspace
    _, other = services.workspaces.create_workspace("Other", "free")
    doc = json.loads(_publish(client, other.api_key).body)
    doc_id = doc["document_id"]
    for method, path, body in [
        ("get", f"/api/v1/documents/{doc_id}", None),
        ("patch", f"/api/v1/documents/{doc_id}", {"title": "stolen"}),
        ("delete", f"/api/v1/documents/{doc_id}", None),
        ("post", f"/api/v1/documents/{doc_id}/edit", {"edits": [{"old_string": "x", "new_string": "y"}]}),
        ("post", "/api/v1/publish", {"title": "t", "html": "<p>y</p>", "document_id": doc_id}),
    ]:
        headers = {"X-Api-Key": key, "Content-Type": "application/json"}
        kwargs = {"headers": headers}
        if body is not None:
            kwargs["body"] = json.dumps(body)
        r = getattr(client.http, method)(path, **kwargs)
        assert r.status_code == 404, (method, path, r.body)
        assert _error(r)["code"] == "not_found"
    listing = json.loads(client.http.get("/api/v1/documents", headers={"X-Api-Key": key}).body)
    assert listing["documents"] == []
    # And the owner still sees it untouched.
    r = client.http.get(f"/api/v1/documents/{doc_id}", headers={"X-Api-Key": other.api_key})
    assert json.loads(r.body)["title"] == "Doc"


def test_invalid_json_is_400(client, workspace):
    _, key = workspace
    for body in ["{not json", "[1,2]", "\"str\"", ""]:
        r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                             body=body)
        assert r.status_code == 400, body
        assert _error(r)["code"] == "invalid_json"


def test_lone_surrogate_is_400_not_500(client, workspace):
    _, key = workspace
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                         body='{"title": "a\\ud800", "html": "<p>x</p>"}')
    assert r.status_code == 400
    assert _error(r)["code"] == "invalid_json"


def test_non_json_content_type_is_415(client, workspace):
    _, key = workspace
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "text/plain"}, body="x")
    assert r.status_code == 415
    assert _error(r)["code"] == "unsupported_media_type"


def test_wrong_method_is_405_with_allow(client, workspace):
    r = client.http.put("/api/v1/me", headers={"Content-Type": "application/json"}, body="{}")
    assert r.status_code == 405
    assert _error(r)["code"] == "method_not_allowed"
    assert r.headers["Allow"] == "GET, HEAD"


def test_validation_error_lists_fields(client, workspace):
    _, key = workspace
    r = post_json(client, "/api/v1/publish", {"title": "", "html": "<p/>", "colour": "red"}, key)
    assert r.status_code == 422
    error = _error(r)
    assert error["code"] == "validation_error"
    fields = {f["field"] for f in error["details"]["fields"]}
    assert fields == {"title", "colour"}


def test_health_needs_no_key(client):
    r = client.http.get("/api/v1/health")
    assert r.status_code == 200
    assert json.loads(r.body) == {"status": "ok"}


def test_me_reports_workspace_and_entitlements(client, workspace):
    ws, key = workspace
    _publish(client, key)
    body = json.loads(client.http.get("/api/v1/me", headers={"X-Api-Key": key}).body)
    assert body == {"workspace": {
        "id": ws.id, "name": "Acme", "brand_name": None, "brand_tagline": None, "plan": "free",
        "document_count": 1,
        "entitlements": {"max_documents": 5, "max_api_keys": 1, "passphrase_links": False,
                         "dashboard_editing": False, "custom_branding": False, "max_html_bytes": 4194304,
                         "write_rate_limit": {"limit": 60, "window_seconds": 60},
                         "max_storage_bytes": 104857600, "max_versions_per_document": 100,
                         "workspace_write_rate_limit": {"limit": 120, "window_seconds": 60}},
        "usage": {"documents": 1, "versions": 1, "storage_bytes": len(body_html(client, key)),
                  "pending_upload_bytes": 0},
        "secret_scanning": "block", "pii_scanning": "off"},
        # The workspace's first key is the operator's: the workspace's, acting as its owner.
        "key": {"key_id": body["key"]["key_id"], "created_by": None, "role": "owner"}}


def body_html(client, key) -> bytes:
    """The UTF-8 HTML of the workspace's only document."""
    listed = json.loads(client.http.get("/api/v1/documents", headers={"X-Api-Key": key}).body)["documents"]
    got = client.http.get(f"/api/v1/documents/{listed[0]['document_id']}?include_html=true",
                          headers={"X-Api-Key": key})
    return json.loads(got.body)["html"].encode("utf-8")


def test_pro_entitlements(client, services):
    _, key = services.workspaces.create_workspace("Pro", "pro")
    ent = json.loads(client.http.get("/api/v1/me", headers={"X-Api-Key": key.api_key}).body)["workspace"]
    assert ent["plan"] == "pro"
    assert ent["entitlements"]["max_documents"] is None
    assert ent["entitlements"]["passphrase_links"] is True


def test_unexpected_failure_is_clean_500(client, workspace, monkeypatch):
    from chalicelib import wiring

    _, key = workspace

    def boom(*_a, **_k):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(wiring.workspaces(), "me", boom)
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key})
    assert r.status_code == 500
    error = _error(r)
    assert error["code"] == "internal_error"
    assert "secret internals" not in r.body.decode()
    assert error["details"]["request_id"]


def test_deeply_nested_json_is_400_not_500(client, workspace):
    _, key = workspace
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                         body="[" * 100000)
    assert r.status_code == 400
    assert _error(r)["code"] == "invalid_json"
    r = client.http.post("/mcp", headers={"X-Api-Key": key, "Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream"}, body="[" * 100000)
    assert r.status_code == 400
    assert _error(r)["code"] == "invalid_json"


@pytest.mark.parametrize("method,path,body", [
    ("post", "/api/v1/publish", "{}"),
    ("post", "/api/v1/publish", "not json"),
    ("get", "/api/v1/documents?limit=abc", None),
    ("post", "/api/v1/documents/00000000-0000-4000-8000-000000000000/edit", "{}"),
    ("get", "/api/v1/feedback?status=nope", None),
])
def test_key_is_judged_before_the_input(client, workspace, method, path, body):
    headers = {"Content-Type": "application/json"}
    kwargs = {"headers": headers, **({"body": body} if body is not None else {})}
    assert getattr(client.http, method)(path, **kwargs).status_code == 401
    headers["X-Api-Key"] = UNKNOWN_KEY
    r = getattr(client.http, method)(path, **kwargs)
    assert r.status_code == 401 and _error(r)["code"] == "invalid_api_key"
    headers["X-Api-Key"] = workspace[1]
    assert getattr(client.http, method)(path, **kwargs).status_code in (400, 422)


def test_refused_writes_carry_rate_limit_headers(client, workspace):
    _, key = workspace
    for body in ({"title": ""}, {"title": "t", "html": "<p/>", "document_id": "00000000-0000-4000-8000-000000000000"}):
        r = post_json(client, "/api/v1/publish", body, key)
        assert r.status_code in (404, 422)
        assert r.headers["X-RateLimit-Limit"] == "60" and r.headers["X-RateLimit-Remaining"] == "60"
    first = post_json(client, "/api/v1/publish", {"title": "t", "html": "<p/>"}, key, {"Idempotency-Key": "a"})
    replay = post_json(client, "/api/v1/publish", {"title": "t", "html": "<p/>"}, key, {"Idempotency-Key": "a"})
    assert first.headers["X-RateLimit-Remaining"] == "59"
    assert replay.status_code == 200 and replay.headers["X-RateLimit-Remaining"] == "59"
