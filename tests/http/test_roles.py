"""Roles are checked once, in the service layer, for every surface (contract 7d).

Generated from what the app serves, so a new operation cannot skip the check:
- every REST route of the live route table (its example body from the OpenAPI
  operation table) and every MCP tool of the live tool table is called by a
  viewer: the role check runs on every one (a spy on `access.authorize` sees
  it), editor operations answer 403 `forbidden_role` and change nothing, and
  viewer operations work;
- every dashboard form (every POST route of the dashboard blueprint) posted by
  a signed-in viewer runs the role check too, unless it is one of the few
  forms about the person's own account (sign-in, password, joining, leaving).
- every tool is an operation of domain/roles.OPERATIONS (one table of roles).
"""
from __future__ import annotations

import asyncio
import inspect
import json
import re

import pytest

from app import app
from chalicelib import openapi
from chalicelib.domain import roles
from chalicelib.services import access
from tests.dashboard_client import DashboardClient, mail_link

# Dashboard forms a person uses on their own account, or before signing in: no role applies.
SELF_SERVICE_FORMS = {
    "/sign-in", "/sign-up", "/sign-out", "/account", "/verify", "/forgot", "/reset", "/login", "/join",
    "/join/sign-up", "/workspaces/switch",
    # Someone in no workspace joins from their own invitation or makes their own workspace (no role to check).
    "/welcome/join", "/welcome/workspace",
    # The OAuth consent answer: every member may approve (services/oauth.decide cuts the grant to
    # their role; tested in test_people.py); an invalid authorization request is refused first.
    "/oauth/authorize",
}
PUBLIC_REST = {("GET", "/api/v1/health"), ("GET", "/api/v1/openapi.json")}


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    pass


@pytest.fixture
def spy(monkeypatch):
    """The operations the role check was asked about."""
    seen: list[tuple[str, str]] = []
    real = access.authorize

    def recording(who, operation):
        seen.append((access.role_of(who), operation))
        return real(who, operation)

    monkeypatch.setattr(access, "authorize", recording)
    return seen


@pytest.fixture
def world(client, app_clock):
    from chalicelib import wiring as registry

    ws, key = registry.workspaces().create_workspace("Roles", "pro")
    published = registry.documents().publish(
        __import__("chalicelib.services.auth", fromlist=["x"]).credentials_from_key(key.api_key),
        __import__("chalicelib.models", fromlist=["x"]).PublishRequest(title="Doc", html="<p>x y</p>")).response
    share = published.share_url.rsplit("/", 1)[1]
    r = client.http.post(f"/d/{share}/feedback", headers={"Content-Type": "application/json"},
                         body=json.dumps({"message": "hi"}))
    feedback_id = json.loads(r.body)["feedback_id"]
    return {"workspace_id": ws.id, "key": key.api_key, "document_id": published.document_id,
            "feedback_id": feedback_id, "share_id": share}


def _path(template: str, world: dict) -> str:
    return re.sub(r"\{([^}]+)\}", lambda m: world.get(m.group(1), "unknown"), template)


def test_every_rest_route_runs_the_role_check_and_a_viewer_key_writes_nothing(client, world, spy, monkeypatch):
    monkeypatch.setattr(roles, "API_KEY_ROLE", "viewer")  # every key acts as a viewer for this test
    routes = openapi.rest_routes(app.routes)
    assert len(routes) >= 14
    checked = 0
    for method, template in routes:
        if (method, template) in PUBLIC_REST:
            continue
        operation = openapi.operation_for(method, template)
        assert operation is not None, f"{method} {template}: no OpenAPI operation"
        spy.clear()
        headers = {"X-Api-Key": world["key"]}
        body = None
        if operation.example is not None or method in ("POST", "PUT", "PATCH"):
            headers["Content-Type"] = "application/json"
            body = json.dumps(operation.example or {})
        answer = getattr(client.http, method.lower())(_path(template, world), headers=headers, body=body)
        assert spy, f"{method} {template} answered {answer.status_code} without the role check"
        needed = {op for _role, op in spy}
        viewer_may = all(roles.allows("viewer", op) for op in needed)
        if viewer_may:
            assert answer.status_code < 400 or json.loads(answer.body)["error"]["code"] != "forbidden_role"
        else:
            assert answer.status_code == 403, (method, template, answer.body)
            assert json.loads(answer.body)["error"] == {
                "code": "forbidden_role", "message": json.loads(answer.body)["error"]["message"],
                "details": {"role": "viewer"}}
        checked += 1
    assert checked >= 12
    # Nothing a viewer sent changed the document.
    from chalicelib import wiring as registry

    assert registry.documents().ctx.documents.get(world["document_id"]).version_count == 1


