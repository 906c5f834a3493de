"""Issue 15 (hardening): each finding of the adversarial review, as a test that
fails on the code before the fix."""
from __future__ import annotations

import json
import tracemalloc
from types import SimpleNamespace

import pytest

from chalicelib.domain.edits import apply_edits, apply_edits_utf8
from chalicelib.errors import DocumentTooLarge
from chalicelib.models import MAX_HTML_BYTES
from tests.helpers import post_json

MIB = 1024 * 1024


def E(old, new, replace_all=False):
    return SimpleNamespace(old_string=old, new_string=new, replace_all=replace_all)


# ------------------------------------------------------------------ 1. bounded edits

def test_an_edit_that_would_grow_past_the_limit_stops_at_that_edit_with_its_own_size():
    doc = b"a" * MIB
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits_utf8(doc, [E("a", "b", True), E("b", "ccccc", True), E("nowhere", "x")])
    assert info.value.details == {"limit_bytes": MAX_HTML_BYTES, "size_bytes": 5 * MIB, "edit_index": 1}


def test_the_size_check_counts_utf8_bytes_on_every_route_of_the_engine():
    # More than 8 edits on non-ASCII text goes through str; sizes are still bytes.
    doc = ("é" * (MIB // 2)).encode()  # 1 MiB of UTF-8, 512 Ki characters
    edits = [E("é", "éé", True), E("é", "€", True)] + [E("€", "€€", True)] * 8
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits_utf8(doc, edits)
    # é→éé: 2 MiB; é→€ (2→3 bytes each, 1 Mi characters): 3 MiB; €→€€: 6 MiB at edit 2.
    assert info.value.details["edit_index"] == 2
    assert info.value.details["size_bytes"] == 6 * MIB
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits("é" * (MIB // 2), [E("é", "éééééééé", True)])
    assert info.value.details == {"limit_bytes": MAX_HTML_BYTES, "size_bytes": 8 * MIB, "edit_index": 0}


def test_a_single_replacement_past_the_limit_is_refused_before_it_is_built():
    doc = b"<p>SLOT</p>" + b"x" * (MAX_HTML_BYTES - 20)
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits_utf8(doc, [E("SLOT", "S" * 100)])
    assert info.value.details["size_bytes"] == len(doc) + 96
    assert info.value.details["edit_index"] == 0


def test_edit_peak_memory_stays_within_a_small_multiple_of_the_limit(services):
    # The review's request: replace every "a" of a large document with 50 b's.
    # Before the fix this built a 100 MiB result before answering 413.
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    from chalicelib.models import EditRequest, PublishRequest
    from chalicelib.services.auth import credentials_from_key

    who = credentials_from_key(key)
    published = services.documents.publish(who, PublishRequest(title="Big", html="a" * (2 * MIB))).response
    request = EditRequest.model_validate({"edits": [{"old_string": "a", "new_string": "b" * 50,
                                                     "replace_all": True}]})
    tracemalloc.start()
    try:
        with pytest.raises(DocumentTooLarge) as info:
            services.documents.edit(who, published.document_id, request)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.details["size_bytes"] == 100 * MIB and info.value.details["edit_index"] == 0
    assert peak < 4 * MAX_HTML_BYTES, f"peak {peak / MIB:.1f} MiB"


def test_rest_413_for_an_edit_names_the_edit_and_its_size(api, services):
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    r = post_json(api, "/api/v1/publish", {"title": "Doc", "html": "<p>" + "a" * 4096 + "</p>"}, key)
    doc = json.loads(r.body)
    body = {"edits": [{"old_string": "<p>", "new_string": "<p>x"},
                      {"old_string": "a", "new_string": "b" * 2000, "replace_all": True}]}
    r = post_json(api, f"/api/v1/documents/{doc['document_id']}/edit", body, key)
    assert r.status_code == 413
    error = json.loads(r.body)["error"]
    assert error["code"] == "document_too_large"
    assert error["details"] == {"limit_bytes": MAX_HTML_BYTES, "edit_index": 1,
                                "size_bytes": 4096 * 2000 + len("<p>x</p>")}


# ------------------------------------------------------------------ 3. crafted cursors

import base64  # noqa: E402
from urllib.parse import urlencode  # noqa: E402

from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

INFINITY_CURSOR = "eyJvIjogSW5maW5pdHl9"  # base64 of {"o": Infinity}, from the review
MCP_ACCEPT = "application/json, text/event-stream"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _mcp_call(client, key, name, arguments):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    r = client.http.post("/mcp", headers={"Content-Type": "application/json", "Accept": MCP_ACCEPT,
                                          "X-Api-Key": key, "MCP-Protocol-Version": "2025-11-25"},
                         body=json.dumps(body))
    assert r.status_code == 200, r.body
    return json.loads(r.body)["result"]


@pytest.fixture
def listed(client):
    """A workspace with three documents (so listings have more than one page)."""
    from chalicelib import wiring

    workspace, created = wiring.workspaces().create_workspace("Lists", "pro")
    for i in range(3):
        r = post_json(client, "/api/v1/publish", {"title": f"A doc {i}", "html": f"<p>{i}</p>"}, created.api_key)
        assert r.status_code == 200, r.body
    return workspace, created.api_key


def _forged_cursors(workspace_id: str) -> list[str]:
    gsi = {"PK": {"S": ""}, "SK": {"S": "META"}, "GSI1PK": {"S": f"WS#{workspace_id}#DOCS"},
           "GSI1SK": {"S": "x"}}
    return [INFINITY_CURSOR, _b64(b'{"o": NaN}'), _b64(b'{"o": 1e999}'), _b64(b'{"o": 10000000000000000000000}'),
            _b64(b'{"o": -1}'), _b64(b'{"o": true}'), _b64(json.dumps(gsi).encode()), "%%%", "a", "===="]


def test_crafted_cursors_are_422_on_rest(client, listed):
    workspace, key = listed
    for cursor in _forged_cursors(workspace["id"] if isinstance(workspace, dict) else workspace.id):
        for query in ({"query": "A"}, {}):
            r = client.http.get("/api/v1/documents?" + urlencode({**query, "cursor": cursor}),
                                headers={"X-Api-Key": key})
            assert r.status_code == 422, (cursor, query, r.status_code, r.body)
            assert json.loads(r.body)["error"]["code"] == "validation_error"
        r = client.http.get("/api/v1/feedback?" + urlencode({"cursor": cursor}), headers={"X-Api-Key": key})
        assert r.status_code == 422, (cursor, r.body)


def test_crafted_cursors_are_validation_errors_on_mcp(client, listed):
    _, key = listed
    for name, arguments in (("find_document", {"query": "A"}), ("list_documents", {}), ("list_feedback", {})):
        result = _mcp_call(client, key, name, {**arguments, "cursor": INFINITY_CURSOR})
        assert result["isError"] is True
        assert result["content"][0]["text"].startswith("validation_error:"), result


def test_a_cursor_of_another_workspace_is_422(client, listed):
    from chalicelib import wiring

    _, key = listed
    page = json.loads(client.http.get("/api/v1/documents?limit=1", headers={"X-Api-Key": key}).body)
    found = json.loads(client.http.get("/api/v1/documents?limit=1&query=doc", headers={"X-Api-Key": key}).body)
    assert page["next_cursor"] and found["next_cursor"]
    _, other = wiring.workspaces().create_workspace("Other", "pro")
    post_json(client, "/api/v1/publish", {"title": "A doc", "html": "<p>x</p>"}, other.api_key)
    for url in (f"/api/v1/documents?limit=1&cursor={page['next_cursor']}",
                f"/api/v1/documents?limit=1&query=doc&cursor={found['next_cursor']}"):
        r = client.http.get(url, headers={"X-Api-Key": other.api_key})
        assert r.status_code == 422, r.body
        assert client.http.get(url, headers={"X-Api-Key": key}).status_code == 200


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)
_cursor_values = st.one_of(
    st.text(max_size=60),
    _json_values.map(lambda v: _b64(json.dumps(v, allow_nan=True).encode())),
    st.dictionaries(st.sampled_from(["o", "PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"]),
                    st.one_of(_json_values, st.builds(lambda s: {"S": s}, st.text(max_size=20))),
                    max_size=5).map(lambda v: _b64(json.dumps(v, allow_nan=True).encode())),
)
_param_values = st.one_of(st.text(max_size=30), st.integers().map(str), st.floats().map(str),
                          st.sampled_from(["", "0", "-1", "101", "1e309", "inf", "nan", "true", "1.5", " 5"]))
_LIST_ROUTES = {
    "/api/v1/documents": ["limit", "cursor", "query"],
    "/api/v1/feedback": ["document_id", "status", "limit", "cursor"],
}


_list_calls = st.one_of(*[
    st.tuples(st.just(route), st.fixed_dictionaries({}, optional={
        name: (_cursor_values if name == "cursor" else _param_values) for name in names + ["unknown"]}))
    for route, names in sorted(_LIST_ROUTES.items())])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=_list_calls)
@example(call=("/api/v1/documents", {"query": "A", "cursor": INFINITY_CURSOR}))
@example(call=("/api/v1/feedback", {"cursor": _b64(b'{"PK": {"S": ""}}')}))
def test_no_query_parameter_or_cursor_of_a_list_route_is_a_5xx(client, listed, call):
    _, key = listed
    route, params = call
    r = client.http.get(route + "?" + urlencode(params), headers={"X-Api-Key": key})
    assert r.status_code < 500, (params, r.status_code, r.body)
    if r.status_code != 200:
        assert r.status_code == 422 and json.loads(r.body)["error"]["code"] == "validation_error", r.body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cursor=_cursor_values, tool=st.sampled_from(["find_document", "list_documents", "list_feedback"]))
@example(cursor=INFINITY_CURSOR, tool="find_document")
def test_no_cursor_of_an_mcp_list_tool_is_an_internal_error(client, listed, cursor, tool):
    _, key = listed
    result = _mcp_call(client, key, tool, {"cursor": cursor, **({"query": "A"} if tool == "find_document" else {})})
    if result.get("isError"):
        assert result["content"][0]["text"].startswith("validation_error:"), result


# ------------------------------------------------------------------ dashboard: cursors, next

@pytest.fixture
def owner(client, monkeypatch):
    from chalicelib.wiring import default_context
    from tests.dashboard_client import FAST_ARGON2, DashboardClient
    from tests.helpers import FakeClock

    for name, value in FAST_ARGON2.items():
        monkeypatch.setenv(name, value)
    default_context().clock = FakeClock()
    dash = DashboardClient(client)
    dash.sign_up()
    return dash


def test_dashboard_search_with_a_crafted_cursor_is_a_friendly_page(owner):
    for path in (f"/dashboard/documents?q=A&cursor={INFINITY_CURSOR}", f"/dashboard/documents?cursor={INFINITY_CURSOR}",
                 f"/dashboard/feedback?cursor={INFINITY_CURSOR}"):
        page = owner.get(path)
        assert page.status == 422, (path, page.status)
        assert "is not a cursor this service returned" in page.text
        assert "Back to the dashboard" in page.text


@pytest.mark.parametrize("next_value", [
    "/dashboard/../d/SHARE", "/dashboard/%2e%2e/d/SHARE", "/dashboard/.%2E/d/SHARE", "/dashboard/%2E./d/SHARE",
    "/dashboard/keys/../../d/SHARE", "/dashboard/./../api/v1/me", "/dashboard/%2e%2e%2fd/SHARE",
    "/dashboard/..", "/dashboard/%252e%252e/d/SHARE",
])
def test_sign_in_next_cannot_leave_the_dashboard_with_dot_segments(client, owner, next_value):
    from tests.dashboard_client import DashboardClient

    dash = DashboardClient(client)
    form = dash.get("/dashboard/sign-in?" + urlencode({"next": next_value}))
    page = dash.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery",
                                            "next": next_value}, csrf=form.csrf())
    assert page.status == 303, page.text
    from urllib.parse import unquote
    from posixpath import normpath
    location = page.location
    assert location.startswith("/dashboard/") or location == "/dashboard"
    decoded = unquote(unquote(location.split("?")[0]))
    assert ".." not in decoded.split("/") and normpath(decoded).startswith("/dashboard"), location


