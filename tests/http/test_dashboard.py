"""Dashboard over HTTP (chalice.test.Client + moto): accounts, sessions, CSRF, forms,
plan refusals, and agreement with the REST API."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.dashboard_client import DashboardClient
from tests.helpers import post_json

KEY_SHAPE = re.compile(r"dpk_[A-Za-z0-9_-]{32,}")


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply: these tests sign up many people."""


@pytest.fixture
def dash(client, app_clock):
    return DashboardClient(client)


@pytest.fixture
def owner(dash):
    dash.sign_up()
    return dash


def workspace_id_of(dash) -> str:
    page = dash.get("/dashboard/workspace")
    return re.search(r"<code>(ws_[^<]+)</code>", page.text).group(1)


def create_key(dash, name="ci") -> str:
    page = dash.post("/dashboard/keys", {"name": name}, csrf=dash.token())
    assert page.status == 201, page.text
    return KEY_SHAPE.search(page.text).group(0)


def upload(dash, html: bytes, title="Report", note="", document_id=None):
    fields = {"title": title, "note": note}
    if document_id:
        fields["document_id"] = document_id
    return dash.post_multipart("/dashboard/upload", fields, {"file": ("doc.html", html)}, csrf=dash.token())


def doc_id_from(page) -> str:
    return re.search(r"/dashboard/documents/([0-9a-f-]{36})", page.location).group(1)


def set_plan(workspace_id: str, plan: str) -> None:
    from chalicelib import wiring

    wiring.workspaces().set_plan(workspace_id, plan)


def rest(client, method: str, path: str, key: str, body=None):
    headers = {"X-Api-Key": key}
    if body is not None:
        headers["Content-Type"] = "application/json"
        return getattr(client.http, method)(path, headers=headers, body=json.dumps(body))
    return getattr(client.http, method)(path, headers=headers)


# ------------------------------------------------------------------ cold start, headers, static

def test_app_import_does_not_load_dashboard_libraries():
    code = ("import sys, app; heavy = [m for m in ('jinja2', 'argon2', 'itsdangerous') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_page_has_security_headers_and_no_inline_script(owner):
    paths = ["/dashboard/documents", "/dashboard/upload", "/dashboard/keys", "/dashboard/workspace",
             "/dashboard/account", "/dashboard/feedback"]
    anonymous = DashboardClient(owner.client)
    pages = [owner.get(p) for p in paths] + [anonymous.get("/dashboard/sign-in"), anonymous.get("/dashboard/sign-up")]
    for page in pages:
        assert page.status == 200, page.text
        csp = page.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert page.headers["X-Content-Type-Options"] == "nosniff"
        assert page.headers["Referrer-Policy"] == "same-origin"
        assert page.headers["Cache-Control"] == "no-store"
        assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page.text) is None  # no inline scripts
        assert " style=" not in page.text and " on" + "click=" not in page.text


def test_static_assets(dash):
    js = dash.get("/dashboard/static/dashboard.js")
    assert js.status == 200 and js.headers["Content-Type"].startswith("text/javascript")
    assert js.headers["X-Content-Type-Options"] == "nosniff"
    css = dash.get("/dashboard/static/dashboard.css")
    assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
    assert dash.get("/dashboard/static/..%2Fapp.py").status == 404
    assert dash.get("/dashboard/static/secret.txt").status == 404


def test_signed_out_pages_redirect_to_sign_in(dash):
    page = dash.get("/dashboard/documents?q=x")
    assert page.status == 303
    assert page.location == "/dashboard/sign-in?next=%2Fdashboard%2Fdocuments%3Fq%3Dx"


# ------------------------------------------------------------------ accounts

