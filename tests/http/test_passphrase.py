"""Passphrase protection: the Pro-only REST routes, the unlock flow, cookies, rate limit."""
from __future__ import annotations

import dataclasses
import json

import pytest

from tests.helpers import auth
from tests.sharing_helpers import (  # noqa: F401  (fixtures)
    FORM, cookie_of, get_json, pro, publish, send_feedback, set_passphrase, unlock,
)

# argon2 with cheap parameters (tests/conftest.py fast_argon2): every unlock and sign-in here
# verifies a hash (0.25-0.4 s each with the production ones);
# test_passphrase.py::test_passwords_and_passphrases_hash_with_production_parameters_by_default
# holds the production parameters.
pytestmark = pytest.mark.usefixtures("fast_argon2")

PASS = "correct horse battery"


@pytest.fixture
def protected(client, pro):
    _, key = pro
    doc = publish(client, key, "Top <secret> plans", "<p>the hidden body</p>")
    assert set_passphrase(client, key, doc["document_id"], PASS).status_code == 204
    return doc, key


def _locked(body: bytes) -> bool:
    return b"This document is protected" in body and b"<iframe" not in body


# ------------------------------------------------------------------ REST

def test_free_workspace_cannot_protect(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    for r in (set_passphrase(client, key, doc["document_id"], PASS),
              client.http.delete(f"/api/v1/documents/{doc['document_id']}/passphrase", headers=auth(key))):
        assert r.status_code == 403
        assert json.loads(r.body)["error"] == {
            "code": "feature_not_in_plan", "message": json.loads(r.body)["error"]["message"],
            "details": {"feature": "passphrase_links"}}
    assert client.http.get(f"/d/{doc['share_id']}").status_code == 200


@pytest.mark.parametrize("passphrase, status", [("x" * 7, 422), ("x" * 201, 422), ("", 422),
                                                ("k7#Qz!p2", 204), ("Ünïcödé ärë fïnë " * 11 + "é" * 13, 204)])
def test_passphrase_length(client, pro, passphrase, status):
    _, key = pro
    doc = publish(client, key)
    r = set_passphrase(client, key, doc["document_id"], passphrase)
    assert r.status_code == status, r.body
    if status == 422:
        assert json.loads(r.body)["error"]["code"] == "validation_error"


def test_passphrase_route_errors(client, pro, workspace):
    _, key = pro
    _, other_key = workspace
    doc = publish(client, key)
    theirs = publish(client, other_key)
    path = f"/api/v1/documents/{doc['document_id']}/passphrase"
    assert client.http.put(path, body=json.dumps({"passphrase": PASS}),
                           headers={"Content-Type": "application/json"}).status_code == 401
    r = client.http.put(path, headers=auth(key), body=json.dumps({"passphrase": PASS, "hint": "x"}))
    assert r.status_code == 422
    r = client.http.put(path, headers=auth(key), body="{nope")
    assert r.status_code == 400 and json.loads(r.body)["error"]["code"] == "invalid_json"
    unknown = "00000000-0000-4000-8000-000000000000"
    assert set_passphrase(client, key, unknown, PASS).status_code == 404
    # Another workspace's document looks exactly like a missing one.
    r = set_passphrase(client, key, theirs["document_id"], PASS)
    assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    assert client.http.delete(f"/api/v1/documents/{theirs['document_id']}/passphrase",
                              headers=auth(key)).status_code == 404
    assert client.http.get(path, headers=auth(key)).status_code == 405


def test_passphrase_is_stored_as_argon2id_only(client, services, protected):
    doc, key = protected
    item = services.documents.ctx.documents.get(doc["document_id"])
    assert item.passphrase_hash.startswith("$argon2id$")
    assert PASS not in json.dumps(dataclasses.asdict(item), default=str)
    status, detail = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert detail["passphrase_protected"] is True
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}/passphrase",
                              headers=auth(key)).status_code == 204
    status, detail = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert detail["passphrase_protected"] is False
    assert services.documents.ctx.documents.get(doc["document_id"]).passphrase_hash is None


def test_downgraded_workspace_can_still_remove_its_passphrase(client, services, pro, protected):
    doc, key = protected
    services.workspaces.set_plan(pro[0].id, "free")
    assert _locked(client.http.get(f"/d/{doc['share_id']}").body)  # protection stays on
    assert set_passphrase(client, key, doc["document_id"], "another one").status_code == 403
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}/passphrase",
                              headers=auth(key)).status_code == 204
    assert client.http.get(f"/d/{doc['share_id']}").status_code == 200
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}/passphrase",
                              headers=auth(key)).status_code == 403


# ------------------------------------------------------------------ the locked link