def test_sign_in_next_keeps_a_normal_dashboard_path_and_query(client, owner):
    from tests.dashboard_client import DashboardClient

    dash = DashboardClient(client)
    form = dash.get("/dashboard/sign-in")
    page = dash.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery",
                                            "next": "/dashboard/documents?q=report&m=x"}, csrf=form.csrf())
    assert page.location == "/dashboard/documents?q=report&m=x"


# ------------------------------------------------------------------ 6. fail-closed configuration

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _import_app(**env):
    base = {k: v for k, v in os.environ.items() if k not in ("DOCPUB_SECRET_KEY", "AWS_LAMBDA_FUNCTION_NAME")}
    return subprocess.run([sys.executable, "-c", "import app"], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=120, env={**base, "PYTHONPATH": str(PROJECT_DIR), **env})


def test_deployed_without_a_secret_key_refuses_to_start_with_a_clear_message():
    refused = _import_app(AWS_LAMBDA_FUNCTION_NAME="docpub-dev")
    assert refused.returncode != 0
    assert "DOCPUB_SECRET_KEY is not set" in refused.stderr
    public = _import_app(AWS_LAMBDA_FUNCTION_NAME="docpub-dev",
                         DOCPUB_SECRET_KEY="docpub-local-development-secret-not-for-production")
    assert public.returncode != 0 and "DOCPUB_SECRET_KEY" in public.stderr
    assert _import_app(AWS_LAMBDA_FUNCTION_NAME="docpub-dev", DOCPUB_SECRET_KEY="k" * 40).returncode == 0
    assert _import_app().returncode == 0  # the local stack and tests keep the development default


