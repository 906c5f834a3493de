"""Security review items, each with a test.

1. Secrets (API keys; passphrases and share-unlock sessions where those routes
   exist) never reach a log line, stdout or stderr.
2. Secrets are compared in constant time (hmac.compare_digest / argon2), never with ==.
3. Every HTML answer carries the security headers.
4. A body far over the size limit is refused (413) before it is decoded or parsed.
5. Identifiers and keys come from `secrets`, never `random`.
"""
from __future__ import annotations

import ast
import io
import json
import logging
import re
from pathlib import Path

import pytest

from app import app
from tests.faults import Faults
from tests.helpers import post_json

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("chalicelib", "scripts")


def source_files():
    yield ROOT / "app.py"
    for folder in SOURCE_DIRS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _route(pattern: str, method: str):
    for path, methods in app.routes.items():
        if re.fullmatch(pattern, path) and method in methods and methods[method].view_name != "method_not_allowed":
            return path
    return None


# ------------------------------------------------------------------ 1. secrets never logged

@pytest.fixture
def captured_logs(capfd):
    """Everything any logger emits at DEBUG and up, plus the process's stdout/stderr."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    loggers = [logging.getLogger(), logging.getLogger("docpub"), logging.getLogger("chalicelib"),
               logging.getLogger(app.app_name)]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield lambda: stream.getvalue() + "".join(capfd.readouterr())
    for lg, level in saved:
        lg.removeHandler(handler)
        lg.setLevel(level)


def _assert_absent(text: str, secret: str, what: str):
    assert text, "nothing was captured: the capture itself is broken"
    assert secret not in text, f"{what} appears in the logs"
    assert secret[-16:] not in text, f"part of {what} appears in the logs"


@pytest.mark.aws  # injects DynamoDB faults
def test_api_keys_never_reach_the_logs(client, services, captured_logs, monkeypatch):
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)
    ws, created = services.workspaces.create_workspace("Logs", "pro")
    key = created.api_key
    second = services.workspaces.create_key(ws.id, "second")
    services.workspaces.revoke_key(second.key_id)
    headers = {"X-Api-Key": key}
    r = post_json(client, "/api/v1/publish", {"title": "Log me", "html": "<p>Draft</p>"}, key)
    assert r.status_code == 200
    doc = json.loads(r.body)["document_id"]
    post_json(client, f"/api/v1/documents/{doc}/edit", {"edits": [{"old_string": "Draft", "new_string": "x"}]}, key)
    client.http.get(f"/api/v1/documents/{doc}?include_html=true", headers={"Authorization": f"Bearer {key}"})
    client.http.get("/api/v1/documents", headers=headers)
    client.http.get("/api/v1/me", headers={"X-Api-Key": second.api_key})  # revoked
    client.http.get("/api/v1/me", headers={"X-Api-Key": key + "x"})  # unknown
    client.http.get("/api/v1/me", headers={"X-Api-Key": key, "Authorization": "Bearer " + second.api_key})
    client.http.get("/api/v1/me", headers={"Authorization": "Basic " + key})
    # Failure paths log the most: storage trouble and an unexpected exception.
    faults = Faults()
    faults.fail("dynamodb", "Query", "ThrottlingException", 400)
    assert client.http.get("/api/v1/documents", headers=headers).status_code == 503
    faults.clear()
    from chalicelib.services.documents import DocumentService

    def boom(self, *args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(DocumentService, "list", boom)
    assert client.http.get("/api/v1/documents", headers=headers).status_code == 500
    text = captured_logs()
    assert "unexpected error" in text and "storage busy" in text  # the failures were logged…
    _assert_absent(text, key, "the API key")  # …without the key
    _assert_absent(text, second.api_key, "the revoked API key")


@pytest.mark.aws  # botocore logs every request at DEBUG: where a secret could leak
def test_passphrases_and_unlock_sessions_never_reach_the_logs(client, services, captured_logs):
    passphrase_route = _route(r"/api/v1/documents/\{[^}]+\}/passphrase", "PUT")
    unlock_route = _route(r"/d/\{[^}]+\}/unlock", "POST")
    if passphrase_route is None:
        pytest.skip("no passphrase route on this branch yet")
    _, created = services.workspaces.create_workspace("Secret", "pro")
    key = created.api_key
    r = post_json(client, "/api/v1/publish", {"title": "Locked", "html": "<p>hidden</p>"}, key)
    published = json.loads(r.body)
    passphrase = "correct horse battery staple 4ever"
    path = passphrase_route.replace(passphrase_route.split("/")[4], published["document_id"])
    r = client.http.put(path, headers={"X-Api-Key": key, "Content-Type": "application/json"},
                        body=json.dumps({"passphrase": passphrase}))
    assert r.status_code == 204, r.body
    secrets_seen = [passphrase]
    if unlock_route is not None:
        share_id = published["share_url"].rsplit("/", 1)[1]
        unlock = unlock_route.replace(unlock_route.split("/")[2], share_id)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        client.http.post(unlock, headers=form, body="passphrase=wrong+guess+1234")
        r = client.http.post(unlock, headers=form, body="passphrase=" + passphrase.replace(" ", "+"))
        assert r.status_code == 303, r.body
        cookie = r.headers.get("Set-Cookie", "").split(";", 1)[0]
        session = cookie.split("=", 1)[1]
        assert len(session) >= 16
        secrets_seen.append(session)
        client.http.get(f"/d/{share_id}", headers={"Cookie": cookie})
    text = captured_logs()
    for secret in secrets_seen:
        _assert_absent(text, secret, "a passphrase or unlock session")


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_keys_are_stored_hashed_only(services, ctx):
    from tests.helpers import stored_records

    _, created = services.workspaces.create_workspace("Hashed", "free")
    items = stored_records(ctx)
    assert {kind for kind, _ in items} >= {"workspaces", "api_keys"}
    assert created.api_key not in json.dumps(items)
    assert created.api_key[-16:] not in json.dumps(items)


# ------------------------------------------------------------------ 2. constant-time comparison

SECRET_NAME = re.compile(r"(key_hash|passphrase|password|secret|token|session|signature|csrf|cookie|api_key)",
                         re.IGNORECASE)
# Names that match but hold no secret (reviewed): the first 10 characters shown in listings; a token record's kind.
NOT_SECRET = re.compile(r"(prefix|_id\b|_epoch|token_urlsafe|token_hex|session_manager|\.kind\b)", re.IGNORECASE)


def _same_request_inputs(operands) -> bool:
    """`form.get("a") != form.get("b")`: two values the caller sent; nothing stored leaks."""
    bases = set()
    for o in operands:
        if not (isinstance(o, ast.Call) and isinstance(o.func, ast.Attribute) and isinstance(o.func.value, ast.Name)):
            return False
        bases.add(o.func.value.id)
    return len(bases) == 1


def test_secrets_are_never_compared_with_eq():
    offenders = []
    for path in source_files():
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare):
                continue
            if not any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                continue
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value is None for o in operands) or _same_request_inputs(operands):
                continue
            for operand in operands:
                source = ast.get_source_segment(text, operand) or ""
                if SECRET_NAME.search(source) and not NOT_SECRET.search(source):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(text, node)}")
                    break
    assert offenders == [], "compare secrets with hmac.compare_digest:\n" + "\n".join(offenders)


def test_the_key_check_uses_compare_digest(services, monkeypatch):
    import hmac

    from chalicelib.services import auth

    _, created = services.workspaces.create_workspace("CT", "free")
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    services.workspaces.me(auth.credentials_from_key(created.api_key))
    assert len(calls) == 1 and calls[0][0] == calls[0][1]  # stored hash vs presented hash
    with pytest.raises(Exception):
        services.workspaces.me(auth.credentials_from_key(created.api_key[:-1] + "Z"))


# ------------------------------------------------------------------ 3. security headers on HTML

REQUIRED_HTML_HEADERS = ("Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy")


def assert_html_headers(headers, where):
    lowered = {k.lower(): v for k, v in headers.items()}
    for name in REQUIRED_HTML_HEADERS:
        assert name.lower() in lowered, f"{where}: no {name}"
    assert lowered["x-content-type-options"] == "nosniff", where
    csp = lowered["content-security-policy"]
    assert "frame-ancestors" in csp or "x-frame-options" in lowered or "sandbox" in csp, where


def html_pages(client, services):
    """Every route outside the JSON API, for a real and an unknown identifier:
    GET as is; POST with an empty form (wrong passphrase, missing fields)."""
    _, created = services.workspaces.create_workspace("Pages", "pro")
    r = post_json(client, "/api/v1/publish", {"title": "Page", "html": "<p>page</p>"}, created.api_key)
    published = json.loads(r.body)
    values = {"share_id": published["share_url"].rsplit("/", 1)[1], "version_id": published["version_id"]}
    for path, methods in app.routes.items():
        if path.startswith("/api/") or path == "/mcp":
            continue
        for method in ("GET", "POST"):
            if method not in methods or methods[method].view_name == "method_not_allowed":
                continue
            for known in (True, False):
                yield method, re.sub(r"\{([^}]+)\}",
                                     lambda m: values.get(m.group(1), "x") if known else "unknown-identifier", path)


def test_every_html_answer_has_the_security_headers(client, services):
    from chalicelib.entrypoints.http import HTML_SECURITY_HEADERS, html_response

    assert_html_headers(html_response("<p>x</p>").headers, "html_response")
    assert set(REQUIRED_HTML_HEADERS) <= set(HTML_SECURITY_HEADERS)
    checked = 0
    for method, path in html_pages(client, services):
        if method == "GET":
            r = client.http.get(path)
        else:
            r = client.http.post(path, headers={"Content-Type": "application/x-www-form-urlencoded"},
                                 body="passphrase=wrong-guess")
        if "text/html" in r.headers.get("Content-Type", ""):
            assert_html_headers(r.headers, f"{method} {path} → {r.status_code}")
            checked += 1
    if any(p.startswith("/d/") for p in app.routes):
        assert checked >= 2, "the share pages answered no HTML at all"


@pytest.mark.e2e
def test_local_html_pages_have_the_security_headers(stack):
    import httpx

    for path in ("/d/does-not-exist", "/dashboard/nothing-here"):
        r = httpx.get(stack.base_url + path)
        assert r.status_code == 404
        if "text/html" in r.headers.get("content-type", ""):
            assert_html_headers(r.headers, path)


# ------------------------------------------------------------------ 4. oversized bodies

def test_a_body_far_over_the_limit_is_413_without_being_parsed(client, workspace, monkeypatch):
    from chalicelib.entrypoints import http
    from chalicelib.errors import DocumentTooLarge  # noqa: F401

    _, key = workspace

    def must_not_parse(raw):
        raise AssertionError("the body was parsed")

    from chalicelib.entrypoints.bounds import API_BODY_BYTES

    monkeypatch.setattr(http, "_decode_json", must_not_parse)
    body = b"x" * (API_BODY_BYTES + 1)  # not even JSON: a 400 would mean it was read
    for path in ("/api/v1/publish", "/api/v1/documents/00000000-0000-4000-8000-000000000000/edit"):
        r = client.http.post(path, headers={"X-Api-Key": key, "Content-Type": "application/json",
                                            "Content-Length": str(len(body))}, body=body)
        assert r.status_code == 413, r.body
        error = json.loads(r.body)["error"]
        assert error["code"] == "document_too_large"
        assert error["details"] == {"limit_bytes": API_BODY_BYTES, "size_bytes": len(body)}


def test_the_declared_length_alone_is_enough_to_refuse(client, workspace, monkeypatch):
    from chalicelib.entrypoints import http

    _, key = workspace
    monkeypatch.setattr(http, "_decode_json", lambda raw: pytest.fail("the body was parsed"))
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "application/json",
                                                     "Content-Length": str(50 * 1024 * 1024)}, body=b"{}")
    assert r.status_code == 413


def test_just_under_the_limits_still_works(client, workspace):
    _, key = workspace
    html = "<p>" + "a" * (4 * 1024 * 1024 - 7) + "</p>"  # exactly 4 MiB
    r = post_json(client, "/api/v1/publish", {"title": "Big", "html": html}, key)
    assert r.status_code == 200, r.body[:300]
    r = post_json(client, "/api/v1/publish", {"title": "Big", "html": html + "!"}, key)
    assert r.status_code == 413
    assert json.loads(r.body)["error"]["details"] == {"limit_bytes": 4194304, "size_bytes": 4194305}


@pytest.mark.e2e
def test_the_local_server_refuses_a_huge_body_too(stack):
    import httpx

    from chalicelib.entrypoints.bounds import API_BODY_BYTES

    body = b"{" + b" " * API_BODY_BYTES + b"}"
    r = httpx.post(stack.base_url + "/api/v1/publish", content=body, timeout=60,
                   headers={"X-Api-Key": stack.api_key, "Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "document_too_large"


# ------------------------------------------------------------------ 5. randomness from `secrets`

# `random` may jitter a retry delay; it must never pick anything someone could guess.
RANDOM_ALLOWED = {"uniform", "random"}


def test_random_is_never_used_for_identifiers_or_secrets():
    offenders = []
    for path in source_files():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "random":
                offenders.append(f"{where} from random import …")
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "random"
                    and node.attr not in RANDOM_ALLOWED):
                offenders.append(f"{where} random.{node.attr}")
            if isinstance(node, ast.Attribute) and node.attr in ("uuid1", "getrandbits"):
                offenders.append(f"{where} {node.attr}")
    assert offenders == []


def test_every_id_generator_draws_from_secrets_or_uuid4(monkeypatch):
    import random
    import secrets
    import uuid

    from chalicelib.services import context

    used = []
    for name in ("token_urlsafe", "token_hex", "token_bytes"):
        real = getattr(secrets, name)
        monkeypatch.setattr(secrets, name, lambda *a, __real=real, __name=name: used.append(__name) or __real(*a))
    real_uuid4 = uuid.uuid4
    monkeypatch.setattr(uuid, "uuid4", lambda: used.append("uuid4") or real_uuid4())
    for name in ("random", "getrandbits", "choice", "choices", "randint", "randbytes", "randrange", "sample"):
        monkeypatch.setattr(random, name, lambda *a, __name=name: pytest.fail(f"random.{__name} picked an id"))
    generators = [getattr(context, n) for n in dir(context) if n.startswith("new_") and n.endswith("_id")]
    assert len(generators) >= 4
    for generate in generators:
        used.clear()
        assert generate() and used, generate.__name__


def test_share_ids_keys_and_version_ids_come_from_secrets(monkeypatch):
    import secrets

    from chalicelib.services import auth, context

    drawn = []
    real = secrets.token_urlsafe

    def spy(n=None):
        value = real(n)
        drawn.append((n, value))
        return value

    monkeypatch.setattr(secrets, "token_urlsafe", spy)
    share_id = context.new_share_id()
    api_key = auth.generate_api_key()
    version_id = context.new_version_id()
    assert [v for _, v in drawn] == [share_id, api_key[len("dpk_"):], version_id[len("v_"):]]
    assert drawn[0][0] * 8 >= 128 and len(share_id) >= 22  # ≥ 128 bits, URL-safe
    assert re.fullmatch(r"[A-Za-z0-9_-]+", share_id)
    assert drawn[1][0] * 8 >= 256 and re.fullmatch(r"dpk_[A-Za-z0-9_-]{43}", api_key)
    assert len({context.new_share_id() for _ in range(1000)}) == 1000


def test_client_ip_trusts_cloudfront_only_with_its_origin_secret(monkeypatch):
    from types import SimpleNamespace

    from chalicelib.entrypoints.http import client_ip

    def request(headers):
        return SimpleNamespace(headers=headers, context={"identity": {"sourceIp": "192.0.2.10"}})

    forged = {"cloudfront-viewer-address": "198.51.100.1:443"}
    assert client_ip(request(forged)) == "192.0.2.10"  # not trusted by default
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "s3cret-from-cloudfront")
    assert client_ip(request(forged)) == "192.0.2.10"  # direct call to API Gateway: no secret
    assert client_ip(request({**forged, "x-docpub-origin-secret": "wrong"})) == "192.0.2.10"
    assert client_ip(request({**forged, "x-docpub-origin-secret": "s3cret-from-cloudfront"})) == "198.51.100.1"
    v6 = {"cloudfront-viewer-address": "2001:db8:1:2:3:4:5:6:443", "x-docpub-origin-secret": "s3cret-from-cloudfront"}
    assert client_ip(request(v6)) == "2001:db8:1:2::/64"  # one subscriber's block counts once
