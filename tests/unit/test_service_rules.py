"""One access rule, one limits table, one rate limiter (issue #14, part C)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.helpers import FakeClock

PROJECT_DIR = Path(__file__).resolve().parents[2]
SERVICES_DIR = PROJECT_DIR / "chalicelib" / "services"


# ------------------------------------------------------------------ one access rule

@pytest.fixture
def owned(services, workspace):
    from chalicelib.models import PublishRequest

    ws, key = workspace
    from chalicelib.services.auth import credentials_from_key

    who = credentials_from_key(key)
    doc = services.documents.publish(who, PublishRequest(title="Doc", html="<p>hi</p>")).response
    return who, doc.document_id


def test_feedback_list_finds_a_document_by_its_uppercase_id(ctx, owned):
    """documents.get finds an uppercase id; feedback.list (service call, as the dashboard
    makes it) used to skip the lowercasing and answer 404."""
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.feedback import FeedbackService

    who, document_id = owned
    upper = document_id.upper()
    assert DocumentService(ctx).get(who, upper).document_id == document_id
    assert FeedbackService(ctx).list(who, document_id=upper).feedback == []


def test_every_service_answers_the_same_not_found(ctx, owned, services):
    """Malformed, unknown and other-workspace ids: one error, same wording, on every service."""
    from chalicelib.errors import NotFound
    from chalicelib.models import UpdateDocumentRequest
    from chalicelib.services.auth import credentials_from_key
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.services.sharing import ShareService

    who, document_id = owned
    _, other_key = services.workspaces.create_workspace("Other", "pro")
    other = credentials_from_key(other_key.api_key)
    unknown = "00000000-0000-4000-8000-000000000000"
    calls = {
        "get": lambda w, d: DocumentService(ctx).get(w, d),
        "update": lambda w, d: DocumentService(ctx).update(w, d, UpdateDocumentRequest(title="x")),
        "feedback": lambda w, d: FeedbackService(ctx).list(w, document_id=d),
        "passphrase": lambda w, d: ShareService(ctx).set_passphrase(w, d, "a long passphrase"),
        "clear": lambda w, d: ShareService(ctx).clear_passphrase(w, d),
    }
    for name, call in calls.items():
        for caller, doc_id, shown in ((who, unknown, unknown), (who, "nope", "with that id"),
                                      (other, document_id.upper(), document_id)):
            with pytest.raises(NotFound) as caught:
                call(caller, doc_id)
            assert caught.value.message == f"No document {shown} in this workspace.", (name, doc_id)


def test_feedback_and_sharing_stand_below_the_documents_service():
    """No import circle anywhere in chalicelib/ (tests/unit/test_layers.py walks the graph);
    feedback and sharing import neither DocumentService nor any of its parts."""
    from tests.unit.test_layers import import_graph

    graph = import_graph()
    document_parts = {m for m in graph if m in ("chalicelib.services.documents", "chalicelib.services.publishing")
                      or m.startswith("chalicelib.services.document_")}
    assert len(document_parts) == 8, document_parts  # DocumentService and its parts (services/documents.py)
    assert not document_parts & graph["chalicelib.services.feedback"]
    assert not document_parts & graph["chalicelib.services.sharing"]


def test_no_service_reaches_into_another_services_private_methods():
    """A service's private methods (`_load`, `_visible`, ...) are called on `self` only."""
    trees = {path.name: ast.parse(path.read_text()) for path in SERVICES_DIR.glob("*.py")}
    private = {node.name for tree in trees.values() for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
               for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and node.name.startswith("_") and not node.name.startswith("__")}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private:
                owner = node.value
                assert isinstance(owner, ast.Name) and owner.id in ("self", "cls"), \
                    f"{name}:{node.lineno} calls another object's private {node.attr}"


def test_deleting_a_document_deletes_its_feedback_without_importing_feedback(ctx, owned):
    """The feedback goes by a direct call in the delete, not a hook that only exists
    once chalicelib.services.feedback happens to be imported."""
    import chalicelib.services.documents as documents

    assert not hasattr(documents, "DELETE_HOOKS")
    who, document_id = owned
    from chalicelib.ports.records import Feedback

    item = Feedback(feedback_id="fb_direct0000", document_id=document_id, workspace_id=ctx.documents.get(
        document_id).workspace_id, version_id="v_x", version_number=1, message="m", name=None, quote=None,
        status="open", created_ms=ctx.now_ms())
    ctx.feedback.create(item, None)
    documents.DocumentService(ctx).delete(who, document_id)
    assert ctx.feedback.get("fb_direct0000") is None


# ------------------------------------------------------------------ one limits table

def _mcp_tools(client, key):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    r = client.http.post("/mcp", body=json.dumps(body), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "X-Api-Key": key, "MCP-Protocol-Version": "2025-11-25"})
    assert r.status_code == 200, r.body
    return {t["name"]: t["description"] for t in json.loads(r.body)["result"]["tools"]}