def test_secret_key_is_never_the_public_default_when_deployed(monkeypatch):
    from chalicelib import config

    monkeypatch.delenv("DOCPUB_SECRET_KEY", raising=False)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "docpub-prod")
    with pytest.raises(config.ConfigurationError):
        config.secret_key()


@pytest.mark.parametrize("method,path", [("GET", "/api/v1/health"), ("GET", "/api/v1/me"), ("POST", "/mcp"),
                                         ("GET", "/d/AAAAAAAAAAAAAAAAAAAAAA"), ("GET", "/dashboard/sign-in")])
def test_with_an_origin_secret_requests_without_it_are_403(client, monkeypatch, method, path):
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "from-cloudfront-only")
    for headers in ({}, {"X-Docpub-Origin-Secret": "wrong"}):
        r = client.http.request(method, path, headers=headers, body=b"")
        assert r.status_code == 403, (path, headers, r.status_code)
        assert json.loads(r.body)["error"]["code"] == "forbidden"
    r = client.http.request(method, path, headers={"X-Docpub-Origin-Secret": "from-cloudfront-only"}, body=b"")
    assert r.status_code != 403


def test_without_an_origin_secret_nothing_is_required(client, monkeypatch):
    monkeypatch.delenv("DOCPUB_ORIGIN_SECRET", raising=False)
    assert client.http.get("/api/v1/health").status_code == 200