def test_protected_link_shows_only_an_unlock_form(client, protected):
    doc, _ = protected
    share = doc["share_id"]
    for path in (f"/d/{share}", f"/d/{share}?v=1", f"/d/{share}?v=99"):
        r = client.http.get(path)
        assert r.status_code == 200
        assert r.headers["Cache-Control"] == "private, no-store"
        assert r.headers["X-Robots-Tag"].startswith("noindex")
        body = r.body
        assert _locked(body)
        assert b"secret" not in body and b"Top" not in body and doc["version_id"].encode() not in body
        assert f'action="/d/{share}/unlock'.encode() in body
    content = client.http.get(f"/d/{share}/v/{doc['version_id']}")
    assert content.status_code == 401
    assert b"hidden body" not in content.body
    assert content.headers["Cache-Control"] == "private, no-store"


def test_unlock_wrong_then_right(client, protected):
    doc, _ = protected
    share = doc["share_id"]
    wrong = unlock(client, share, "not the passphrase")
    assert wrong.status_code == 401
    assert _locked(wrong.body) and b"not right" in wrong.body
    assert "Set-Cookie" not in wrong.headers
    assert unlock(client, share, "").status_code == 401
    right = unlock(client, share, PASS)
    assert right.status_code == 303
    assert right.headers["Location"] == f"/d/{share}"
    attributes = [a.strip() for a in right.headers["Set-Cookie"].split(";")]
    assert f"Path=/d/{share}" in attributes
    assert "HttpOnly" in attributes and "SameSite=Lax" in attributes
    assert "Secure" not in attributes  # base URL is http here
    cookie = {"Cookie": cookie_of(right)}
    page = client.http.get(f"/d/{share}", headers=cookie)
    assert page.status_code == 200
    assert b"Top &lt;secret&gt; plans" in page.body and b"<iframe" in page.body
    assert page.headers["Cache-Control"] == "private, no-store"
    content = client.http.get(f"/d/{share}/v/{doc['version_id']}", headers=cookie)
    assert content.status_code == 200 and b"the hidden body" in content.body
    assert content.headers["Cache-Control"] == "private, no-store"
    # ?v=N survives the unlock round trip.
    assert unlock_with_version(client, share).headers["Location"] == f"/d/{share}?v=1"


def unlock_with_version(client, share):
    return client.http.post(f"/d/{share}/unlock?v=1", headers=FORM, body=f"passphrase={PASS.replace(' ', '+')}")


def test_unlock_accepts_json_too_and_unknown_links_are_404(client, protected):
    doc, _ = protected
    r = client.http.post(f"/d/{doc['share_id']}/unlock", headers={"Content-Type": "application/json"},
                         body=json.dumps({"passphrase": PASS}))
    assert r.status_code == 303
    r = client.http.post("/d/AAAAAAAAAAAAAAAAAAAAAA/unlock", headers=FORM, body="passphrase=whatever1")
    assert r.status_code == 404 and r.headers["Content-Type"].startswith("text/html")


def test_secure_cookie_when_the_base_url_is_https(client, protected, monkeypatch):
    monkeypatch.setenv("DOCPUB_BASE_URL", "https://docs.example.com")
    doc, _ = protected
    r = unlock(client, doc["share_id"], PASS)
    assert "Secure" in [a.strip() for a in r.headers["Set-Cookie"].split(";")]


def test_cookie_unlocks_that_document_only(client, protected):
    doc, key = protected
    other = publish(client, key, "Other", "<p>other body</p>")
    assert set_passphrase(client, key, other["document_id"], PASS).status_code == 204
    cookie = {"Cookie": cookie_of(unlock(client, doc["share_id"], PASS))}
    assert not _locked(client.http.get(f"/d/{doc['share_id']}", headers=cookie).body)
    assert _locked(client.http.get(f"/d/{other['share_id']}", headers=cookie).body)
    assert client.http.get(f"/d/{other['share_id']}/v/{other['version_id']}", headers=cookie).status_code == 401
    assert send_feedback(client, other["share_id"], {"message": "hi"}, cookie).status_code == 401


def test_forged_or_tampered_cookies_do_not_unlock(client, protected, monkeypatch):
    doc, _ = protected
    name, value = cookie_of(unlock(client, doc["share_id"], PASS)).split("=", 1)
    for bad in (value[:-2] + ("AA" if not value.endswith("AA") else "BB"), "x", ""):
        assert _locked(client.http.get(f"/d/{doc['share_id']}", headers={"Cookie": f"{name}={bad}"}).body)
    monkeypatch.setenv("DOCPUB_SECRET_KEY", "a different secret")
    assert _locked(client.http.get(f"/d/{doc['share_id']}", headers={"Cookie": f"{name}={value}"}).body)


def test_changing_the_passphrase_invalidates_cookies(client, protected):
    doc, key = protected
    share = doc["share_id"]
    cookie = {"Cookie": cookie_of(unlock(client, share, PASS))}
    assert not _locked(client.http.get(f"/d/{share}", headers=cookie).body)
    assert set_passphrase(client, key, doc["document_id"], "a brand new passphrase").status_code == 204
    assert _locked(client.http.get(f"/d/{share}", headers=cookie).body)
    # Removing and setting the same passphrase again does not revive old cookies either.
    fresh = {"Cookie": cookie_of(unlock(client, share, "a brand new passphrase"))}
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}/passphrase",
                              headers=auth(key)).status_code == 204
    assert b"<iframe" in client.http.get(f"/d/{share}").body  # public again
    assert set_passphrase(client, key, doc["document_id"], "a brand new passphrase").status_code == 204
    assert _locked(client.http.get(f"/d/{share}", headers=fresh).body)
    assert client.http.get(f"/d/{share}/v/{doc['version_id']}", headers=fresh).status_code == 401