def test_sign_up_creates_free_workspace_with_owner_and_session_cookie(client, app_clock):
    dash = DashboardClient(client)
    form = dash.get("/dashboard/sign-up")
    page = dash.post("/dashboard/sign-up", {"email": "Owner@Example.com", "password": "correct horse battery",
                                            "workspace_name": "Acme Docs"}, csrf=form.csrf())
    # Contract 7d: no session before the email is confirmed; the link in the mail signs in.
    assert page.status == 200 and "We sent a message to owner@example.com" in page.text
    assert "docpub_session" not in dash.cookies
    page = dash.follow_mail_link("owner@example.com", "verify")
    assert page.status == 303 and page.location.startswith("/dashboard/keys")
    cookie = next(c for c in page.headers["Set-Cookie"] if c.startswith("docpub_session="))
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/dashboard" in cookie
    assert "Secure" not in cookie  # plain http locally
    workspace = dash.get("/dashboard/workspace")
    assert "Acme Docs" in workspace and "Free" in workspace and "0 / 5" in workspace and "0 / 1" in workspace
    import dataclasses

    from chalicelib import wiring

    user = wiring.accounts().ctx.users.get("owner@example.com")
    assert user.role == "owner" and user.password_hash.startswith("$argon2id$")
    assert "correct horse" not in json.dumps(dataclasses.asdict(user))
    ws = wiring.workspaces().get_workspace(user.workspace_id)
    assert ws.plan == "free" and ws.name == "Acme Docs"
    assert wiring.workspaces().list_keys(ws.id) == []  # with_key=False
    # Only the hash of the session id is stored.
    session_id = dash.cookies["docpub_session"]
    from chalicelib.services.accounts import hash_session_id

    sessions = wiring.accounts().ctx.sessions
    assert sessions.get(session_id) is None
    assert sessions.get(hash_session_id(session_id)).email == "owner@example.com"


def test_secure_cookie_on_https(client, app_clock, monkeypatch):
    monkeypatch.setenv("DOCPUB_BASE_URL", "https://docs.example.com")
    dash = DashboardClient(client)
    page = dash.sign_up()
    cookie = next(c for c in page.headers["Set-Cookie"] if c.startswith("docpub_session="))
    assert "; Secure" in cookie


def test_sign_up_validation_and_taken_email(client, app_clock):
    dash = DashboardClient(client)
    page = dash.submit("/dashboard/sign-up", "/dashboard/sign-up",
                       {"email": "not-an-email", "password": "short", "workspace_name": ""})
    assert page.status == 422
    assert "must be a valid email address" in page and "must be 8 to 200 characters" in page.text
    assert "docpub_session" not in dash.cookies
    dash.sign_up(email="a@example.com")
    other = DashboardClient(client)
    page = other.submit("/dashboard/sign-up", "/dashboard/sign-up",
                        {"email": "A@example.com", "password": "another password", "workspace_name": "Evil"})
    # The same answer as for a new email (no enumeration); the mail tells the owner instead.
    assert page.status == 200 and "We sent a message to a@example.com" in page.text
    assert "docpub_session" not in other.cookies
    from tests.dashboard_client import outbox_messages

    assert outbox_messages()[0]["kind"] == "exists" and outbox_messages()[0]["to"] == "a@example.com"
    # The original owner still signs in with the original password.
    assert DashboardClient(client).sign_in(email="a@example.com").status == 303


def test_sign_in_failures_are_generic(client, app_clock):
    DashboardClient(client).sign_up(email="known@example.com")
    wrong_password = DashboardClient(client).sign_in(email="known@example.com", password="wrong password!")
    unknown_email = DashboardClient(client).sign_in(email="nobody@example.com", password="wrong password!")
    assert wrong_password.status == unknown_email.status == 401
    message = "Email or password is incorrect."
    assert message in wrong_password and message in unknown_email


def test_sign_in_rotates_the_session_and_sign_out_ends_it(client, app_clock):
    first = DashboardClient(client)
    first.sign_up()
    old_session = first.cookies["docpub_session"]
    page = first.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery"},
                      csrf=first.token())
    assert page.status == 303
    new_session = first.cookies["docpub_session"]
    assert new_session != old_session
    stale = DashboardClient(client)
    stale.cookies["docpub_session"] = old_session
    assert stale.get("/dashboard/documents").status == 303  # the pre-sign-in id is dead
    assert first.get("/dashboard/documents").status == 200
    page = first.post("/dashboard/sign-out", {}, csrf=first.token())
    assert page.status == 303 and "docpub_session" not in first.cookies
    replay = DashboardClient(client)
    replay.cookies["docpub_session"] = new_session
    assert replay.get("/dashboard/documents").status == 303


def test_sign_in_redirects_only_inside_the_dashboard(client, app_clock):
    DashboardClient(client).sign_up()
    dash = DashboardClient(client)
    form = dash.get("/dashboard/sign-in?next=//evil.example/x")
    page = dash.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery",
                                            "next": "//evil.example/x"}, csrf=form.csrf())
    assert page.location == "/dashboard/documents"
    dash2 = DashboardClient(client)
    page = dash2.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery",
                                             "next": "/dashboard/keys"}, csrf=dash2.get("/dashboard/sign-in").csrf())
    assert page.location == "/dashboard/keys"