# ------------------------------------------------------------------ 4. passphrase guessing

@pytest.fixture
def pro_doc(client):
    from chalicelib import wiring

    _, created = wiring.workspaces().create_workspace("Pro", "pro")
    r = post_json(client, "/api/v1/publish", {"title": "Plans", "html": "<p>secret plans</p>"}, created.api_key)
    return created.api_key, json.loads(r.body)


@pytest.mark.parametrize("weak", ["password1", "aaaaaaaa", "12345678", "qwertyuiop", "iloveyou"])
def test_weak_passphrases_are_refused_with_the_reason_on_rest(client, pro_doc, weak):
    key, doc = pro_doc
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase", body=json.dumps({"passphrase": weak}),
                        headers={"X-Api-Key": key, "Content-Type": "application/json"})
    assert r.status_code == 422, r.body
    error = json.loads(r.body)["error"]
    assert error["code"] == "validation_error"
    assert error["details"]["fields"][0]["field"] == "passphrase"
    assert error["details"]["fields"][0]["message"].startswith("is too easy to guess: ")
    assert len(error["details"]["fields"][0]["message"]) > len("is too easy to guess: ") + 10
    got = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).body)
    assert got["passphrase_protected"] is False


def test_password1_names_why(client, pro_doc):
    key, doc = pro_doc
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        body=json.dumps({"passphrase": "password1"}),
                        headers={"X-Api-Key": key, "Content-Type": "application/json"})
    assert "very common password" in json.loads(r.body)["error"]["message"]


def test_a_strong_passphrase_is_accepted(client, pro_doc):
    key, doc = pro_doc
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        body=json.dumps({"passphrase": "violet otter 42"}),
                        headers={"X-Api-Key": key, "Content-Type": "application/json"})
    assert r.status_code == 204, r.body


