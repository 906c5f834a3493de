"""Keys follow their creator (contract 4, "Bounds, second pass"; issue 33 finding 6).

An API key belongs to the member who created it and acts with at most that
member's current role: a demotion narrows it at once, a removal revokes it. Keys
made by the operator (`make admin`, the workspace's first key) belong to the
workspace and act as its owner. Through REST, MCP (the official client, in
process) and the dashboard."""
from __future__ import annotations

import contextlib
import json
import re

import anyio
import pytest

from chalicelib import wiring as registry
from tests.dashboard_client import DashboardClient
from tests.http.test_people import create_key, invite, rest, workspace_id

PUBLISH = {"title": "T", "html": "<p>t</p>"}


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply: these tests sign people up."""


@pytest.fixture
def team(client, app_clock):
    """An owner and an editor of one Pro workspace; the editor made a key on the dashboard."""
    owner = DashboardClient(client)
    owner.sign_up(email="owner@example.com", workspace="Acme")
    ws = workspace_id(owner)
    registry.workspaces().set_plan(ws, "pro")
    editor = DashboardClient(client)
    editor.sign_up(email="ed@example.com", workspace="Ed's own")  # so they can sign in again once removed
    invite(owner, "ed@example.com", "editor")
    joined = editor.follow_mail_link("ed@example.com", "invite")
    assert joined.status == 303 and "m=joined" in joined.location, joined.text
    return {"owner": owner, "editor": editor, "key": create_key(editor), "workspace_id": ws}


def set_role(owner: DashboardClient, email: str, role: str) -> None:
    page = owner.post("/dashboard/members/role", {"email": email, "role": role}, csrf=owner.token())
    assert page.status == 303, page.text


def remove(owner: DashboardClient, email: str):
    page = owner.post("/dashboard/members/remove", {"email": email}, csrf=owner.token())
    assert page.status == 303, page.text
    return page


def rejoin(client, owner: DashboardClient, email: str, role: str = "editor") -> DashboardClient:
    """Invited again, the person signs in and joins (a new membership)."""
    invite(owner, email, role)
    person = DashboardClient(client)
    signed_in = person.sign_in(email=email)
    assert signed_in.status == 303, signed_in.text
    joined = person.follow_mail_link(email, "invite")
    assert joined.status == 303 and "m=joined" in joined.location, (joined.location, joined.text)
    assert f'data-member="{email}"' in owner.get("/dashboard/members").text
    return person


def error(answer) -> dict:
    return json.loads(answer.body)["error"]


# ------------------------------------------------------------------ REST

def test_a_demoted_editors_key_reads_but_publishes_no_more(client, team):
    key = team["key"]
    assert rest(client, "post", "/api/v1/publish", key, PUBLISH).status_code == 200
    set_role(team["owner"], "ed@example.com", "viewer")
    refused = rest(client, "post", "/api/v1/publish", key, PUBLISH)
    assert refused.status_code == 403, refused.body  # was 200: the key still acted as an editor
    assert error(refused)["code"] == "forbidden_role" and error(refused)["details"] == {"role": "viewer"}
    assert "X-RateLimit-Limit" in refused.headers  # a publish answer, like every other
    listed = rest(client, "get", "/api/v1/documents", key)
    assert listed.status_code == 200 and len(json.loads(listed.body)["documents"]) == 1
    assert json.loads(rest(client, "get", "/api/v1/me", key).body)["key"]["role"] == "viewer"
    # Promoted again: the key follows the role it has now, both ways.
    set_role(team["owner"], "ed@example.com", "editor")
    assert rest(client, "post", "/api/v1/publish", key, PUBLISH).status_code == 200


def test_a_removed_members_key_is_revoked(client, team):
    key = team["key"]
    assert rest(client, "get", "/api/v1/me", key).status_code == 200
    remove(team["owner"], "ed@example.com")
    for method, path, body in (("get", "/api/v1/me", None), ("post", "/api/v1/publish", PUBLISH),
                               ("get", "/api/v1/documents", None)):
        answer = rest(client, method, path, key, body)
        assert answer.status_code == 401, (path, answer.body)  # was 200
        assert error(answer)["code"] == "invalid_api_key"
    # Invited and joined again: the old key stays revoked (it was made in the earlier membership).
    rejoin(client, team["owner"], "ed@example.com")
    assert rest(client, "get", "/api/v1/me", key).status_code == 401


def test_me_says_whose_key_it_is(client, team):
    me = json.loads(rest(client, "get", "/api/v1/me", team["key"]).body)
    key_id = me["key"]["key_id"]
    assert key_id.startswith("key_") and me["workspace"]["id"] == team["workspace_id"]
    assert me["key"] == {"key_id": key_id, "created_by": "ed@example.com", "role": "editor"}
    # The operator's key (make admin) belongs to the workspace and acts as its owner.
    operators = registry.workspaces().create_key(team["workspace_id"], "ops")
    me = json.loads(rest(client, "get", "/api/v1/me", operators.api_key).body)
    assert me["key"] == {"key_id": operators.key_id, "created_by": None, "role": "owner"}


def test_an_owners_key_acts_as_owner_and_follows_a_demotion(client, team):
    key = create_key(team["owner"])
    assert json.loads(rest(client, "get", "/api/v1/me", key).body)["key"]["role"] == "owner"
    set_role(team["owner"], "ed@example.com", "owner")  # a second owner, so the first may step down
    set_role(team["owner"], "owner@example.com", "viewer")
    assert json.loads(rest(client, "get", "/api/v1/me", key).body)["key"]["role"] == "viewer"
    assert rest(client, "post", "/api/v1/publish", key, PUBLISH).status_code == 403


# ------------------------------------------------------------------ MCP, through the official client

@contextlib.asynccontextmanager
async def mcp_client(client, key, answers=None):
    """The official MCP client, its HTTP answered by the app in process (`answers`
    collects each answer's status and error code)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def answer(request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        reply = await anyio.to_thread.run_sync(lambda: client.http.request(
            request.method, request.url.raw_path.decode(), headers=dict(request.headers), body=body))
        if answers is not None:
            code = json.loads(reply.body)["error"]["code"] if reply.status_code >= 400 else None
            answers.append((reply.status_code, code))
        return httpx2.Response(reply.status_code, headers=reply.headers, content=reply.body)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer), headers={"X-Api-Key": key}) as http:
        transport = streamable_http_client("http://docpub.test/mcp", http_client=http)
        async with Client(transport, mode="legacy", cache=None) as session:
            yield session


