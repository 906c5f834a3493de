"""Publish: create, append, limits, plan cap, idempotency, large payloads."""
import json

import pytest

from tests.helpers import run_together

MIB4 = 4 * 1024 * 1024


from tests.helpers import publish_raw as publish  # noqa: E402


def get(client, key, doc_id, query=""):
    return client.http.get(f"/api/v1/documents/{doc_id}{query}", headers={"X-Api-Key": key})


def test_create_then_append_versions(client, workspace):
    _, key = workspace
    first = json.loads(publish(client, key, note="first").body)
    assert first["version_number"] == 1
    assert first["share_url"].startswith("http://127.0.0.1:8000/d/")
    share_id = first["share_url"].rsplit("/", 1)[1]
    assert len(share_id) >= 22  # 128 bits, URL-safe base64
    second = json.loads(publish(client, key, document_id=first["document_id"], title="Renamed",
                                html="<p>two</p>", note="second").body)
    assert second["document_id"] == first["document_id"]
    assert second["version_number"] == 2
    assert second["share_url"] == first["share_url"]
    doc = json.loads(get(client, key, first["document_id"]).body)
    assert doc["title"] == "Renamed"
    assert doc["version_count"] == 2
    assert doc["latest_version_id"] == second["version_id"]
    assert [(v["number"], v["note"]) for v in doc["versions"]] == [(1, "first"), (2, "second")]
    assert "html" not in doc
    assert doc["passphrase_protected"] is False
    old = json.loads(get(client, key, first["document_id"], f"?include_html=true&version_id={first['version_id']}").body)
    assert old["html"] == "<p>x</p>"
    latest = json.loads(get(client, key, first["document_id"], "?include_html=true").body)
    assert latest["html"] == "<p>two</p>"


def test_unknown_document_and_version_are_404(client, workspace):
    _, key = workspace
    missing = "00000000-0000-4000-8000-000000000000"
    assert publish(client, key, document_id=missing).status_code == 404
    assert get(client, key, missing).status_code == 404
    doc = json.loads(publish(client, key).body)
    r = get(client, key, doc["document_id"], "?include_html=true&version_id=v_nope")
    assert r.status_code == 404


def test_non_uuid_document_id_is_422(client, workspace):
    _, key = workspace
    r = publish(client, key, document_id="abc")
    assert r.status_code == 422
    assert json.loads(r.body)["error"]["details"]["fields"][0]["field"] == "document_id"


@pytest.mark.parametrize("title,status", [("a" * 500, 200), ("a" * 501, 422), ("", 422), ("   ", 422),
                                          ("é" * 500, 200)])
def test_title_bounds(client, workspace, title, status):
    _, key = workspace
    assert publish(client, key, title=title).status_code == status


@pytest.mark.parametrize("field,limit", [("note", 2000), ("description", 5000)])
def test_note_and_description_bounds(client, workspace, field, limit):
    _, key = workspace
    assert publish(client, key, **{field: "n" * limit}).status_code == 200
    r = publish(client, key, **{field: "n" * (limit + 1)})
    assert r.status_code == 422
    assert json.loads(r.body)["error"]["details"]["fields"][0]["field"] == field


def test_empty_html_is_422(client, workspace):
    _, key = workspace
    r = publish(client, key, html="")
    assert r.status_code == 422