def test_weak_passphrase_is_refused_with_the_reason_in_the_dashboard(client, owner):
    from tests.http.test_dashboard import doc_id_from, set_plan, upload, workspace_id_of

    set_plan(workspace_id_of(owner), "pro")
    document_id = doc_id_from(upload(owner, b"<p>secret plans</p>", title="Plans"))
    page = owner.post(f"/dashboard/documents/{document_id}/passphrase",
                      {"action": "set", "passphrase": "password1"}, csrf=owner.token())
    assert page.status == 422
    assert "too easy to guess" in page.text and "very common password" in page.text


# ------------------------------------------------------------------ 7. one way from an error to an answer

import ast  # noqa: E402
import re  # noqa: E402


def test_every_500_has_its_own_request_id_even_with_a_shared_lambda_context():
    from chalicelib.entrypoints import http

    stale = SimpleNamespace(lambda_context=SimpleNamespace(aws_request_id="one-invocation"))
    first, second = http.as_error(RuntimeError("a"), stale), http.as_error(RuntimeError("b"), stale)
    assert first.status == second.status == 500
    assert first.details["request_id"] != second.details["request_id"]


def test_each_surface_answers_an_unexpected_failure_with_a_fresh_request_id(client, owner, monkeypatch):
    from chalicelib import wiring

    def boom(*_a, **_k):
        raise RuntimeError("internal detail 1234")

    _, created = wiring.workspaces().create_workspace("Boom", "free")
    key = created.api_key
    ids = []
    monkeypatch.setattr(wiring.workspaces(), "me", boom)
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key})
    assert r.status_code == 500 and "internal detail" not in r.body.decode()
    ids.append(json.loads(r.body)["error"]["details"]["request_id"])
    result = _mcp_call(client, key, "get_workspace_info", {})
    assert result["isError"] and result["content"][0]["text"].startswith("internal_error:")
    ids.append(re.search(r'"request_id":"([^"]+)"', result["content"][0]["text"]).group(1))
    monkeypatch.setattr(wiring.sharing(), "page", boom)
    r = client.http.get("/d/AAAAAAAAAAAAAAAAAAAAAA")
    assert r.status_code == 500 and "internal detail" not in r.body.decode()
    monkeypatch.setattr(wiring.documents(), "list", boom)
    page = owner.get("/dashboard/documents")
    assert page.status == 500 and "internal detail" not in page.text
    ids.append(re.search(r"Reference: <code>([^<]+)</code>", page.text).group(1))
    assert len(set(ids)) == 3


ENTRYPOINTS = PROJECT_DIR / "chalicelib" / "entrypoints"


def test_one_mapping_from_errors_to_answers():
    calls, status_writes, catch_alls = [], [], []
    for path in sorted(ENTRYPOINTS.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in ("unexpected", "_unexpected"):
                    calls.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr == "status":
                        status_writes.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.ExceptHandler) and getattr(node.type, "id", None) == "Exception":
                # every catch-all hands the exception to as_error
                body = ast.unparse(node)
                if "as_error(" not in body and "validation_error(" not in body:
                    catch_alls.append(f"{path.name}:{node.lineno}")
    assert len(calls) == 1, calls  # as_error's own call
    assert status_writes == [], status_writes
    assert catch_alls == [], catch_alls


def test_failed_unlocks_have_a_per_document_budget_across_all_addresses(client, owner, monkeypatch):
    from chalicelib.wiring import default_context
    from tests.sharing_helpers import unlock
    from tests.http.test_dashboard import doc_id_from, set_plan, upload, workspace_id_of

    monkeypatch.setenv("DOCPUB_UNLOCK_FAILURE_BUDGET", "5")
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")  # the viewer address header names the address
    clock = default_context().clock
    set_plan(workspace_id_of(owner), "pro")
    document_id = doc_id_from(upload(owner, b"<p>secret plans</p>", title="Plans"))
    assert owner.post(f"/dashboard/documents/{document_id}/passphrase",
                      {"action": "set", "passphrase": "violet otter 42"}, csrf=owner.token()).status == 303
    share = re.search(r"/d/([A-Za-z0-9_-]{16,64})", owner.get(f"/dashboard/documents/{document_id}").text).group(1)
    page = owner.get(f"/dashboard/documents/{document_id}")
    assert "0 wrong passphrases tried in the last 60 minutes" in page.text

    def from_address(i):
        return {"CloudFront-Viewer-Address": f"2001:db8:{i:x}::1:443"}  # a different /64 each time

    for i in range(5):  # each address is far below its own limit of 10
        assert unlock(client, share, f"wrong guess {i}", from_address(i)).status_code == 401
    clock.advance(60)
    refused = unlock(client, share, "violet otter 42", from_address(99))
    assert refused.status_code == 429
    assert 3540 - 5 <= int(refused.headers["Retry-After"]) <= 3540
    assert "Too many wrong passphrases" in refused.body.decode()
    page = owner.get(f"/dashboard/documents/{document_id}")
    assert "5 wrong passphrases tried in the last 60 minutes" in page.text and "paused for everyone" in page.text
    clock.advance(3541)
    assert unlock(client, share, "violet otter 42", from_address(100)).status_code == 303