def test_session_expires_by_clock_not_ttl(owner, app_clock):
    from chalicelib import config

    assert owner.get("/dashboard/documents").status == 200
    token = owner.token()
    app_clock.advance(config.dashboard_session_seconds() + 1)
    page = owner.get("/dashboard/documents")
    assert page.status == 303 and "/dashboard/sign-in" in page.location
    page = owner.post("/dashboard/keys", {"name": "late"}, csrf=token)
    assert page.status == 303 and page.location == "/dashboard/sign-in?m=expired"
    assert "docpub_session" not in owner.cookies


def test_change_password(client, app_clock):
    dash = DashboardClient(client)
    dash.sign_up()
    other_browser = DashboardClient(client)
    other_browser.sign_in()
    page = dash.post("/dashboard/account", {"current_password": "wrong password!", "new_password": "new password 123",
                                            "confirm_password": "new password 123"}, csrf=dash.token())
    assert page.status == 422 and "current password is incorrect" in page.text
    page = dash.post("/dashboard/account", {"current_password": "correct horse battery",
                                            "new_password": "new password 123",
                                            "confirm_password": "new password 123"}, csrf=dash.token())
    assert page.status == 303
    assert dash.get("/dashboard/documents").status == 200  # this browser got a fresh session
    assert other_browser.get("/dashboard/documents").status == 303  # every other session ended
    assert DashboardClient(client).sign_in().status == 401
    assert DashboardClient(client).sign_in(password="new password 123").status == 303


# ------------------------------------------------------------------ CSRF

def test_csrf_is_required_and_bound_to_the_session(client, app_clock):
    alice = DashboardClient(client)
    alice.sign_up(email="alice@example.com")
    mallory = DashboardClient(client)
    mallory.sign_up(email="mallory@example.com", workspace="M")
    # No token, a forged token, and another session's token: all refused, nothing created.
    assert alice.post("/dashboard/keys", {"name": "x"}).status == 403
    assert alice.post("/dashboard/keys", {"name": "x"}, csrf="forged").status == 403
    page = alice.post("/dashboard/keys", {"name": "x"}, csrf=mallory.token())
    assert page.status == 403 and "did not come from this site" in page.text
    assert "No keys yet." in alice.get("/dashboard/keys")
    # Sign-in and sign-up forms are protected too (bound to the anonymous cookie).
    stranger = DashboardClient(client)
    assert stranger.post("/dashboard/sign-in", {"email": "alice@example.com",
                                                "password": "correct horse battery"}).status == 403
    assert "docpub_session" not in stranger.cookies
    assert alice.post("/dashboard/sign-out", {}).status == 403
    assert alice.get("/dashboard/documents").status == 200


# ------------------------------------------------------------------ rate limits

def test_sign_in_rate_limited_per_ip(client, app_clock):
    from chalicelib.services.accounts import SIGN_IN_PER_IP

    DashboardClient(client).sign_up()
    dash = DashboardClient(client)
    token = dash.get("/dashboard/sign-in").csrf()
    limit, window = SIGN_IN_PER_IP
    for i in range(limit):
        page = dash.post("/dashboard/sign-in", {"email": f"user{i}@example.com", "password": "nope nope nope"},
                         csrf=token)
        assert page.status == 401
    page = dash.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery"},
                     csrf=token)
    assert page.status == 429 and "Too many sign-in attempts" in page.text
    assert 1 <= int(page.headers["Retry-After"]) <= window
    app_clock.advance(window + 1)
    assert dash.post("/dashboard/sign-in", {"email": "owner@example.com", "password": "correct horse battery"},
                     csrf=token).status == 303


def test_sign_in_rate_limited_per_account(client, app_clock, monkeypatch):
    from chalicelib.services import accounts

    monkeypatch.setattr(accounts, "SIGN_IN_PER_ACCOUNT", (12, 900))  # the real cap is 100: keep the test quick
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    DashboardClient(client).sign_up()
    limit, window = accounts.SIGN_IN_PER_ACCOUNT
    for i in range(limit):
        attacker = DashboardClient(client, headers={"CloudFront-Viewer-Address": f"198.51.100.{i}:443"})
        assert attacker.sign_in(password="guess number %d" % i).status == 401
    owner = DashboardClient(client, headers={"CloudFront-Viewer-Address": "203.0.113.9:443"})
    assert owner.sign_in().status == 429
    app_clock.advance(window + 1)
    assert owner.sign_in().status == 303


