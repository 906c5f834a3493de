"""Issue 24: what a request may cost before it is read (entrypoints/bounds.py).

Findings: bodies were parsed before authentication (a 25 MiB unauthenticated
POST raised the local server's RSS to 769 MB); the share page's unlock form
had no size cap; /mcp answered 500 to a header character above U+00FF;
/oauth/token and /oauth/revoke without a Content-Type answered 415 instead of
RFC 6749's invalid_request."""
from __future__ import annotations

import json

import pytest

from chalicelib.entrypoints import bounds, http
from tests.sharing_helpers import FORM, publish, set_passphrase
from tests.sharing_helpers import pro  # noqa: F401  (fixture)

MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def _no_parsing(monkeypatch):
    monkeypatch.setattr(http, "_decode_json", lambda raw: pytest.fail("the body was parsed"))
    monkeypatch.setattr(http, "form_fields", lambda raw: pytest.fail("the form was parsed"))


def test_the_rule_table():
    assert bounds.body_rule("POST", "/api/v1/publish") == bounds.BodyRule(6 * 1024 * 1024, "api_key")
    assert bounds.body_rule("POST", "/api/v1/documents/x/edit?a=b").authenticate == "api_key"
    assert bounds.body_rule("GET", "/api/v1/health").authenticate is None
    assert bounds.body_rule("POST", "/mcp") == bounds.BodyRule(6 * 1024 * 1024, "mcp")
    for path in ("/d/abc/unlock", "/d/abc/feedback", "/d/abc/feedback/f/replies", "/oauth/token",
                 "/oauth/register", "/dashboard/sign-in", "/dashboard/oauth/authorize"):
        assert bounds.body_rule("POST", path).cap_bytes == 64 * 1024, path
    assert bounds.body_rule("POST", "/dashboard/upload").cap_bytes == 6 * 1024 * 1024
    assert bounds.body_rule("POST", "/dashboard/documents/d1/edit").cap_bytes == 6 * 1024 * 1024
    from chalicelib.services.uploads import MAX_ZIP_BYTES

    assert bounds.body_rule("PUT", "/uploads/up_x?token=t") == bounds.BodyRule(MAX_ZIP_BYTES)


def test_a_strangers_body_is_refused_before_it_is_parsed(client, workspace, monkeypatch):
    _no_parsing(monkeypatch)
    body = b"{" + b" " * (5 * 1024 * 1024) + b"}"
    for headers in ({}, {"X-Api-Key": "dpk_" + "x" * 43}, {"Authorization": "Basic abc"}):
        r = client.http.post("/api/v1/publish", headers={"Content-Type": "application/json", **headers}, body=body)
        assert r.status_code == 401, r.body[:200]
        assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_key_with_a_big_body_is_looked_up_first(client, workspace, monkeypatch):
    """Over 64 KiB, the key must exist before the body is parsed (not only look like a key)."""
    _no_parsing(monkeypatch)
    body = json.dumps({"title": "t", "html": "a" * 100_000})
    r = client.http.post("/api/v1/publish", headers={"Content-Type": "application/json",
                                                     "X-Api-Key": "dpk_" + "y" * 43}, body=body)
    assert r.status_code == 401
    assert json.loads(r.body)["error"]["code"] == "invalid_api_key"


def test_mcp_checks_credentials_before_the_body(client, monkeypatch):
    _no_parsing(monkeypatch)
    from chalicelib.entrypoints import mcp

    monkeypatch.setattr(mcp, "_check_json", lambda body: pytest.fail("the body was parsed"))
    r = client.http.post("/mcp", headers={"Content-Type": "application/json", "Accept": "application/json"},
                         body=b"{" + b" " * (7 * 1024 * 1024) + b"}")
    assert r.status_code == 401
    assert "resource_metadata=" in r.headers["WWW-Authenticate"]


def test_a_protected_share_pages_unlock_form_is_capped_at_64_kib(client, pro, monkeypatch):  # noqa: F811
    _, key = pro
    doc = publish(client, key)
    assert set_passphrase(client, key, doc["document_id"], "correct horse battery staple").status_code == 204
    _no_parsing(monkeypatch)
    body = "passphrase=" + "a" * (64 * 1024)
    r = client.http.post(f"/d/{doc['share_id']}/unlock", headers=FORM, body=body)
    assert r.status_code == 413
    assert r.headers["Content-Type"].startswith("text/html")
    assert "65,547 bytes" in r.body.decode()