# ------------------------------------------------------------------ 5. a separate content origin

BASE = "https://docs.example"
CONTENT = "https://content.example"


@pytest.fixture
def two_sites(client, monkeypatch):
    from chalicelib import wiring

    monkeypatch.setenv("DOCPUB_BASE_URL", BASE)
    monkeypatch.setenv("DOCPUB_CONTENT_URL", CONTENT)
    _, created = wiring.workspaces().create_workspace("Sites", "pro")
    r = post_json(client, "/api/v1/publish", {"title": "Doc", "html": "<p id=x>hello</p>"}, created.api_key,
                  headers={"Host": "docs.example"})
    doc = json.loads(r.body)
    doc["share_id"] = doc["share_url"].rsplit("/", 1)[1]
    return created.api_key, doc


def _get(client, path, host, **headers):
    return client.http.get(path, headers={"Host": host, **headers})


def _text(r) -> str:
    return r.body.decode() if isinstance(r.body, bytes) else r.body


def test_the_share_page_frames_content_from_the_content_origin(client, two_sites):
    _, doc = two_sites
    page = _get(client, f"/d/{doc['share_id']}", "docs.example")
    assert page.status_code == 200
    assert f'src="{CONTENT}/d/{doc["share_id"]}/v/{doc["version_id"]}"' in _text(page)
    assert f"frame-src {CONTENT};" in page.headers["Content-Security-Policy"]
    content = _get(client, f"/d/{doc['share_id']}/v/{doc['version_id']}", "content.example")
    assert content.status_code == 200 and "<p id=x>hello</p>" in _text(content)
    csp = content.headers["Content-Security-Policy"]
    assert csp.startswith("sandbox ") and "allow-same-origin" not in csp and f"frame-ancestors {BASE}" in csp
    assert "share_url" in doc and doc["share_url"].startswith(BASE + "/d/")


def test_the_main_origin_no_longer_serves_content(client, two_sites):
    _, doc = two_sites
    path = f"/d/{doc['share_id']}/v/{doc['version_id']}"
    r = _get(client, path, "docs.example")
    assert r.status_code == 302 and r.headers["Location"] == CONTENT + path
    assert "hello" not in _text(r)


@pytest.mark.parametrize("method,path", [("GET", "/api/v1/health"), ("GET", "/api/v1/me"),
                                         ("GET", "/api/v1/openapi.json"), ("POST", "/mcp"),
                                         ("GET", "/dashboard/sign-in"), ("GET", "/dashboard/documents"),
                                         ("GET", "/d/SHARE"), ("POST", "/d/SHARE/feedback"),
                                         ("POST", "/d/SHARE/unlock")])
def test_the_content_origin_serves_nothing_else(client, two_sites, method, path):
    key, doc = two_sites
    r = client.http.request(method, path.replace("SHARE", doc["share_id"]), body=b"{}",
                            headers={"Host": "content.example", "X-Api-Key": key, "Content-Type": "application/json"})
    assert r.status_code == 404, (path, r.status_code)
    assert "Docpub" not in _text(r) or "serves shared documents only" in _text(r)


def test_a_spoofed_site_header_does_not_choose_the_site_without_the_origin_secret(client, two_sites, monkeypatch):
    key, _ = two_sites
    monkeypatch.delenv("DOCPUB_ORIGIN_SECRET", raising=False)
    r = client.http.get("/api/v1/me", headers={"Host": "content.example", "X-Docpub-Site": "main",
                                               "X-Api-Key": key})
    assert r.status_code == 404
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "cf")
    for site, status in (("main", 200), ("content", 404)):  # behind CloudFront the distribution names it
        r = client.http.get("/api/v1/me", headers={"Host": "abc.execute-api.example", "X-Docpub-Site": site,
                                                   "X-Docpub-Origin-Secret": "cf", "X-Api-Key": key})
        assert r.status_code == status, site