def test_guessing_from_one_address_does_not_lock_the_owner_out(client, app_clock, monkeypatch):
    from chalicelib.services.accounts import SIGN_IN_PER_ACCOUNT_AND_IP

    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    DashboardClient(client).sign_up()
    limit, _window = SIGN_IN_PER_ACCOUNT_AND_IP
    attacker = DashboardClient(client, headers={"CloudFront-Viewer-Address": "198.51.100.7:443"})
    for i in range(limit):
        assert attacker.sign_in(password="guess number %d" % i).status == 401
    assert attacker.sign_in().status == 429  # even the right password, from that address
    owner = DashboardClient(client, headers={"CloudFront-Viewer-Address": "203.0.113.9:443"})
    assert owner.sign_in().status == 303


# ------------------------------------------------------------------ documents

def test_upload_shows_in_rest_and_rest_publish_shows_in_dashboard(owner, client):
    key = create_key(owner)
    page = upload(owner, "<h1>Quarterly ünïcode</h1>\n".encode(), title="Q3 report", note="first")
    assert page.status == 303
    document_id = doc_id_from(page)
    listed = json.loads(rest(client, "get", "/api/v1/documents", key).body)["documents"]
    assert [d["document_id"] for d in listed] == [document_id]
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}?include_html=true", key).body)
    assert got["html"] == "<h1>Quarterly ünïcode</h1>\n" and got["versions"][0]["note"] == "first"
    # REST publish → dashboard list and search.
    r = post_json(client, "/api/v1/publish", {"title": "From the API", "html": "<p>api</p>"}, key)
    assert r.status_code == 200
    listing = owner.get("/dashboard/documents")
    assert "From the API" in listing and "Q3 report" in listing
    search = owner.get("/dashboard/documents?q=api")
    assert "From the API" in search and "Q3 report" not in search.text


def test_dashboard_never_renders_document_html(owner):
    page = upload(owner, b'<h1 id="marker">USERHTML</h1><script>alert(1)</script>', title="<b>Bold</b> title")
    document_id = doc_id_from(page)
    detail = owner.get(f"/dashboard/documents/{document_id}")
    assert detail.status == 200
    assert '<h1 id="marker">' not in detail.text and "<script>alert" not in detail.text
    assert "&lt;b&gt;Bold&lt;/b&gt; title" in detail.text
    share_id = re.search(r"/d/([A-Za-z0-9_-]+)\?v=1", detail.text)
    assert share_id, "versions are viewed through the sandboxed share route"


def test_upload_too_large_is_413_with_the_contract_message(owner):
    page = upload(owner, b"<p>" + b"x" * (4 * 1024 * 1024) + b"</p>", title="Huge")
    assert page.status == 413
    assert "the limit is 4,194,304 bytes (4 MiB)" in page.text
    assert "No documents yet" in owner.get("/dashboard/documents")


def test_upload_rejects_non_utf8_and_empty(owner):
    assert upload(owner, b"\xff\xfe<p>x</p>", title="Bad").status == 422
    assert upload(owner, b"   ", title="Empty").status == 422


def test_upload_new_version_keeps_title_and_free_plan_cap(owner, client):
    key = create_key(owner)
    first = doc_id_from(upload(owner, b"<p>v1</p>", title="Doc 1"))
    page = upload(owner, b"<p>v2</p>", title="", note="second", document_id=first)
    assert page.status == 303 and "m=published" in page.location
    got = json.loads(rest(client, "get", f"/api/v1/documents/{first}", key).body)
    assert got["title"] == "Doc 1" and got["version_count"] == 2
    for n in range(2, 6):
        assert upload(owner, b"<p>x</p>", title=f"Doc {n}").status == 303
    page = upload(owner, b"<p>six</p>", title="Doc 6")
    assert page.status == 403 and "at most 5 documents" in page.text
    assert "5 / 5" in owner.get("/dashboard/workspace")
    # New versions of existing documents still work on a full free workspace.
    assert upload(owner, b"<p>v3</p>", document_id=first).status == 303


