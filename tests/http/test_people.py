"""People (contract 7d) through the dashboard, REST and MCP, on the embedded store
(and the DynamoDB adapter where marked): accounts that recover, members and roles,
workspace-only links, the activity log. Mail goes to the outbox folder."""
from __future__ import annotations

import json
import re

import pytest

from tests.dashboard_client import DashboardClient, mail_link, outbox_messages

PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply: these tests sign many people up."""


@pytest.fixture
def owner(client, app_clock):
    dash = DashboardClient(client)
    dash.sign_up(email="owner@example.com", workspace="Acme")
    return dash


def workspace_id(dash) -> str:
    return re.search(r"<code>(ws_[^<]+)</code>", dash.get("/dashboard/workspace").text).group(1)


def create_key(dash) -> str:
    page = dash.post("/dashboard/keys", {"name": "ci"}, csrf=dash.token())
    assert page.status == 201, page.text
    return re.search(r"dpk_[A-Za-z0-9_-]{32,}", page.text).group(0)


def invite(owner, email, role) -> DashboardClient:
    page = owner.post("/dashboard/members/invite", {"email": email, "role": role}, csrf=owner.token())
    assert page.status == 303, page.text
    return page


def join_as_new(client, email) -> DashboardClient:
    """The invitee creates an account from the invitation link and joins."""
    person = DashboardClient(client)
    link = mail_link(email, "invite")
    path = link[link.index("/dashboard/"):]
    form = person.get(path)
    assert form.status == 200 and "Create account and join" in form.text
    page = person.post("/dashboard/join/sign-up", {"token": path.split("token=")[1], "password": PASSWORD},
                       csrf=form.csrf())
    assert page.status == 303 and "m=joined" in page.location, page.text
    return person


def rest(client, method, path, key, body=None):
    headers = {"X-Api-Key": key, "Content-Type": "application/json"}
    return getattr(client.http, method)(path, headers=headers, body=json.dumps(body) if body is not None else None)


# ------------------------------------------------------------------ sign-up and verification

def test_sign_up_answers_the_same_for_a_new_and_a_taken_email(client, app_clock):
    first = DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
        "email": "ada@example.com", "password": PASSWORD, "workspace_name": "A"})
    DashboardClient(client).follow_mail_link("ada@example.com", "verify")
    again = DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
        "email": "ADA@example.com", "password": "another good passphrase", "workspace_name": "B"})
    strip = lambda page: re.sub(r'value="[^"]+"', "", page.text)  # noqa: E731 - CSRF tokens differ
    assert first.status == again.status == 200 and strip(first) == strip(again)
    kinds = [(m["to"], m["kind"]) for m in outbox_messages()]
    assert kinds[0] == ("ada@example.com", "exists") and ("ada@example.com", "verify") in kinds
    # No second account, no second workspace, the first password still works.
    assert DashboardClient(client).sign_in(email="ada@example.com").status == 303
    assert DashboardClient(client).sign_in(email="ada@example.com", password="another good passphrase").status == 401


def test_an_unconfirmed_account_cannot_sign_in_and_gets_a_new_link(client, app_clock):
    DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
        "email": "bo@example.com", "password": PASSWORD, "workspace_name": "B"})
    page = DashboardClient(client).sign_in(email="bo@example.com")
    assert page.status == 401 and "Confirm your email address first" in page.text
    assert sum(m["kind"] == "verify" for m in outbox_messages()) == 2
    assert DashboardClient(client).follow_mail_link("bo@example.com", "verify").status == 303
    assert DashboardClient(client).sign_in(email="bo@example.com").status == 303


def test_verification_links_are_single_use_expire_and_cannot_be_forged(client, app_clock):
    DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
        "email": "cy@example.com", "password": PASSWORD, "workspace_name": "C"})
    link = mail_link("cy@example.com", "verify")
    token = link.split("token=")[1]
    forged = DashboardClient(client)
    page = forged.post("/dashboard/verify", {"token": token[:-2] + "xx"}, csrf=forged.get("/dashboard/verify").csrf())
    assert page.status == 422 and "not valid any more" in page.text and "docpub_session" not in forged.cookies
    app_clock.advance(24 * 3600 + 1)
    late = DashboardClient(client)
    page = late.post("/dashboard/verify", {"token": token}, csrf=late.get("/dashboard/verify").csrf())
    assert page.status == 422 and "docpub_session" not in late.cookies
    # Signing in sends a fresh link; it works once.
    DashboardClient(client).sign_in(email="cy@example.com")
    assert DashboardClient(client).follow_mail_link("cy@example.com", "verify").status == 303
    assert DashboardClient(client).follow_mail_link("cy@example.com", "verify").status == 422


def test_weak_passwords_are_refused_with_the_reason(client, app_clock):
    for weak in ("password123", "aaaaaaaaaa", "dana@example.com1"):
        page = DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
            "email": "dana@example.com", "password": weak, "workspace_name": "Dana"})
        assert page.status == 422 and "too easy to guess" in page.text, weak
    assert outbox_messages() == []


def test_a_failing_mail_service_answers_alike_and_signing_in_sends_a_new_link(client, app_clock, monkeypatch):
    """The confirmation is mailed after the answer (services/quiet_steps.py): a mail service that
    refuses cannot change the answer (it would differ from an existing address's). The account
    is made; signing in with its password mails a new link once mail works again."""
    from chalicelib.ports.mail import MailUndeliverable
    from chalicelib.wiring import default_context

    class Down:
        def send(self, message):
            raise MailUndeliverable("down")

    monkeypatch.setitem(default_context().__dict__, "mail", Down())
    page = DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
        "email": "eve@example.com", "password": PASSWORD, "workspace_name": "E"})
    assert page.status == 200 and "Check your email" in page.text
    assert outbox_messages() == []
    monkeypatch.undo()
    refused = DashboardClient(client).sign_in(email="eve@example.com", password=PASSWORD)
    assert refused.status == 401 and "Confirm your email address first" in refused.text
    DashboardClient(client).follow_mail_link("eve@example.com", "verify")
    assert DashboardClient(client).sign_in(email="eve@example.com", password=PASSWORD).status == 303


# ------------------------------------------------------------------ forgot and reset

def test_forgot_answers_the_same_and_reset_ends_every_other_session(owner, client, app_clock):
    known = DashboardClient(client).submit("/dashboard/forgot", "/dashboard/forgot", {"email": "owner@example.com"})
    unknown = DashboardClient(client).submit("/dashboard/forgot", "/dashboard/forgot",
                                             {"email": "nobody@example.com"})
    assert known.status == unknown.status == 200
    assert "If owner@example.com has a Docpub account" in known.text
    assert "If nobody@example.com has a Docpub account" in unknown.text
    assert [m["to"] for m in outbox_messages() if m["kind"] == "reset"] == ["owner@example.com"]
    other_browser = DashboardClient(client)
    other_browser.sign_in()
    link = mail_link("owner@example.com", "reset")
    path = link[link.index("/dashboard/"):]
    person = DashboardClient(client)
    form = person.get(path)
    token = path.split("token=")[1]
    weak = person.post("/dashboard/reset", {"token": token, "new_password": "password123",
                                            "confirm_password": "password123"}, csrf=form.csrf())
    assert weak.status == 422 and "too easy to guess" in weak.text  # the link is not used up by this
    page = person.post("/dashboard/reset", {"token": token, "new_password": "a brand new passphrase",
                                            "confirm_password": "a brand new passphrase"}, csrf=form.csrf())
    assert page.status == 303 and "password-reset" in page.location
    assert person.get("/dashboard/documents").status == 200
    assert owner.get("/dashboard/documents").status == 303  # ended
    assert other_browser.get("/dashboard/documents").status == 303  # ended
    again = person.post("/dashboard/reset", {"token": token, "new_password": "yet another passphrase",
                                             "confirm_password": "yet another passphrase"}, csrf=person.token())
    assert again.status == 422 and "not valid any more" in again.text
    assert DashboardClient(client).sign_in(password="a brand new passphrase").status == 303


def test_a_reset_link_expires_after_an_hour_and_dies_with_a_password_change(owner, client, app_clock):
    DashboardClient(client).submit("/dashboard/forgot", "/dashboard/forgot", {"email": "owner@example.com"})
    first = mail_link("owner@example.com", "reset").split("token=")[1]
    app_clock.advance(3601)
    person = DashboardClient(client)
    page = person.post("/dashboard/reset", {"token": first, "new_password": "a brand new passphrase",
                                            "confirm_password": "a brand new passphrase"},
                       csrf=person.get("/dashboard/forgot").csrf())
    assert page.status == 422
    DashboardClient(client).submit("/dashboard/forgot", "/dashboard/forgot", {"email": "owner@example.com"})
    second = mail_link("owner@example.com", "reset").split("token=")[1]
    changed = owner.post("/dashboard/account", {"current_password": PASSWORD, "new_password": "changed it myself",
                                                "confirm_password": "changed it myself"}, csrf=owner.token())
    assert changed.status == 303
    page = person.post("/dashboard/reset", {"token": second, "new_password": "a brand new passphrase",
                                            "confirm_password": "a brand new passphrase"},
                       csrf=person.get("/dashboard/forgot").csrf())
    assert page.status == 422
    assert DashboardClient(client).sign_in(password="changed it myself").status == 303


# ------------------------------------------------------------------ members and roles

def test_invite_join_role_limits_and_removal(owner, client, app_clock):
    ws = workspace_id(owner)
    invite(owner, "ed@example.com", "editor")
    invite(owner, "vi@example.com", "viewer")
    page = owner.post("/dashboard/members/invite", {"email": "owner@example.com", "role": "viewer"},
                      csrf=owner.token())
    assert page.status == 422 and "already a member" in page.text
    editor = join_as_new(client, "ed@example.com")
    viewer = join_as_new(client, "vi@example.com")
    members = owner.get("/dashboard/members").text
    assert "ed@example.com" in members and "vi@example.com" in members
    # The viewer reads but cannot write: forged POSTs are refused and change nothing.
    assert viewer.get("/dashboard/documents").status == 200
    forged = viewer.post_multipart("/dashboard/upload", {"title": "X"}, {"file": ("x.html", b"<p>x</p>")},
                                   csrf=viewer.token())
    assert forged.status == 403 and "viewer" in forged.text
    assert viewer.post("/dashboard/keys", {"name": "k"}, csrf=viewer.token()).status == 403
    # The editor writes documents and keys, but does not manage members or branding.
    assert editor.post_multipart("/dashboard/upload", {"title": "Ed's"}, {"file": ("e.html", b"<p>e</p>")},
                                 csrf=editor.token()).status == 303
    assert editor.post("/dashboard/members/invite", {"email": "x@example.com", "role": "owner"},
                       csrf=editor.token()).status == 403
    assert editor.post("/dashboard/workspace/branding", {"brand_name": "E"}, csrf=editor.token()).status == 403
    assert editor.post("/dashboard/members/role", {"email": "ed@example.com", "role": "owner"},
                       csrf=editor.token()).status == 403
    # The last owner stays.
    page = owner.post("/dashboard/members/role", {"email": "owner@example.com", "role": "editor"},
                      csrf=owner.token())
    assert page.status == 422 and "keeps at least one owner" in page.text
    page = owner.post("/dashboard/members/remove", {"email": "owner@example.com"}, csrf=owner.token())
    assert page.status == 422
    # Removal ends the editor's session in the workspace at once.
    assert owner.post("/dashboard/members/remove", {"email": "ed@example.com"}, csrf=owner.token()).status == 303
    assert editor.get("/dashboard/documents").status == 303
    from chalicelib import wiring as registry

    assert registry.people().ctx.people.get_member(ws, "ed@example.com") is None


def test_a_person_belongs_to_several_workspaces_and_switches(owner, client, app_clock):
    other = DashboardClient(client)
    other.sign_up(email="boss@example.com", workspace="Other Co")
    invite(other, "owner@example.com", "viewer")
    link = mail_link("owner@example.com", "invite")
    path = link[link.index("/dashboard/"):]
    form = owner.get(path)
    assert "Join Other Co" in form.text
    page = owner.post("/dashboard/join", {"token": path.split("token=")[1]}, csrf=form.csrf())
    assert page.status == 303
    documents = owner.get("/dashboard/documents").text
    assert "Other Co (viewer)" in documents and "Acme (owner)" in documents
    acme = re.search(r'<option value="(ws_[^"]+)"[^>]*>Acme', documents).group(1)
    assert owner.post("/dashboard/workspaces/switch", {"workspace_id": acme}, csrf=owner.token()).status == 303
    assert "Acme" in owner.get("/dashboard/workspace").text
    page = owner.post("/dashboard/workspaces/switch", {"workspace_id": "ws_notmine"}, csrf=owner.token())
    assert page.status == 404


def test_an_invitation_for_someone_else_or_used_twice_changes_nothing(owner, client, app_clock):
    invite(owner, "z@example.com", "editor")
    link = mail_link("z@example.com", "invite")
    path = link[link.index("/dashboard/"):]
    stranger = DashboardClient(client)
    stranger.sign_up(email="stranger@example.com", workspace="S")
    page = stranger.post("/dashboard/join", {"token": path.split("token=")[1]}, csrf=stranger.get(path).csrf())
    assert page.status == 422 and "for z@example.com" in page.text
    join_as_new(client, "z@example.com")
    late = DashboardClient(client)
    page = late.get(path)
    assert "Invitation not valid" in page.text


def test_api_keys_act_as_editors(owner, client, app_clock):
    key = create_key(owner)
    assert rest(client, "post", "/api/v1/publish", key, {"title": "T", "html": "<p>t</p>"}).status_code == 200
    listed = rest(client, "get", "/api/v1/activity", key)
    assert listed.status_code == 200
    entries = json.loads(listed.body)["activity"]
    assert entries[0]["action"] == "document.publish" and entries[0]["actor"]["kind"] == "api_key"
    assert entries[0]["surface"] == "api"
    assert any(e["action"] == "key.create" and e["actor"] == {"kind": "member", "id": "owner@example.com"}
               for e in entries)


def test_activity_keeps_ninety_days_and_pages(owner, client, app_clock):
    key = create_key(owner)
    for n in range(3):
        rest(client, "post", "/api/v1/publish", key, {"title": f"T{n}", "html": "<p>t</p>"})
    first = json.loads(rest(client, "get", "/api/v1/activity?limit=2", key).body)
    assert len(first["activity"]) == 2 and first["next_cursor"]
    second = json.loads(rest(client, "get", f"/api/v1/activity?limit=2&cursor={first['next_cursor']}", key).body)
    assert [e["detail"].get("title") for e in first["activity"] + second["activity"]][:3] == ["T2", "T1", "T0"]
    assert rest(client, "get", "/api/v1/activity?cursor=forged", key).status_code == 422
    app_clock.advance(91 * 86400)
    assert json.loads(rest(client, "get", "/api/v1/activity", key).body)["activity"] == []
    owner.sign_in()
    page = owner.get("/dashboard/activity")
    assert page.status == 200 and "Nothing yet" in page.text  # everything was over 90 days old


# ------------------------------------------------------------------ workspace-only links

def test_workspace_only_link_opens_for_members_and_asks_others_to_sign_in(owner, client, app_clock):
    key = create_key(owner)
    published = json.loads(rest(client, "post", "/api/v1/publish", key,
                                {"title": "Team", "html": "<p>team only</p>", "share_access": "workspace"}).body)
    share = published["share_url"].split("/d/")[1]
    doc = json.loads(rest(client, "get", f"/api/v1/documents/{published['document_id']}", key).body)
    assert doc["share_access"] == "workspace"
    outsider = DashboardClient(client)
    page = outsider.get(f"/d/{share}")
    assert page.status == 303 and page.location == f"/dashboard/open?share={share}"
    assert page.headers["Cache-Control"] == "private, no-store"
    page = outsider.get(page.location)
    assert page.status == 303 and page.location.startswith("/dashboard/sign-in?next=")
    # A signed-in stranger is told no; a member gets the document, never cacheable.
    outsider.sign_up(email="outsider@example.com", workspace="Elsewhere")
    assert outsider.get(f"/dashboard/open?share={share}").status == 404
    assert outsider.get(f"/d/{share}").status == 303
    opened = owner.get(f"/dashboard/open?share={share}")
    assert opened.status == 303 and opened.location == f"/d/{share}"
    assert any(c.startswith("dp_member=") and f"Path=/d/{share}" in c for c in opened.headers["Set-Cookie"])
    page = owner.get(f"/d/{share}")
    assert page.status == 200 and page.headers["Cache-Control"] == "private, no-store" and "Team" in page.text
    version = re.search(r"/v/(v_[A-Za-z0-9_-]+)", page.text).group(1)
    content = owner.get(f"/d/{share}/v/{version}")
    assert content.status == 200 and "team only" in content.text
    assert content.headers["Cache-Control"] == "private, no-store"
    assert outsider.get(f"/d/{share}/v/{version}").status == 401
    # Back to public: anyone opens it.
    rest(client, "patch", f"/api/v1/documents/{published['document_id']}", key, {"share_access": "public"})
    assert DashboardClient(client).get(f"/d/{share}").status == 200


def test_a_removed_members_pass_stops_working(owner, client, app_clock):
    key = create_key(owner)
    published = json.loads(rest(client, "post", "/api/v1/publish", key,
                                {"title": "Team", "html": "<p>x</p>", "share_access": "workspace"}).body)
    share = published["share_url"].split("/d/")[1]
    invite(owner, "m@example.com", "viewer")
    member = join_as_new(client, "m@example.com")
    member.get(f"/dashboard/open?share={share}")
    assert member.get(f"/d/{share}").status == 200
    owner.post("/dashboard/members/remove", {"email": "m@example.com"}, csrf=owner.token())
    assert member.get(f"/d/{share}").status == 303


def test_share_access_is_validated(owner, client, app_clock):
    key = create_key(owner)
    answer = rest(client, "post", "/api/v1/publish", key, {"title": "T", "html": "<p>t</p>", "share_access": "team"})
    assert answer.status_code == 422 and json.loads(answer.body)["error"]["code"] == "validation_error"


# ------------------------------------------------------------------ sign-in links (make run's owner)

def test_login_link_signs_in_once(storage, client, app_clock):
    from chalicelib import wiring as registry

    ws, _ = registry.workspaces().create_workspace("Dev", "free", workspace_id="ws_dev", with_key=False)
    registry.people().ensure_owner_account("ws_dev", "owner@dev.docpub.localhost")
    link = registry.accounts().login_link("ws_dev")
    path = link[link.index("/dashboard/"):]
    browser = DashboardClient(client)
    form = browser.get(path)
    assert form.status == 200 and "Sign in" in form.text
    page = browser.post("/dashboard/login", {"token": path.split("token=")[1]}, csrf=form.csrf())
    assert page.status == 303 and browser.get("/dashboard/members").status == 200
    again = DashboardClient(client)
    assert again.post("/dashboard/login", {"token": path.split("token=")[1]},
                      csrf=again.get(path).csrf()).status == 422


# ------------------------------------------------------------------ OAuth grants and roles

class MemberFlow:
    """The OAuth authorization code flow for an already signed-in member."""

    def __init__(self, client, dash):
        from tests.http import test_oauth

        self.flow = test_oauth.Flow.__new__(test_oauth.Flow)
        self.flow.client, self.flow.dash = client, dash
        r = test_oauth.register(client)
        self.flow.client_id = test_oauth.body(r)["client_id"]
        self.flow.scope = "docs:read docs:write feedback"

    def tokens(self) -> dict:
        return self.flow.tokens()


def tool(client, token, name, arguments):
    from tests.http import test_oauth

    answer = test_oauth.mcp(client, token, "tools/call", {"name": name, "arguments": arguments})
    result = json.loads(answer.body)
    return answer.status_code, result


def test_an_oauth_grant_never_exceeds_its_approvers_role(owner, client, app_clock):
    invite(owner, "ed@example.com", "editor")
    invite(owner, "vi@example.com", "viewer")
    editor = join_as_new(client, "ed@example.com")
    viewer = join_as_new(client, "vi@example.com")
    viewer_tokens = MemberFlow(client, viewer).tokens()
    assert viewer_tokens["scope"] == "docs:read feedback"
    _, result = tool(client, viewer_tokens["access_token"], "list_documents", {})
    assert not result["result"].get("isError")
    editor_tokens = MemberFlow(client, editor).tokens()
    assert editor_tokens["scope"] == "docs:read docs:write feedback"
    _, result = tool(client, editor_tokens["access_token"], "publish_document", {"title": "By app", "html": "<p>a</p>"})
    assert not result["result"].get("isError"), result
    # Demoted: the same grant loses docs:write at once.
    owner.post("/dashboard/members/role", {"email": "ed@example.com", "role": "viewer"}, csrf=owner.token())
    _, result = tool(client, editor_tokens["access_token"], "publish_document", {"title": "No", "html": "<p>n</p>"})
    assert result["result"]["isError"] and result["result"]["content"][0]["text"].startswith("insufficient_scope")
    # Removed: every grant they approved for the workspace is revoked.
    owner.post("/dashboard/members/remove", {"email": "ed@example.com"}, csrf=owner.token())
    status, _ = tool(client, editor_tokens["access_token"], "list_documents", {})
    assert status == 401
    entries = json.loads(rest(client, "get", "/api/v1/activity", create_key(owner)).body)["activity"]
    app_entry = next(e for e in entries if e["action"] == "document.publish")
    assert app_entry["actor"]["kind"] == "oauth_client" and app_entry["surface"] == "mcp"