def test_html_size_limit_counts_utf8_bytes(client, services):
    _, key = services.workspaces.create_workspace("Pro", "pro")
    key = key.api_key
    exact = "あ" * (MIB4 // 3) + "a" * (MIB4 % 3)  # 3-byte characters, exactly 4 MiB
    assert len(exact.encode()) == MIB4
    assert publish(client, key, html=exact).status_code == 200
    over = exact + "a"
    r = publish(client, key, html=over)
    assert r.status_code == 413
    error = json.loads(r.body)["error"]
    assert error["code"] == "document_too_large"
    assert error["details"] == {"limit_bytes": MIB4, "size_bytes": MIB4 + 1}


def test_large_non_ascii_document_fits_lambda_payload(client, services):
    """include_html=true on a 4 MiB Japanese document stays under 6 MB on the wire to Lambda."""
    from app import app

    _, key = services.workspaces.create_workspace("Pro", "pro")
    html = ("日本語のテキスト" * (MIB4 // 24 + 1))
    html = html[: MIB4 // 3]
    doc = json.loads(publish(client, key.api_key, html=html).body)
    path = f"/api/v1/documents/{doc['document_id']}"
    for accept_encoding in ("gzip", None):
        event = _api_event("GET", path, {"include_html": "true"},
                           {"x-api-key": key.api_key, **({"accept-encoding": accept_encoding} if accept_encoding else {})})
        response = app(event, _LambdaContext())
        # The Python 3.11 runtime serialises with json.dumps (ASCII escapes).
        wire = json.dumps(response)
        assert len(wire.encode()) < 6 * 1000 * 1000, (accept_encoding, len(wire))
        assert response["statusCode"] == 200


class _LambdaContext:
    aws_request_id = "test-request"
    function_name = "docpub"
    memory_limit_in_mb = 1024
    def get_remaining_time_in_millis(self):
        return 29000


def _api_event(method, path, query, headers):
    return {
        "resource": "/api/v1/documents/{document_id}", "path": path, "httpMethod": method,
        "headers": headers, "multiValueHeaders": {}, "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()},
        "pathParameters": {"document_id": path.rsplit("/", 1)[1]}, "stageVariables": None,
        "requestContext": {"resourcePath": "/api/v1/documents/{document_id}", "httpMethod": method,
                           "path": path, "identity": {"sourceIp": "127.0.0.1"}, "requestId": "r"},
        "body": None, "isBase64Encoded": False,
    }


def test_free_plan_caps_documents_at_five(client, services, workspace):
    ws, key = workspace
    ids = [json.loads(publish(client, key).body)["document_id"] for _ in range(5)]
    r = publish(client, key)
    assert r.status_code == 403
    error = json.loads(r.body)["error"]
    assert error["code"] == "plan_limit_reached"
    assert error["details"] == {"limit": 5, "current": 5}
    # Appending versions to existing documents still works.
    assert publish(client, key, document_id=ids[0]).status_code == 200
    services.workspaces.set_plan(ws.id, "pro")
    assert publish(client, key).status_code == 200
    assert services.workspaces.get_workspace(ws.id).document_count == 6


def test_cap_holds_under_concurrency(services, workspace):
    """10 simultaneous creates on an empty free workspace make exactly 5 documents."""
    from chalicelib.errors import PlanLimitReached
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    ws, key = workspace
    credentials = credentials_from_key(key)
    create = lambda: services.documents.publish(credentials, PublishRequest(title="t", html="<p/>"))  # noqa: E731
    created, failures = run_together([create] * 10)
    outcomes = ["ok"] * len(created) + ["capped" if f == PlanLimitReached.__name__ else f for f in failures]
    assert sorted(outcomes) == ["capped"] * 5 + ["ok"] * 5
    assert services.workspaces.get_workspace(ws.id).document_count == 5
    assert len(services.documents.list(credentials, limit=100).documents) == 5


def test_idempotent_retry_returns_first_answer(client, services, workspace, ctx):
    ws, key = workspace
    headers = {"Idempotency-Key": "run-42"}
    first = publish(client, key, headers)
    again = publish(client, key, headers)
    assert first.status_code == again.status_code == 200
    assert json.loads(first.body) == json.loads(again.body)
    assert services.workspaces.get_workspace(ws.id).document_count == 1
    different = publish(client, key, headers, title="Other")
    assert different.status_code == 422
    assert json.loads(different.body)["error"]["code"] == "validation_error"
    # Only one object in S3: the replay stored nothing.
    assert len(ctx.blobs.list_keys("documents/")) == 1


def test_idempotency_record_expires_after_24h(services, workspace, clock):
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    _, key = workspace
    credentials = credentials_from_key(key)
    request = PublishRequest(title="t", html="<p/>")
    first = services.documents.publish(credentials, request, "k1").response
    clock.advance(23 * 3600)
    assert services.documents.publish(credentials, request, "k1").response == first
    clock.advance(2 * 3600)
    later = services.documents.publish(credentials, request, "k1").response
    assert later.document_id != first.document_id


def test_idempotency_key_too_long_is_422(client, workspace):
    _, key = workspace
    r = publish(client, key, {"Idempotency-Key": "x" * 256})
    assert r.status_code == 422


def test_concurrent_idempotent_retries_create_one_document(services, workspace):
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    ws, key = workspace
    credentials = credentials_from_key(key)
    publish_once = lambda: services.documents.publish(  # noqa: E731
        credentials, PublishRequest(title="t", html="<p/>"), "same").response
    results, failures = run_together([publish_once] * 5)
    assert failures == []
    assert len({r.document_id for r in results}) == 1
    assert services.workspaces.get_workspace(ws.id).document_count == 1


def test_json_answers_keep_non_ascii(client, workspace):
    _, key = workspace
    doc = json.loads(publish(client, key, title="日本語").body)
    r = get(client, key, doc["document_id"])
    assert "日本語".encode() in r.body
    assert b"\\u" not in r.body


def test_html_over_five_million_characters_is_413_not_422(client, workspace):
    _, key = workspace
    r = publish(client, key, html="a" * 5_000_001)
    assert r.status_code == 413
    assert json.loads(r.body)["error"]["code"] == "document_too_large"