def test_update_details_restore_and_diff(owner, client):
    key = create_key(owner)
    document_id = doc_id_from(upload(owner, b"<p>one</p>\n<p>same</p>\n", title="Notes"))
    upload(owner, b"<p>two &amp; <b>bold</b></p>\n<p>same</p>\n", document_id=document_id, note="v2")
    page = owner.post(f"/dashboard/documents/{document_id}", {"title": "Renamed", "description": "About it"},
                      csrf=owner.token())
    assert page.status == 303
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}", key).body)
    assert (got["title"], got["description"], got["version_count"]) == ("Renamed", "About it", 2)
    bad = owner.post(f"/dashboard/documents/{document_id}", {"title": " ", "description": ""}, csrf=owner.token())
    assert bad.status == 422
    # Diff is escaped text, never markup.
    diff = owner.get(f"/dashboard/documents/{document_id}/diff?from=1&to=2")
    assert diff.status == 200
    assert "&lt;p&gt;two &amp;amp; &lt;b&gt;bold&lt;/b&gt;&lt;/p&gt;" in diff.text
    assert '<tr class="removed">' in diff.text and '<tr class="added">' in diff.text
    assert "<b>bold</b>" not in diff.text
    assert owner.get(f"/dashboard/documents/{document_id}/diff?from=1&to=9").status == 404
    # Restore version 1 as version 3.
    page = owner.post(f"/dashboard/documents/{document_id}/restore", {"number": "1"}, csrf=owner.token())
    assert page.status == 303
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}?include_html=true", key).body)
    assert got["version_count"] == 3 and got["html"] == "<p>one</p>\n<p>same</p>\n"
    assert got["versions"][2]["note"] == "Restored version 1"
    assert "identical" in owner.get(f"/dashboard/documents/{document_id}/diff?from=1&to=3")
    latest = owner.post(f"/dashboard/documents/{document_id}/restore", {"number": "3"}, csrf=owner.token())
    assert latest.status == 422


def test_delete_with_confirmation(owner, client):
    key = create_key(owner)
    document_id = doc_id_from(upload(owner, b"<p>bye</p>", title="Temp"))
    confirm = owner.get(f"/dashboard/documents/{document_id}/delete")
    assert confirm.status == 200 and "data-confirm" in confirm.text
    page = owner.post(f"/dashboard/documents/{document_id}/delete", {}, csrf=confirm.csrf())
    assert page.status == 303 and "m=deleted" in page.location
    assert rest(client, "get", f"/api/v1/documents/{document_id}", key).status_code == 404
    assert owner.get(f"/dashboard/documents/{document_id}").status == 404


def test_other_workspaces_documents_and_keys_are_invisible(client, app_clock):
    alice = DashboardClient(client)
    alice.sign_up(email="alice@example.com")
    document_id = doc_id_from(upload(alice, b"<p>private</p>", title="Alice's"))
    create_key(alice)
    key_id = re.search(r"/dashboard/keys/(key_[0-9a-f]+)/revoke", alice.get("/dashboard/keys").text).group(1)
    bob = DashboardClient(client)
    bob.sign_up(email="bob@example.com", workspace="Bob")
    assert bob.get(f"/dashboard/documents/{document_id}").status == 404
    assert bob.post(f"/dashboard/documents/{document_id}/delete", {}, csrf=bob.token()).status == 404
    assert bob.post(f"/dashboard/keys/{key_id}/revoke", {}, csrf=bob.token()).status == 404
    assert "Alice&#39;s" not in bob.get("/dashboard/documents").text
    assert alice.get(f"/dashboard/documents/{document_id}").status == 200


# ------------------------------------------------------------------ Pro editing and branding