def test_share_feedback_and_oauth_forms_are_capped(client, workspace, monkeypatch):
    _, key = workspace
    doc = publish(client, key)
    _no_parsing(monkeypatch)
    r = client.http.post(f"/d/{doc['share_id']}/feedback", headers={"Content-Type": "application/json"},
                         body=json.dumps({"message": "x" * 70_000}))
    assert r.status_code == 413
    # A share-page JSON route answers in the contract's error body (7c), not an HTML page,
    # and does not point a viewer at the API's uploads.
    error = json.loads(r.body)["error"]
    assert error["code"] == "document_too_large" and error["details"]["limit_bytes"] == 64 * 1024
    assert "uploads" not in error["message"]
    r = client.http.post(f"/d/{doc['share_id']}/feedback/fb_x/replies", headers={"Content-Type": "application/json"},
                         body=json.dumps({"message": "x" * 70_000}))
    assert r.status_code == 413 and json.loads(r.body)["error"]["code"] == "document_too_large"
    r = client.http.post(f"/d/{doc['share_id']}/unlock", headers={"Content-Type": "application/x-www-form-urlencoded"},
                         body="passphrase=" + "x" * 70_000)
    assert r.status_code == 413 and r.headers["Content-Type"].startswith("text/html")  # a form page stays a page
    r = client.http.post("/oauth/token", headers={"Content-Type": "application/x-www-form-urlencoded"},
                         body="grant_type=" + "x" * 70_000)
    assert r.status_code == 413
    assert json.loads(r.body)["error"] == "invalid_request"  # RFC 6749 body on OAuth endpoints


def test_a_header_the_server_cannot_decode_is_400_not_500(client, workspace):
    _, key = workspace
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "X-Api-Key": key, "X-Client-Name": "猫"}
    r = client.http.post("/mcp", headers=headers, body=json.dumps(MCP_INIT))
    assert r.status_code == 400, r.body
    assert json.loads(r.body)["error"]["code"] == "invalid_request"
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key, "X-Note": "\u0100"})
    assert r.status_code == 400
    # Latin-1 (what HTTP/1.1 carries) is fine.
    assert client.http.get("/api/v1/me", headers={"X-Api-Key": key, "X-Note": "caf\u00e9"}).status_code == 200


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain"])
def test_oauth_token_and_revoke_without_a_form_body_are_invalid_request(client, path, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    r = client.http.post(path, headers=headers, body="grant_type=authorization_code")
    assert r.status_code == 400, r.body
    assert json.loads(r.body)["error"] == "invalid_request"
    assert "application/x-www-form-urlencoded" in json.loads(r.body)["error_description"]


@pytest.mark.e2e
def test_the_local_server_never_reads_a_strangers_25_mib_body(stack):
    """Finding: a 25 MiB unauthenticated POST raised the server's RSS to 769 MB."""
    import httpx
    import psutil

    worker = psutil.Process(stack.worker_pid())
    before = worker.memory_info().rss
    body = b"{" + b" " * (25 * 1024 * 1024) + b"}"
    for headers in ({}, {"X-Api-Key": "dpk_" + "z" * 43}):
        r = httpx.post(stack.base_url + "/api/v1/publish", content=body, timeout=60,
                       headers={"Content-Type": "application/json", **headers})
        assert r.status_code == 401
    r = httpx.post(stack.base_url + "/api/v1/publish", content=body, timeout=60,
                   headers={"Content-Type": "application/json", "X-Api-Key": stack.api_key})
    assert r.status_code == 413
    assert r.json()["error"]["details"]["limit_bytes"] == 6 * 1024 * 1024
    grown = worker.memory_info().rss - before
    assert grown < 16 * 1024 * 1024, grown
    # The server still answers on a new connection.
    assert httpx.get(stack.base_url + "/api/v1/health").status_code == 200


@pytest.mark.e2e
def test_the_local_server_answers_expect_100_continue_with_the_refusal(stack):
    import socket

    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as sock:
        sock.sendall(b"POST /api/v1/publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 26214400\r\nExpect: 100-continue\r\n\r\n")
        answer = sock.recv(4096).decode("latin-1")
    assert answer.startswith("HTTP/1.1 401"), answer[:200]
