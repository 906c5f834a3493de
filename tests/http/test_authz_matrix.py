"""Authorization matrix: every API route × every kind of credential → the contract's answer.

Built from the live route table (app.routes) and the OpenAPI operation table, so
a route merged later is covered as soon as it exists: its example body comes
from chalicelib/openapi.py, its path parameters from the resources made below.

| credential            | answer                                                        |
|-----------------------|---------------------------------------------------------------|
| none                  | 401 unauthorized + WWW-Authenticate                           |
| malformed key         | 401 invalid_api_key + WWW-Authenticate                        |
| revoked key           | 401 invalid_api_key + WWW-Authenticate                        |
| other workspace's key | 404 not_found on routes naming a resource; else 2xx, own data |
| the right key         | the operation's success status                                |

Routes without authentication (health, the OpenAPI document) answer 2xx to all.
"""
from __future__ import annotations

import json
import re

import pytest

from app import app
from chalicelib import openapi
from chalicelib.models import ErrorBody

CREDENTIALS = ("none", "malformed", "revoked", "other_workspace", "right")
RESOURCE_PARAMS = {"document_id", "feedback_id", "webhook_id", "export_id"}

MCP_PATH = "/mcp"
MCP_LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def matrix_routes() -> list[tuple[str, str]]:
    routes = openapi.rest_routes(app.routes)
    if MCP_PATH in app.routes and "POST" in app.routes[MCP_PATH]:
        routes.append(("POST", MCP_PATH))  # same API key rules as REST (contract section 7)
    return routes


class World:
    """Two workspaces, their keys, and one of each resource in workspace A."""

    def __init__(self, services, client):
        ws_a, key_a = services.workspaces.create_workspace("A", "pro")
        self.workspace_a = ws_a.id
        self.key = key_a.api_key
        spare = services.workspaces.create_key(ws_a.id, "to revoke")
        services.workspaces.revoke_key(spare.key_id)
        self.revoked = spare.api_key
        _, key_b = services.workspaces.create_workspace("B", "free")
        self.other = key_b.api_key
        r = self.call(client, "POST", "/api/v1/publish", self.key,
                      openapi.operation_for("POST", "/api/v1/publish").example)
        assert r.status_code == 200, r.body
        published = json.loads(r.body)
        self.document_id = published["document_id"]
        self.share_id = published["share_url"].rsplit("/", 1)[1]
        self.old_version_id = published["version_id"]  # an old version once the next one exists
        again = self.call(client, "POST", "/api/v1/publish", self.key,
                          {**openapi.operation_for("POST", "/api/v1/publish").example,
                           "document_id": self.document_id})
        assert again.status_code == 200, again.body
        # revokeRecipient revokes an address the link names (one it never named is 404); the
        # link stays public.
        listed = self.call(client, "PATCH", f"/api/v1/documents/{self.document_id}", self.key,
                           {"share_recipients": ["someone@example.com"]})
        assert listed.status_code == 200, listed.body
        self.feedback_id = self._feedback(client)
        self.webhook_id = self._webhook(client)
        self._members(services)
        self.export_id = self._export(services)

    def _export(self, services):
        """A finished export of workspace A (built here: a running one would make the start a 429)."""
        from chalicelib import wiring
        from chalicelib.services.auth import credentials_from_key
        from chalicelib.services.exports import ExportService

        ctx = wiring.new_context(run_export=lambda export_id: None)  # the app's clock: it answers for an hour
        exports = ExportService(ctx)
        export_id = exports.start(credentials_from_key(self.key)).export_id
        assert exports.build(export_id).status == "ready"
        return export_id

    def _members(self, services):
        """The people the review request's example names are members of workspace A."""
        from chalicelib.ports.records import Member, User

        op = openapi.operation_for("POST", "/api/v1/documents/{document_id}/review-requests")
        ctx = services.documents.ctx
        for email in (op.example or {}).get("reviewers", []) if op is not None else []:
            ctx.users.create(User(email=email, password_hash="x", workspace_id=self.workspace_a, created_ms=1))
            ctx.people.add_member(Member(workspace_id=self.workspace_a, email=email, role="viewer", created_ms=1))

    def _webhook(self, client):
        op = openapi.operation_for("POST", "/api/v1/webhooks")
        if op is None or "/api/v1/webhooks" not in app.routes:
            return "no-webhook-route"
        r = self.call(client, "POST", "/api/v1/webhooks", self.key, op.example)
        assert r.status_code == 201, r.body
        return json.loads(r.body)["webhook_id"]

    def _feedback(self, client):
        route = next((p for p in app.routes if re.fullmatch(r"/d/\{[^}]+\}/feedback", p)), None)
        if route is None or "POST" not in app.routes[route]:
            return "no-feedback-route"
        r = client.http.post(route.replace(route.split("/")[2], self.share_id),
                             headers={"Content-Type": "application/json"},
                             body=json.dumps({"message": "Looks good", "anchor": {"quote": "Draft"},
                                              "suggestion": {"replacement": "Final"}}))
        assert r.status_code == 201, r.body
        return json.loads(r.body)["feedback_id"]

    def headers(self, credential: str) -> dict:
        return {"none": {}, "malformed": {"X-Api-Key": "not-a-docpub-key"},
                "revoked": {"X-Api-Key": self.revoked}, "other_workspace": {"X-Api-Key": self.other},
                "right": {"X-Api-Key": self.key}}[credential]

    def path(self, template: str) -> str:
        values = {"document_id": self.document_id, "feedback_id": self.feedback_id,
                  "webhook_id": getattr(self, "webhook_id", "unknown"),
                  "version_id": self.old_version_id, "version_number": "2", "email": "someone@example.com",
                  "export_id": getattr(self, "export_id", "unknown")}
        return re.sub(r"\{([^}]+)\}", lambda m: values.get(m.group(1), "unknown"), template)

    @staticmethod
    def call(client, method, path, key=None, body=None, headers=None):
        h = dict(headers or {})
        if key:
            h["X-Api-Key"] = key
        if body is not None:
            h["Content-Type"] = "application/json"
        return client.http.request(method, path, headers=h, body=json.dumps(body) if body is not None else b"")