def test_dashboard_editing_is_pro_only_and_saves_a_version(owner, client):
    key = create_key(owner)
    document_id = doc_id_from(upload(owner, b"<h1>Title</h1>\n<p>Body</p>\n", title="Editable"))
    free_page = owner.get(f"/dashboard/documents/{document_id}/edit")
    assert free_page.status == 200 and "Pro feature" in free_page.text and "<textarea name=\"html\"" not in free_page.text
    refused = owner.post_multipart(f"/dashboard/documents/{document_id}/edit",
                                   {"html": "<p>hacked</p>", "note": "x"}, {}, csrf=owner.token())
    assert refused.status == 403 and "Pro feature" in refused.text
    assert json.loads(rest(client, "get", f"/api/v1/documents/{document_id}", key).body)["version_count"] == 1
    set_plan(workspace_id_of(owner), "pro")
    editor = owner.get(f"/dashboard/documents/{document_id}/edit")
    assert "&lt;h1&gt;Title&lt;/h1&gt;" in editor.text  # escaped inside the textarea
    base = re.search(r'name="base_version_id" value="([^"]+)"', editor.text).group(1)
    page = owner.post_multipart(f"/dashboard/documents/{document_id}/edit",
                                {"html": "<h1>Title</h1>\r\n<p>Edited ✓</p>\r\n", "note": "typo fix",
                                 "base_version_id": base}, {}, csrf=editor.csrf())
    assert page.status == 303
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}?include_html=true", key).body)
    assert got["version_count"] == 2 and got["html"] == "<h1>Title</h1>\n<p>Edited ✓</p>\n"
    assert got["versions"][1]["note"] == "typo fix"
    # A stale editor (someone published meanwhile) is a 409, not a lost update.
    stale = owner.post_multipart(f"/dashboard/documents/{document_id}/edit",
                                 {"html": "<p>stale</p>", "base_version_id": base}, {}, csrf=editor.csrf())
    assert stale.status == 409
    too_big = owner.post_multipart(f"/dashboard/documents/{document_id}/edit",
                                   {"html": "x" * (4 * 1024 * 1024 + 1)}, {}, csrf=editor.csrf())
    assert too_big.status == 413


def test_editing_rule_lives_in_the_service(services, ctx):
    from chalicelib.errors import FeatureNotInPlan
    from chalicelib.services.access import Actor
    from chalicelib.services.editing import EditingService
    from chalicelib.models import PublishRequest

    ws, _ = services.workspaces.create_workspace("Free", "free", with_key=False)
    actor = Actor(ws.id)
    doc = services.documents.publish(actor, PublishRequest(title="T", html="<p>a</p>")).response
    with pytest.raises(FeatureNotInPlan) as caught:
        EditingService(ctx).save_html(actor, doc.document_id, "<p>b</p>")
    assert caught.value.details == {"feature": "dashboard_editing"}
    services.workspaces.set_plan(ws.id, "pro")
    result = EditingService(ctx).save_html(actor, doc.document_id, "<p>b</p>", note="n")
    assert result.response.version_number == 2 and result.headers == {}  # no API key: no write rate limit


def test_branding_is_pro_only_and_validated(owner, client):
    key = create_key(owner)
    page = owner.post("/dashboard/workspace/branding", {"brand_name": "Acme", "brand_tagline": "Docs"},
                      csrf=owner.token())
    assert page.status == 403 and "Custom branding is a Pro feature" in page.text
    set_plan(workspace_id_of(owner), "pro")
    page = owner.post("/dashboard/workspace/branding", {"brand_name": "A" * 81, "brand_tagline": ""},
                      csrf=owner.token())
    assert page.status == 422 and "at most 80" in page.text
    page = owner.post("/dashboard/workspace/branding", {"brand_name": "Acme Corp", "brand_tagline": "Docs that ship"},
                      csrf=owner.token())
    assert page.status == 303
    me = json.loads(rest(client, "get", "/api/v1/me", key).body)["workspace"]
    assert (me["brand_name"], me["brand_tagline"]) == ("Acme Corp", "Docs that ship")
    owner.post("/dashboard/workspace/branding", {"brand_name": "", "brand_tagline": ""}, csrf=owner.token())
    me = json.loads(rest(client, "get", "/api/v1/me", key).body)["workspace"]
    assert me["brand_name"] is None and me["brand_tagline"] is None


def test_workspace_page_shows_usage_against_every_entitlement(owner):
    create_key(owner)
    upload(owner, b"<p>1</p>", title="One")
    page = owner.get("/dashboard/workspace")
    for text in ("1 / 5", "1 / 1", "4.00 MiB", "60 publishes/edits per 60 s", "What Pro adds",
                 "Passphrase-protected links", "ask your administrator"):
        assert text in page.text, text
    set_plan(workspace_id_of(owner), "pro")
    page = owner.get("/dashboard/workspace")
    assert "1 / unlimited" in page.text and "What Pro adds" not in page.text


