"""An MCP app's authorization request started by a person in no workspace (removed from
their only one): it waits through sign-in and the welcome page, and after they join or
create a workspace there they land on the consent screen of the same request."""
from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.dashboard_client import DashboardClient
from tests.http.test_oauth import BASE, REDIRECT, RESOURCE, body, pkce, register
from tests.http.test_people import PASSWORD, invite, join_as_new


@pytest.fixture(autouse=True)
def one_base_url(fast_argon2, monkeypatch):
    monkeypatch.setenv("DOCPUB_BASE_URL", BASE)


def _query(location: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(location).query).items()}


def _hidden(page_text: str, action: str) -> dict[str, str]:
    """The hidden fields of the page's form posting to `action`."""
    form = re.search(r'<form method="post" action="' + re.escape(action) + r'">(.*?)</form>', page_text, re.S)
    assert form, f"no form posting to {action}"
    return {html.unescape(n): html.unescape(v)
            for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(1))}


def _removed_people(client):
    """Ed and Vi joined Acme from invitations (no workspace of their own); Acme removed them;
    Other Co invited Ed since. Returns the Acme owner's client."""
    acme = DashboardClient(client)
    acme.sign_up(email="owner@example.com", workspace="Acme")
    for email in ("ed@example.com", "vi@example.com"):
        invite(acme, email, "editor")
        join_as_new(client, email)
        assert acme.post("/dashboard/members/remove", {"email": email}, csrf=acme.token()).status == 303
    other = DashboardClient(client)
    other.sign_up(email="boss@example.com", workspace="Other Co")
    invite(other, "ed@example.com", "viewer")
    return acme


def _authorization(client, challenge: str) -> dict[str, str]:
    r = register(client, client_name="Notes Agent")
    assert r.status_code == 201, r.body
    return {"response_type": "code", "client_id": body(r)["client_id"], "redirect_uri": REDIRECT,
            "code_challenge": challenge, "code_challenge_method": "S256", "state": "st-welcome",
            "resource": RESOURCE, "scope": "docs:read docs:write feedback"}


def _start(client, person: DashboardClient, params: dict[str, str], email: str):
    """The app sends the browser to /oauth/authorize; the person signs in. The page they land on."""
    r = client.http.get("/oauth/authorize?" + urlencode(params))
    assert r.status_code == 302, r.body
    consent = r.headers["Location"][len(BASE):]
    to_sign_in = person.get(consent)
    assert to_sign_in.status == 303 and to_sign_in.location.startswith("/dashboard/sign-in?next="), to_sign_in.text
    form = person.get(to_sign_in.location)
    next_path = _hidden(form.text, "/dashboard/sign-in")["next"]
    signed = person.post("/dashboard/sign-in", {"email": email, "password": PASSWORD, "next": next_path},
                         csrf=form.csrf())
    assert signed.status == 303 and signed.location == consent, signed.location
    return person.get(signed.location)


def _approve(client, person: DashboardClient, location: str, params: dict[str, str], verifier: str) -> dict:
    """On the consent screen at `location`: check it is the same request, allow, exchange the code."""
    assert location.startswith("/dashboard/oauth/authorize?"), location
    assert _query(location) == params  # same client, redirect_uri, state, code_challenge, scopes
    consent = person.get(location)
    assert consent.status == 200 and "Connect <span id=\"client-name\">Notes Agent</span>" in consent.text, \
        consent.text
    carried = _hidden(consent.text, "/dashboard/oauth/authorize")
    assert {k: v for k, v in carried.items() if k != "csrf_token"} == params
    answer = person.post("/dashboard/oauth/authorize", {**carried, "decision": "allow"})
    assert answer.status == 303 and answer.location.startswith(REDIRECT + "?"), answer.text
    got = _query(answer.location)
    assert got["state"] == "st-welcome" and got["iss"] == BASE
    r = client.http.post("/oauth/token", headers={"Content-Type": "application/x-www-form-urlencoded"},
                         body=urlencode({"grant_type": "authorization_code", "code": got["code"],
                                         "redirect_uri": REDIRECT, "client_id": params["client_id"],
                                         "code_verifier": verifier, "resource": RESOURCE}))
    assert r.status_code == 200, r.body
    return body(r)