def test_unlock_cookie_expires_after_a_week(client, protected, app_clock):
    doc, _ = protected
    cookie = {"Cookie": cookie_of(unlock(client, doc["share_id"], PASS))}
    app_clock.advance(7 * 24 * 3600 - 5)
    assert not _locked(client.http.get(f"/d/{doc['share_id']}", headers=cookie).body)
    app_clock.advance(10)
    assert _locked(client.http.get(f"/d/{doc['share_id']}", headers=cookie).body)


def test_ten_attempts_per_ip_per_document_per_ten_minutes(client, protected, app_clock):
    doc, key = protected
    share = doc["share_id"]
    for _ in range(10):
        assert unlock(client, share, "wrong guess!").status_code == 401
        app_clock.advance(1)
    refused = unlock(client, share, PASS)  # even the right passphrase: not checked any more
    assert refused.status_code == 429
    assert "Set-Cookie" not in refused.headers
    assert refused.headers["Content-Type"].startswith("text/html")
    retry = int(refused.headers["Retry-After"])
    assert 590 <= retry <= 600
    # Another document is a separate budget.
    other = publish(client, key, "Other")
    assert set_passphrase(client, key, other["document_id"], PASS).status_code == 204
    assert unlock(client, other["share_id"], PASS).status_code == 303
    # Sliding: once the first attempt is ten minutes old, one more is allowed.
    app_clock.advance(retry)
    assert unlock(client, share, PASS).status_code == 303
    assert unlock(client, share, PASS).status_code == 429


def test_rate_limit_is_per_client_ip_from_the_request_context(ctx, client, protected, app_clock, monkeypatch):
    from chalice import local

    from chalicelib.services.sharing import ShareService, WrongPassphrase
    from chalicelib.errors import RateLimited

    doc, _ = protected
    service = ShareService(ctx)
    for _ in range(10):
        with pytest.raises(WrongPassphrase):
            service.unlock(doc["share_id"], "wrong guess!", "198.51.100.1")
    with pytest.raises(RateLimited):
        service.unlock(doc["share_id"], PASS, "198.51.100.1")
    assert service.unlock(doc["share_id"], PASS, "198.51.100.2").cookie_value
    # Over HTTP the address is API Gateway's sourceIp: a forged header changes nothing...
    monkeypatch.setattr(local.LambdaEventConverter, "LOCAL_SOURCE_IP", "198.51.100.1")
    spoofed = unlock(client, doc["share_id"], PASS, {"X-Forwarded-For": "192.0.2.77",
                                                    "CloudFront-Viewer-Address": "192.0.2.78:443"})
    assert spoofed.status_code == 429
    # ...unless the stage is configured to trust CloudFront's viewer address.
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    trusted = unlock(client, doc["share_id"], PASS, {"CloudFront-Viewer-Address": "192.0.2.78:443"})
    assert trusted.status_code == 303


def test_feedback_on_a_protected_document_needs_the_cookie(client, protected):
    doc, key = protected
    r = send_feedback(client, doc["share_id"], {"message": "let me in"})
    assert r.status_code == 401
    assert json.loads(r.body)["error"]["code"] == "unauthorized"
    cookie = {"Cookie": cookie_of(unlock(client, doc["share_id"], PASS))}
    r = send_feedback(client, doc["share_id"], {"message": "thanks"}, cookie)
    assert r.status_code == 201
    status, listing = get_json(client, "/api/v1/feedback", key)
    assert [f["message"] for f in listing["feedback"]] == ["thanks"]


def test_passwords_and_passphrases_hash_with_production_parameters_by_default(monkeypatch):
    """Without DOCPUB_ARGON2_* (as deployed), account passwords and share passphrases both use
    argon2id with argon2-cffi's defaults, RFC 9106's low-memory profile: t=3, m=64 MiB, p=4.
    The knobs tune both (tests set cheap ones)."""
    from argon2 import Type, extract_parameters

    from chalicelib.services import accounts, sharing
    from tests.dashboard_client import FAST_ARGON2

    for name in FAST_ARGON2:
        monkeypatch.delenv(name, raising=False)
    production = (3, 65536, 4, Type.ID)
    for hasher in (accounts.password_hasher(), sharing._hasher()):
        assert (hasher.time_cost, hasher.memory_cost, hasher.parallelism, hasher.type) == production
    stored = sharing._hasher().hash(PASS)
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert extract_parameters(stored).memory_cost == 65536 and sharing._hasher().verify(stored, PASS)
    for name, value in FAST_ARGON2.items():
        monkeypatch.setenv(name, value)
    assert (sharing._hasher().time_cost, sharing._hasher().memory_cost) == (1, 256)