def test_protected_content_on_the_content_origin_needs_the_frames_grant(client, two_sites, monkeypatch):
    from tests.dashboard_client import FAST_ARGON2
    from tests.sharing_helpers import cookie_of, unlock

    for name, value in FAST_ARGON2.items():
        monkeypatch.setenv(name, value)
    key, doc = two_sites
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        body=json.dumps({"passphrase": "violet otter 42"}),
                        headers={"X-Api-Key": key, "Content-Type": "application/json", "Host": "docs.example"})
    assert r.status_code == 204
    path = f"/d/{doc['share_id']}/v/{doc['version_id']}"
    assert _get(client, path, "content.example").status_code == 401
    cookie = cookie_of(unlock(client, doc["share_id"], "violet otter 42", {"Host": "docs.example"}))
    page = _text(_get(client, f"/d/{doc['share_id']}", "docs.example", Cookie=cookie))
    src = re.search(r'<iframe[^>]* src="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert src.startswith(CONTENT + path + "?t=")
    framed = _get(client, src[len(CONTENT):], "content.example")
    assert framed.status_code == 200 and "hello" in _text(framed)
    assert framed.headers["Cache-Control"] == "private, no-store"
    forged = src[len(CONTENT):-3] + "xyz"
    assert _get(client, forged, "content.example").status_code == 401
    # A new passphrase withdraws every grant issued before.
    client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                    body=json.dumps({"passphrase": "a brand new passphrase"}),
                    headers={"X-Api-Key": key, "Content-Type": "application/json", "Host": "docs.example"})
    assert _get(client, src[len(CONTENT):], "content.example").status_code == 401


def test_without_a_content_origin_content_stays_on_the_base_url(client, monkeypatch):
    from chalicelib import wiring

    monkeypatch.delenv("DOCPUB_CONTENT_URL", raising=False)
    _, created = wiring.workspaces().create_workspace("One", "free")
    doc = json.loads(post_json(client, "/api/v1/publish", {"title": "D", "html": "<p>one</p>"}, created.api_key).body)
    share = doc["share_url"].rsplit("/", 1)[1]
    page = _text(client.http.get(f"/d/{share}"))
    assert f'src="/d/{share}/v/{doc["version_id"]}"' in page
    content = client.http.get(f"/d/{share}/v/{doc['version_id']}")
    assert content.status_code == 200 and "frame-ancestors 'self'" in content.headers["Content-Security-Policy"]


# ------------------------------------------------------------------ 2. truthful outcomes

@pytest.fixture
def faults(monkeypatch):
    from botocore.retries import standard

    from tests.faults import Faults

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)
    injected = Faults()
    yield injected
    injected.clear()


@pytest.fixture
def fault_key(services):
    return services.workspaces.create_workspace("Faulty", "pro")[1].api_key


@pytest.mark.aws  # botocore faults: the DynamoDB adapter (SQLite commits are local and atomic)
def test_a_commit_whose_answer_was_lost_and_whose_retry_failed_its_conditions_is_reported_truthfully(
        client, fault_key, faults, ctx, clock):
    """The transaction commits, its answer is lost (a 500), botocore retries, and
    the retry fails its own conditions (moto, like DynamoDB after the token's
    10 minutes, does not recognise the retry). Before: the edit re-read, found its
    own version, deleted that version's HTML and answered 422 or a duplicate."""
    from tests.http.test_faults import HTML, call, every_version_readable, html_of, objects, publish

    doc = publish(client, fault_key).json
    lost = faults.commit_then_fail()
    r = call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", fault_key,
             {"edits": [{"old_string": "Draft", "new_string": "Final"}]})
    assert lost.injected == 1 and lost.calls == 2  # the retry happened and met the commit
    assert r.status_code == 200, r.body
    assert r.json["version_number"] == 2
    faults.clear()
    assert every_version_readable(client, fault_key, doc["document_id"]) == [1, 2]
    assert html_of(client, fault_key, doc["document_id"]) == HTML.replace("Draft", "Final")
    assert len(objects()) == 2

    # The same for a publish that creates a document, and one that appends a version.
    faults.commit_then_fail()
    created = publish(client, fault_key, title="Second")
    assert created.status_code == 200, created.body
    faults.clear()
    assert html_of(client, fault_key, created.json["document_id"]) == HTML
    faults.commit_then_fail()
    appended = publish(client, fault_key, document_id=doc["document_id"], html="<p>v3</p>")
    assert appended.status_code == 200 and appended.json["version_number"] == 3, appended.body
    faults.clear()
    assert every_version_readable(client, fault_key, doc["document_id"]) == [1, 2, 3]

    # And the sweep, long after, finds every object referenced: nothing to delete.
    from chalicelib.services.maintenance import GRACE_SECONDS, sweep_orphans
    import time as _time

    clock.now = _time.time() + GRACE_SECONDS * 2
    assert sweep_orphans(ctx)["deleted"] == 0
    assert every_version_readable(client, fault_key, doc["document_id"]) == [1, 2, 3]