def _mcp_instructions(client, key):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = client.http.post("/mcp", body=json.dumps(body), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-Api-Key": key})
    assert r.status_code == 200, r.body
    return json.loads(r.body)["result"]["instructions"]


def test_write_rate_limit_setting_changes_the_mcp_texts_too(client, workspace, monkeypatch):
    """DOCPUB_WRITE_RATE_LIMIT used to change /me but not what MCP tells a model."""
    _, key = workspace
    before = _mcp_tools(client, key)
    assert "60 writes per minute per API key" in before["publish_document"]
    assert "60 writes per minute per API key" in _mcp_instructions(client, key)
    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "7")
    monkeypatch.setenv("DOCPUB_WRITE_RATE_WINDOW", "3600")
    r = client.http.get("/api/v1/me", headers={"X-Api-Key": key})
    assert json.loads(r.body)["workspace"]["entitlements"]["write_rate_limit"] == {"limit": 7, "window_seconds": 3600}
    after = _mcp_tools(client, key)
    for name in ("publish_document", "edit_document"):
        assert "7 writes per hour per API key" in after[name], after[name]
        assert "60 writes" not in after[name]
    instructions = _mcp_instructions(client, key)
    assert "7 writes per hour per API key" in instructions and "60 writes" not in instructions


def test_stdio_proxy_instructions_come_from_the_table(monkeypatch):
    from chalicelib import mcp_instructions

    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "9")
    assert "9 writes per minute per API key" in mcp_instructions.instructions()


def test_limits_table_wording(monkeypatch):
    from chalicelib.domain import limits

    assert limits.per_window(60) == "per minute" and limits.per_window(3600) == "per hour"
    assert limits.per_window(600) == "per 10 minutes" and limits.per_window(45) == "per 45 seconds"
    assert limits.write_rate_text() == "60 writes per minute per API key"
    assert limits.free_plan_text() == "5 documents, 1 API key"
    assert limits.html_size_text() == "4 MiB (4,194,304 bytes of UTF-8)"
    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "1")
    assert limits.write_rate_text() == "1 write per minute per API key"


def test_dashboard_texts_come_from_the_table(client, monkeypatch):
    from chalicelib.domain import limits

    page = client.http.get("/dashboard/sign-up")
    assert page.status_code == 200
    assert f"Free plan: {limits.free_plan_text()}." in page.body.decode()
    monkeypatch.setattr(limits, "FREE_MAX_DOCUMENTS", 3)
    assert "Free plan: 3 documents, 1 API key." in client.http.get("/dashboard/sign-up").body.decode()


# ------------------------------------------------------------------ one rate limiter

def test_one_decision_function_for_every_scope():
    """Write limit, unlock, feedback and sign-in all decide with domain.ratelimit.decide."""
    for name in ("documents.py", "sharing.py", "feedback.py", "accounts.py", "ratelimits.py"):
        source = (SERVICES_DIR / name).read_text()
        assert "take_slot(" not in source or name == "documents.py", name
    helper = (SERVICES_DIR / "ratelimits.py").read_text()
    assert "decide(" in helper or "take_slot(" in helper


def test_standalone_limiter_counts_refuses_and_frees(ctx, clock: FakeClock):
    from chalicelib.domain.limits import Rate
    from chalicelib.errors import RateLimited
    from chalicelib.services import ratelimits

    rule = Rate(3, 60)
    for _ in range(3):
        ratelimits.hit(ctx, "test#a", rule, "Too many tries")
        clock.advance(1)
    with pytest.raises(RateLimited) as caught:
        ratelimits.hit(ctx, "test#a", rule, "Too many tries")
    assert caught.value.retry_after_seconds == 57
    assert caught.value.message == "Too many tries; try again in 57 seconds."
    ratelimits.hit(ctx, "test#b", rule, "Too many tries")  # another scope has its own log
    clock.advance(57)
    ratelimits.hit(ctx, "test#a", rule, "Too many tries")


def test_write_refusal_states_the_configured_limit(services, workspace, monkeypatch):
    from chalicelib.errors import RateLimited
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "2")
    monkeypatch.setenv("DOCPUB_WRITE_RATE_WINDOW", "3600")
    who = credentials_from_key(workspace[1])
    for i in range(2):
        services.documents.publish(who, PublishRequest(title=f"d{i}", html="<p>x</p>"))
    with pytest.raises(RateLimited) as caught:
        services.documents.publish(who, PublishRequest(title="d3", html="<p>x</p>"))
    assert caught.value.message == ("Write rate limit of 2 writes per hour per API key reached; "
                                    "try again in 60 minutes.")
    assert caught.value.headers["X-RateLimit-Remaining"] == "0"
    assert caught.value.headers["Retry-After"] == "3600"