def test_mcp_key_follows_its_creators_role(client, team):
    key = team["key"]
    answers: list = []

    async def publish_then_me():
        async with mcp_client(client, key, answers) as session:
            published = await session.call_tool("publish_document", {"title": "T", "html": "<p>t</p>"})
            me = await session.call_tool("get_workspace_info", {})
            return published, me

    published, me = anyio.run(publish_then_me)
    assert not published.is_error and me.structured_content["key"]["role"] == "editor"
    set_role(team["owner"], "ed@example.com", "viewer")
    published, me = anyio.run(publish_then_me)
    assert published.is_error and published.content[0].text.startswith("forbidden_role"), published.content
    assert me.structured_content["key"] == {"key_id": me.structured_content["key"]["key_id"],
                                            "created_by": "ed@example.com", "role": "viewer"}
    remove(team["owner"], "ed@example.com")
    answers.clear()
    with pytest.raises(Exception):  # the client gets no session at all
        anyio.run(publish_then_me)
    assert answers[0] == (401, "invalid_api_key"), answers


# ------------------------------------------------------------------ dashboard

def test_keys_page_says_whose_key_and_removal_says_how_many_keys_go(client, team):
    owner = team["owner"]
    registry.workspaces().create_key(team["workspace_id"], "ops")  # a workspace key
    page = owner.get("/dashboard/keys")
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr[^>]*>\s*<td>([^<]+)</td>.*?</tr>', page.text, re.S)}
    assert "ed@example.com" in rows["ci"] and "Workspace" in rows["ops"], page.text
    members = owner.get("/dashboard/members").text
    form = re.search(r'<form[^>]*data-confirm="([^"]*)"[^>]*>\s*<input[^>]*>\s*'
                     r'<input type="hidden" name="email" value="ed@example.com">', members)
    assert form is not None and "1 API key" in form.group(1), members
    removed = remove(owner, "ed@example.com")
    after = owner.get(removed.location).text
    assert "1 API key revoked" in after, after
    page = owner.get("/dashboard/keys").text
    ci = re.search(r'<tr[^>]*>\s*<td>ci</td>.*?</tr>', page, re.S).group(0)
    assert "revoked" in ci and "ed@example.com" in ci


# ------------------------------------------------------------------ OAuth grants follow their approver too

def test_a_grant_of_an_earlier_membership_does_not_come_back(client, team, app_clock):
    """A grant already follows its approver's role (tests/http/test_people.py). If the
    removal's store step committed and the grants' revocation after it never ran, the
    approver joining again must not revive the grant (as for keys: the membership it
    was made in is gone)."""
    from tests.http.test_people import MemberFlow, tool

    tokens = MemberFlow(client, team["editor"]).tokens()
    assert tool(client, tokens["access_token"], "list_documents", {})[0] == 200
    registry.people().ctx.people.remove_member(team["workspace_id"], "ed@example.com", int(app_clock() * 1000))
    app_clock.advance(1)
    rejoin(client, team["owner"], "ed@example.com")
    status, answer = tool(client, tokens["access_token"], "list_documents", {})
    assert status == 401, answer  # was 200: the old grant acted again