def _tool_arguments(fn, world) -> dict:
    from chalicelib.models import EditOperation

    pool = {"document_id": world["document_id"], "feedback_id": world["feedback_id"], "title": "T",
            "html": "<p>t</p>", "edits": [EditOperation(old_string="x", new_string="z")], "query": "Doc",
            "passphrase": "a long and unusual passphrase 42", "message": "a reply",
            "version_id": "v_unknown", "version_number": 1, "decision": "approved", "reviewers": ["someone@example.com"],
            "export_id": "exp_zzzzzzzzzzzzzzzz", "email": "someone@example.com"}
    arguments = {}
    for name, parameter in inspect.signature(fn).parameters.items():
        if parameter.default is inspect.Parameter.empty:
            assert name in pool, f"add a sample value for the tool argument {name!r} to this test"
            arguments[name] = pool[name]
    if "timeout_seconds" in inspect.signature(fn).parameters:
        arguments["timeout_seconds"] = 0  # a wait answers at once (the test's clock stands still)
    return arguments


def test_every_mcp_tool_is_an_operation_and_a_viewer_grant_writes_nothing(world, spy):
    from chalicelib.entrypoints.mcp_tools import TOOLS, acting_as
    from chalicelib.services.oauth import SCOPES, Principal

    assert set(TOOLS) <= set(roles.OPERATIONS), set(TOOLS) - set(roles.OPERATIONS)
    viewer = Principal(world["workspace_id"], "gr_test", "client", tuple(SCOPES), role="viewer",
                       user="viewer@example.com", client_name="Test app")
    for name, (fn, _title, _annotations, _description) in TOOLS.items():
        spy.clear()
        with acting_as(viewer):
            result = asyncio.run(fn(**_tool_arguments(fn, world)))
        assert spy, f"the tool {name} ran without the role check"
        # The service operation it checked needs the role the tool's own entry names.
        assert {roles.OPERATIONS[op] for _role, op in spy} == {roles.OPERATIONS[name]}, (name, spy)
        text = result.content[0].text if result.content else ""
        if roles.allows("viewer", name):
            assert not text.startswith("forbidden_role"), (name, text)
        else:
            assert result.is_error and text.startswith("forbidden_role"), (name, text)


def test_every_dashboard_form_runs_the_role_check(client, app_clock, spy):
    from chalicelib.entrypoints.dashboard import bp

    owner = DashboardClient(client)
    owner.sign_up(email="own@example.com", workspace="Forms")
    page = owner.post("/dashboard/members/invite", {"email": "view@example.com", "role": "viewer"},
                      csrf=owner.token())
    assert page.status == 303
    viewer = DashboardClient(client)
    link = mail_link("view@example.com", "invite")
    path = link[link.index("/dashboard/"):]
    form = viewer.get(path)
    viewer.post("/dashboard/join/sign-up", {"token": path.split("token=")[1], "password": "correct horse battery"},
                csrf=form.csrf())
    assert viewer.get("/dashboard/documents").status == 200
    routes = sorted(path for path, methods in _blueprint_routes(bp).items() if "POST" in methods)
    assert len(routes) >= 15
    checked = []
    for template in routes:
        if template in SELF_SERVICE_FORMS:
            continue
        spy.clear()
        target = "/dashboard" + re.sub(r"\{[^}]+\}", "00000000-0000-4000-8000-000000000000", template)
        # Every field any form reads, so each reaches its service call (multipart carries the file).
        answer = viewer.post_multipart(target, {"email": "own@example.com", "role": "viewer", "name": "k",
                                                "title": "T", "html": "<p>x</p>", "passphrase": "a long passphrase 42",
                                                "version": "1", "number": "1", "old": "1", "new": "1", "status": "resolved",
                                                "filename": "x.zip", "size_bytes": "10"},
                                       {"file": ("x.html", b"<p>x</p>")}, csrf=viewer.token())
        assert spy, f"POST {template} answered {answer.status} without the role check"
        checked.append(template)
    assert "/members/invite" in checked and "/keys" in checked and "/upload" in checked and "/uploads" in checked


def _blueprint_routes(bp) -> dict[str, set[str]]:
    """The dashboard's own routes (path -> methods), from the blueprint's deferred registrations."""
    registered: dict[str, set[str]] = {}
    for path, methods in _dashboard_paths():
        registered.setdefault(path, set()).update(methods)
    return registered


def _dashboard_paths():
    for path, entries in app.routes.items():
        if path.startswith("/dashboard"):
            real = {m for m, entry in entries.items() if entry.view_function.__module__.startswith(
                "chalicelib.entrypoints.dashboard")}
            yield path[len("/dashboard"):] or "/", real


def test_roles_table_is_what_the_contract_says():
    assert roles.ROLES == ("viewer", "editor", "owner")
    assert roles.API_KEY_ROLE == "owner"  # a workspace key; a member's key has its creator's role (access.key_role)
    assert roles.ROLE_SCOPES["viewer"] == ("docs:read", "feedback")
    for operation in ("invite_member", "set_member_role", "remove_member", "set_plan", "set_branding"):
        assert roles.OPERATIONS[operation] == "owner"
    for operation in ("publish_document", "edit_document", "delete_document", "create_key", "resolve_feedback",
                      "set_passphrase", "rotate_share_link"):
        assert roles.OPERATIONS[operation] == "editor"
    assert not roles.allows("viewer", "no_such_operation") and not roles.allows("owner", "no_such_operation")
