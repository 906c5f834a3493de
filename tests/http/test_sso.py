"""Single sign-on through a real OpenID provider (contract 7f): the certified
`oidc-provider` package on Node (tests/oidc.py), its own login form and keys. The
dashboard runs in chalice's test client; the person's trip to the provider goes over
HTTP. The ID token rules one by one (bad signature, audience, exp, nonce) are in
tests/unit/test_sso_id_tokens.py."""
from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.dashboard_client import DashboardClient
from tests.helpers import FakeClock
from tests.oidc import Provider, sign_in_at_provider

BASE = "http://127.0.0.1:8000"
REDIRECT = BASE + "/dashboard/sso/callback"


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    running = Provider(REDIRECT, tmp_path_factory.mktemp("oidc"))
    yield running
    running.stop()


@pytest.fixture
def app(client, storage, provider, monkeypatch, fast_argon2):
    """The app with this provider configured, on a clock at the real time (the provider's
    tokens carry real `iat` and `exp`)."""
    from chalicelib.wiring import default_context

    monkeypatch.setenv("DOCPUB_BASE_URL", BASE)
    for name, value in provider.env().items():
        monkeypatch.setenv(name, value)
    clock = FakeClock(time.time())
    default_context().clock = clock
    return client


def sso(dash: DashboardClient, login: str, next_path: str = ""):
    """Sign in with SSO as `login`: the button, the provider's login form, the callback."""
    start = dash.get("/dashboard/sso/start" + (f"?next={next_path}" if next_path else ""))
    assert start.status == 303, start.text
    back = sign_in_at_provider(start.location, login, REDIRECT)
    return dash.get(back[len(BASE):])


def session_of(dash: DashboardClient):
    from chalicelib import wiring

    return wiring.accounts().session(dash.cookies.get("docpub_session"))


def test_sign_in_with_the_provider_makes_the_account(app, provider):
    dash = DashboardClient(app)
    page = dash.get("/dashboard/sign-in")
    assert '>Sign in with Example ID</a>' in page.text
    start = dash.get("/dashboard/sso/start")
    query = parse_qs(urlsplit(start.location).query)
    assert start.location.startswith(provider.issuer + "/auth?")
    assert query["response_type"] == ["code"] and query["client_id"] == [provider.client_id]
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
    assert query["redirect_uri"] == [REDIRECT] and query["state"] and query["nonce"]
    assert "openid" in query["scope"][0].split()
    done = dash.get(sign_in_at_provider(start.location, "ada", REDIRECT)[len(BASE):])
    assert done.status == 303 and done.location == "/dashboard/documents", done.text
    session = session_of(dash)
    assert session.email == "ada@example.com" and session.sso_domain == "@example.com"
    assert session.role == "owner"  # a new account, in a workspace of its own
    assert "ada@example.com" in dash.get("/dashboard/account").text
    assert "docpub_sso" not in dash.cookies  # spent


def test_a_password_account_with_that_email_is_the_same_account(app):
    owner = DashboardClient(app)
    owner.sign_up("owner@example.com", workspace="Acme")
    workspace = session_of(owner).workspace_id
    other_browser = DashboardClient(app)
    assert sso(other_browser, "owner", "/dashboard/keys").location == "/dashboard/keys"
    session = session_of(other_browser)
    assert (session.email, session.workspace_id, session.role) == ("owner@example.com", workspace, "owner")
    assert session_of(owner).sso_domain is None  # the password session did not change
    # The password still works: SSO added a way in, it took none away.
    assert DashboardClient(app).sign_in("owner@example.com").status == 303


def test_an_unverified_email_signs_no_one_in(app):
    from chalicelib import wiring

    dash = DashboardClient(app)
    page = sso(dash, "eve")
    assert page.status == 401 and "has not verified this email address" in page.text
    assert "docpub_session" not in dash.cookies
    assert wiring.default_context().users.get("eve@example.com") is None


def test_a_callback_is_taken_once_and_only_in_its_browser(app):
    dash = DashboardClient(app)
    start = dash.get("/dashboard/sso/start")
    kept = dict(dash.cookies)
    back = sign_in_at_provider(start.location, "ada", REDIRECT)[len(BASE):]
    # Another browser (no SSO cookie, or another sign-in's) cannot use it: login CSRF.
    stranger = DashboardClient(app)
    stranger.get("/dashboard/sso/start")
    refused = stranger.get(back)
    assert refused.status == 401 and "not started in this browser" in refused.text
    assert "docpub_session" not in stranger.cookies
    assert dash.get(back).status == 303  # its own browser signs in
    # Replayed with the cookie put back: the state is spent.
    replay = DashboardClient(app)
    replay.cookies.update(kept)
    again = replay.get(back)
    assert again.status == 401 and "already used" in again.text
    assert "docpub_session" not in replay.cookies


def _auto_join(dash: DashboardClient, domain: str, role: str = "editor"):
    return dash.post("/dashboard/workspace/sso", {"domain": domain, "role": role},
                     csrf=dash.get("/dashboard/workspace").csrf())