@pytest.fixture
def world(services, client):
    return World(services, client)


def _request(world, client, method, template, credential):
    headers = world.headers(credential)
    if template == MCP_PATH:
        headers["Accept"] = "application/json, text/event-stream"
        return World.call(client, method, template, body=MCP_LIST_TOOLS, headers=headers)
    op = openapi.operation_for(method, template)
    return World.call(client, method, world.path(template), body=op.example, headers=headers)


def _expect_error(r, status, code):
    assert r.status_code == status, r.body
    assert ErrorBody.model_validate_json(r.body).error.code == code
    if status == 401:
        assert r.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("credential", CREDENTIALS)
@pytest.mark.parametrize("method,template", matrix_routes(), ids=[f"{m} {p}" for m, p in matrix_routes()])
def test_route_answers_each_credential_as_the_contract_says(world, client, method, template, credential):
    op = openapi.operation_for(method, template)
    needs_key = op.auth if op is not None else True
    success = op.status if op is not None else 200
    names_resource = bool(RESOURCE_PARAMS & set(re.findall(r"\{([^}]+)\}", template)))
    r = _request(world, client, method, template, credential)

    if not needs_key or credential == "right":
        assert r.status_code == success, r.body
    elif credential == "none":
        _expect_error(r, 401, "unauthorized")
    elif credential in ("malformed", "revoked"):
        _expect_error(r, 401, "invalid_api_key")
    elif names_resource:
        _expect_error(r, 404, "not_found")
    else:
        assert 200 <= r.status_code < 300, r.body
        assert world.document_id not in r.body.decode(), "another workspace's data leaked"

    if needs_key and credential != "right":
        # Whatever was refused changed nothing in workspace A.
        got = World.call(client, "GET", f"/api/v1/documents/{world.document_id}", world.key)
        assert got.status_code == 200, got.body
        doc = json.loads(got.body)
        assert (doc["title"], doc["version_count"]) == ("Release notes", 2)  # the world has two versions


def test_the_matrix_covers_every_rest_route():
    covered = set(matrix_routes())
    assert set(openapi.rest_routes(app.routes)) <= covered
    assert len(covered) >= 8


def test_publishing_into_another_workspaces_document_is_404(world, client):
    body = {"title": "Hijack", "html": "<p>x</p>", "document_id": world.document_id}
    _expect_error(World.call(client, "POST", "/api/v1/publish", world.other, body), 404, "not_found")


def test_bearer_equals_x_api_key_and_a_mismatch_is_refused(world, client):
    r = World.call(client, "GET", "/api/v1/me", headers={"Authorization": f"Bearer {world.key}"})
    assert r.status_code == 200
    r = World.call(client, "GET", "/api/v1/me", headers={"Authorization": f"Bearer {world.key}",
                                                         "X-Api-Key": world.other})
    _expect_error(r, 401, "invalid_api_key")
    r = World.call(client, "GET", "/api/v1/me", headers={"Authorization": f"Basic {world.key}"})
    _expect_error(r, 401, "invalid_api_key")