@pytest.mark.aws
def test_a_timeout_that_hid_a_commit_is_answered_with_the_commit(client, fault_key, faults):
    from tests.http.test_faults import HTML, call, every_version_readable, html_of, publish

    doc = publish(client, fault_key).json
    faults.timeout_after_success("dynamodb", "TransactWriteItems")
    r = call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", fault_key,
             {"edits": [{"old_string": "Draft", "new_string": "Final"}]})
    assert r.status_code == 200, r.body
    assert every_version_readable(client, fault_key, doc["document_id"]) == [1, 2]
    assert html_of(client, fault_key, doc["document_id"]) == HTML.replace("Draft", "Final")


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_a_version_whose_html_is_missing_is_a_clear_error_not_a_503(client, fault_key, ctx):
    from tests.http.test_faults import call, publish

    doc = publish(client, fault_key).json
    [(key, _)] = list(ctx.blobs.list_keys("documents/"))
    ctx.blobs.delete(key)
    r = call(client, "GET", f"/api/v1/documents/{doc['document_id']}?include_html=true", fault_key)
    assert r.status_code == 500, r.body
    error = r.json["error"]
    assert error["code"] == "internal_error" and "Retry-After" not in r.headers
    assert "missing" in error["message"] and error["details"]["version_id"] == doc["version_id"]
    assert error["details"]["request_id"]
    r = call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", fault_key,
             {"edits": [{"old_string": "Draft", "new_string": "Final"}]})
    assert r.status_code == 500 and "missing" in r.json["error"]["message"]
    # Publishing a new version repairs the document.
    fixed = publish(client, fault_key, document_id=doc["document_id"])
    assert fixed.status_code == 200
    assert call(client, "GET", f"/api/v1/documents/{doc['document_id']}?include_html=true", fault_key).status_code == 200


def test_weak_passphrases_are_refused_with_the_reason_on_mcp(client, pro_doc):
    key, doc = pro_doc
    result = _mcp_call(client, key, "set_passphrase", {"document_id": doc["document_id"], "passphrase": "password1"})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("validation_error: passphrase: is too easy to guess:") and "very common password" in text
    result = _mcp_call(client, key, "set_passphrase", {"document_id": doc["document_id"],
                                                       "passphrase": "violet otter 42"})
    assert not result.get("isError"), result
    assert result["structuredContent"]["passphrase_protected"] is True
    result = _mcp_call(client, key, "set_passphrase", {"document_id": doc["document_id"], "passphrase": None})
    assert result["structuredContent"]["passphrase_protected"] is False


def test_behind_api_gateway_the_redirect_to_the_content_origin_has_no_stage_prefix(two_sites, monkeypatch):
    """API Gateway's requestContext.path carries the stage (`/api/d/…`); CloudFront's
    public paths do not. The redirect is built from the route's parameters."""
    from app import app
    from tests.e2e.test_infra import _LambdaContext, proxy_event

    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "cf")
    _, doc = two_sites
    event = proxy_event("GET", "/d/{share_id}/v/{version_id}",
                        {"X-Docpub-Origin-Secret": "cf", "X-Docpub-Site": "main", "Host": "abc.execute-api.example"},
                        None)
    event["pathParameters"] = {"share_id": doc["share_id"], "version_id": doc["version_id"]}
    event["requestContext"]["path"] = f"/api/d/{doc['share_id']}/v/{doc['version_id']}"
    answer = app(event, _LambdaContext())
    assert answer["statusCode"] == 302, answer
    assert answer["headers"]["Location"] == f"{CONTENT}/d/{doc['share_id']}/v/{doc['version_id']}"
    event["headers"]["X-Docpub-Site"] = "content"
    event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    assert app(event, _LambdaContext())["statusCode"] == 200