def test_people_of_the_domain_join_with_the_role_the_owner_set(app):
    from chalicelib import wiring

    owner = DashboardClient(app)
    owner.sign_up("owner@example.com", workspace="Acme")
    workspace = session_of(owner).workspace_id
    # From the password session: 403, whatever the domain.
    refused = _auto_join(owner, "@example.com")
    assert refused.status == 403 and "signed in through single sign-on" in refused.text
    sso(owner, "owner")
    page = owner.get("/dashboard/workspace")
    assert "You signed in with Example ID as an address at <code>@example.com</code>" in page.text
    assert _auto_join(owner, "@example.org").status == 403  # not the domain the provider vouched for
    bad = _auto_join(owner, "example.com")
    assert bad.status == 422 and "sso_auto_join.domain" in bad.text
    assert _auto_join(owner, "@example.com", "owner").status == 422
    saved = _auto_join(owner, "@EXAMPLE.com", "editor")
    assert saved.status == 303 and saved.location == "/dashboard/workspace?m=sso-saved"
    assert "people at <code>@example.com</code> join as <strong>editor</strong>" in owner.get("/dashboard/workspace").text
    assert wiring.sso().auto_join(workspace) == {"domain": "@example.com", "role": "editor"}

    bob = DashboardClient(app)
    assert sso(bob, "bob").status == 303
    joined = session_of(bob)
    assert (joined.email, joined.workspace_id, joined.role) == ("bob@example.com", workspace, "editor")
    logged = owner.get("/dashboard/activity").text  # the join is in the workspace's activity
    assert "bob@example.com" in logged and "member.join" in logged
    # An editor may not change the setting (owners only).
    assert _auto_join(bob, "@example.com", "viewer").status == 403
    # Someone of another domain does not join.
    cy = DashboardClient(app)
    sso(cy, "cy")
    assert session_of(cy).workspace_id != workspace
    assert wiring.default_context().people.get_member(workspace, "cy@example.org") is None
    # Any owner may turn it off.
    off = owner.post("/dashboard/workspace/sso", {"remove": "1"}, csrf=owner.get("/dashboard/workspace").csrf())
    assert off.status == 303 and wiring.sso().auto_join(workspace) is None


def test_a_member_an_owner_removed_is_not_joined_again_until_invited(app):
    """QA (contract 7f): auto-join added a removed member back at their next sign-in.
    The removal leaves a mark; auto-join skips that workspace; an invitation accepted clears it."""
    from chalicelib import wiring

    owner = DashboardClient(app)
    owner.sign_up("owner@example.com", workspace="Acme")
    workspace = session_of(owner).workspace_id
    sso(owner, "owner")
    assert _auto_join(owner, "@example.com", "editor").status == 303
    bob = DashboardClient(app)
    assert sso(bob, "bob").status == 303
    assert session_of(bob).workspace_id == workspace  # auto-join added him

    removed = owner.post("/dashboard/members/remove", {"email": "bob@example.com"},
                         csrf=owner.get("/dashboard/members").csrf())
    assert removed.status == 303 and "m=removed" in removed.location
    people = wiring.default_context().people
    assert people.get_member(workspace, "bob@example.com") is None

    again = DashboardClient(app)
    back = sso(again, "bob")  # he signs in as before ...
    assert back.status == 303, back.text
    assert people.get_member(workspace, "bob@example.com") is None  # ... but the removal stuck
    assert again.get(back.location).location == "/dashboard/welcome"  # in no workspace: as today
    mark = people.get_removal(workspace, "bob@example.com")
    assert mark is not None and mark.removed_by == "owner@example.com"
    assert session_of(again).workspace_id != workspace

    # The owner's deliberate act wins: an invitation, accepted, adds him and clears the mark.
    invited = owner.post("/dashboard/members/invite", {"email": "bob@example.com", "role": "viewer"},
                         csrf=owner.get("/dashboard/members").csrf())
    assert invited.status == 303, invited.text
    [pending] = wiring.people().pending_for("bob@example.com")
    joined = again.post("/dashboard/welcome/join", {"invite_id": pending["invite_id"]},
                        csrf=again.get("/dashboard/welcome").csrf())
    assert joined.status == 303, joined.text
    assert people.get_member(workspace, "bob@example.com").role == "viewer"
    assert people.get_removal(workspace, "bob@example.com") is None
    later = DashboardClient(app)
    assert sso(later, "bob").status == 303
    assert (session_of(later).workspace_id, session_of(later).role) == (workspace, "viewer")  # keeps his role


def test_without_settings_there_is_no_sso(client, storage, monkeypatch):
    for name in ("DOCPUB_OIDC_ISSUER", "DOCPUB_OIDC_CLIENT_ID", "DOCPUB_OIDC_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    dash = DashboardClient(client)
    assert "Sign in with" not in dash.get("/dashboard/sign-in").text
    assert dash.get("/dashboard/sso/start").status == 404
    assert dash.get("/dashboard/sso/callback?state=x&code=y").status == 404
    assert re.search(r"Single sign-on", dash.get("/dashboard/sign-in").text) is None