def test_workspace_page_shows_storage_with_pending_uploads(owner):
    """Issue 33: pending uploads' declared sizes count in the storage the quota sees."""
    from chalicelib import wiring
    from chalicelib.services.access import operator

    wiring.uploads().create(operator(workspace_id_of(owner)), "big.zip", 3 * 1024 * 1024)
    page = owner.get("/dashboard/workspace")
    assert "3.00 MiB / 100.00 MiB" in page.text
    assert "with 3.00 MiB held by pending uploads" in page.text


# ------------------------------------------------------------------ API keys

def test_keys_shown_once_capped_on_free_and_revocable(owner, client):
    page = owner.post("/dashboard/keys", {"name": "CI"}, csrf=owner.token())
    assert page.status == 201 and "shown only this once" in page.text
    key = KEY_SHAPE.search(page.text).group(0)
    assert 'data-copy="' + key in page.text
    assert rest(client, "get", "/api/v1/me", key).status_code == 200
    listing = owner.get("/dashboard/keys")
    assert key not in listing.text and key[:10] in listing.text and "CI" in listing.text
    second = owner.post("/dashboard/keys", {"name": "second"}, csrf=owner.token())
    assert second.status == 403 and "free plan allows 1 API key" in second.text
    assert KEY_SHAPE.search(second.text) is None
    key_id = re.search(r"/dashboard/keys/(key_[0-9a-f]+)/revoke", listing.text).group(1)
    page = owner.post(f"/dashboard/keys/{key_id}/revoke", {}, csrf=owner.token())
    assert page.status == 303
    assert rest(client, "get", "/api/v1/me", key).status_code == 401
    assert "revoked" in owner.get("/dashboard/keys").text
    # Pro: no cap.
    set_plan(workspace_id_of(owner), "pro")
    keys = [create_key(owner, f"k{i}") for i in range(3)]
    assert all(rest(client, "get", "/api/v1/me", k).status_code == 200 for k in keys)


def test_key_last_used_is_listed(owner, client):
    key = create_key(owner)
    assert "never" in owner.get("/dashboard/keys").text
    post_json(client, "/api/v1/publish", {"title": "T", "html": "<p>x</p>"}, key)
    assert "never" not in owner.get("/dashboard/keys").text.split("<tbody>")[1]


def test_dashboard_saves_share_the_write_limit(owner, monkeypatch):
    """No API key, same limit: uploads from a session cannot bypass it."""
    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "3")
    statuses = [upload(owner, f"<p>{i}</p>".encode(), title=f"d{i}").status for i in range(4)]
    assert statuses[:3] == [303, 303, 303]
    assert statuses[3] == 429


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_upload_takes_markdown_and_a_zip_shows_the_files_and_offers_the_download(owner, dash):
    import io
    import zipfile

    page = owner.post_multipart("/dashboard/upload", {"title": "", "note": ""},
                                {"file": ("notes.md", "# Team notes\n\n- [x] done".encode())}, csrf=owner.token())
    assert page.status == 303, page.text[:500]
    document_id = doc_id_from(page)
    detail = owner.get(f"/dashboard/documents/{document_id}")
    assert "Team notes" in detail  # the title came from the first heading
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("site/index.html", '<title>Site</title><img src="img/a.png">')
        z.writestr("site/img/a.png", b"\x89PNG")
    page = owner.post_multipart("/dashboard/upload", {"document_id": document_id, "title": "", "note": "zip"},
                                {"file": ("site.zip", archive.getvalue())}, csrf=owner.token())
    assert page.status == 303, page.text[:500]
    detail = owner.get(f"/dashboard/documents/{document_id}")
    assert "1 file beside the page" in detail and "<code>img/a.png</code>" in detail
    links = re.findall(r'href="([^"]*/download\?version_id=[^"]+)"', detail.text)
    assert len(links) == 2
    latest = owner.get(links[0].replace("&amp;", "&"), headers={"Accept": "*/*"})
    assert latest.status == 200 and latest.headers["Content-Disposition"] == 'attachment; filename="team-notes.zip"'
    first = owner.get(links[1].replace("&amp;", "&"), headers={"Accept": "*/*"})
    assert first.headers["Content-Disposition"].endswith('team-notes.md"')
    refused = owner.post_multipart("/dashboard/upload", {"title": "x"}, {"file": ("notes.txt", b"hi")},
                                   csrf=owner.token())
    assert refused.status == 422 and ".md" in refused