def test_an_authorization_waits_for_a_person_in_no_workspace_to_join_one(client, app_clock):
    """Reproduction: Ed (removed from his only workspace) connects an MCP app. After signing
    in he was sent to /dashboard/welcome with nothing of the app's request: joining Other Co
    from there landed on the document list, and the app waited for an answer that never came."""
    _removed_people(client)
    verifier, challenge = pkce()
    params = _authorization(client, challenge)
    ed = DashboardClient(client)
    welcome = _start(client, ed, params, "ed@example.com")
    assert welcome.status == 303 and welcome.location.startswith("/dashboard/welcome?"), welcome.location
    assert _query(welcome.location) == params
    page = ed.get(welcome.location)
    assert page.status == 200 and "Join Other Co" in page.text
    assert "Notes Agent" in page.text and "127.0.0.1:9999" in page.text  # what waits, and where it goes back
    carried = _hidden(page.text, "/dashboard/welcome/join")
    assert {k: v for k, v in carried.items() if k not in ("csrf_token", "invite_id")} == params
    joined = ed.post("/dashboard/welcome/join", carried)
    assert joined.status == 303, joined.text
    tokens = _approve(client, ed, joined.location, params, verifier)
    assert tokens["scope"] == "docs:read feedback"  # a viewer's grant, in Other Co


def test_an_authorization_waits_for_a_person_in_no_workspace_to_create_one(client, app_clock):
    _removed_people(client)
    verifier, challenge = pkce()
    params = _authorization(client, challenge)
    vi = DashboardClient(client)
    welcome = _start(client, vi, params, "vi@example.com")
    page = vi.get(welcome.location)
    assert "No invitation is waiting for vi@example.com" in page.text and "Notes Agent" in page.text
    carried = _hidden(page.text, "/dashboard/welcome/workspace")
    refused = vi.post("/dashboard/welcome/workspace", {**carried, "workspace_name": " "})
    assert refused.status == 422  # the page shown again still carries the request
    assert _hidden(refused.text, "/dashboard/welcome/workspace") == {**carried, "csrf_token": refused.csrf()}
    made = vi.post("/dashboard/welcome/workspace", {**carried, "workspace_name": "Vi Co"})
    assert made.status == 303, made.text
    tokens = _approve(client, vi, made.location, params, verifier)
    assert tokens["scope"] == "docs:read docs:write feedback"  # she owns Vi Co


def test_a_request_carried_through_the_welcome_page_is_never_altered_or_redirected_elsewhere(client,
                                                                                            app_clock):
    """The welcome page's hidden fields are the browser's to change: a changed request is
    checked again like any other, and a person is never sent anywhere but the consent screen."""
    _removed_people(client)
    _verifier, challenge = pkce()
    params = _authorization(client, challenge)
    vi = DashboardClient(client)
    assert vi.sign_in(email="vi@example.com", password=PASSWORD).status == 303
    # An Allow posted without a workspace grants nothing: the request waits on the welcome page.
    posted = vi.post("/dashboard/oauth/authorize", {**params, "decision": "allow"}, csrf=vi.token())
    assert posted.status == 303 and posted.location.startswith("/dashboard/welcome?"), posted.location
    assert _query(posted.location) == params
    # A crafted welcome link: an unregistered redirect URI is refused, in words, with no form fields.
    forged = {**params, "redirect_uri": "https://evil.example/cb"}
    page = vi.get("/dashboard/welcome?" + urlencode(forged))
    assert page.status == 200 and "could not be continued" in page.text
    assert "evil.example" not in page.text and "redirect_uri" not in _hidden(page.text, "/dashboard/welcome/workspace")
    # Posted anyway: the workspace is made, the person stays on Docpub and is told why.
    made = vi.post("/dashboard/welcome/workspace", {**forged, "workspace_name": "Vi Co"}, csrf=page.csrf())
    assert made.status == 303 and made.location == "/dashboard/documents?m=authorization-stale", made.location
    assert "authorization request could not be continued: connect again" in vi.get(made.location).text
    # In a workspace now, the welcome page goes on to the consent screen; other fields ride along nowhere.
    onward = vi.get("/dashboard/welcome?" + urlencode({**params, "next": "https://evil.example/"}))
    assert onward.status == 303 and onward.location.startswith("/dashboard/oauth/authorize?"), onward.location
    assert _query(onward.location) == params
