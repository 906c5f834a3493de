"""Issue 33 finding 4 on the surfaces: with the workspace's 10 waiting slots taken,
REST `wait=` answers 429 `rate_limited` with `Retry-After: 1`, and MCP
`wait_for_feedback` the same error as a tool error; a list without `wait` still answers."""
from __future__ import annotations

from contextlib import ExitStack

from chalicelib.domain import limits
from tests.helpers import auth
from tests.sharing_helpers import get_json


def _hold_every_slot(key: str) -> ExitStack:
    from chalicelib import wiring
    from chalicelib.services.auth import credentials_from_key
    from chalicelib.services.waits import wait_slot

    ctx = wiring.default_context()
    workspace_id = ctx.keys.get(credentials_from_key(key).key_id).workspace_id
    held = ExitStack()
    for _ in range(limits.WAITS_PER_WORKSPACE):
        held.enter_context(wait_slot(ctx, workspace_id))
    return held


def test_rest_and_mcp_waits_past_the_cap_are_429(client, key, app_clock):
    from tests.http.test_mcp import call as call_tool

    with _hold_every_slot(key):
        answer = client.http.get("/api/v1/feedback?wait=5", headers=auth(key))
        assert answer.status_code == 429, answer.body
        assert answer.headers["Retry-After"] == "1"
        body = answer.json_body
        assert body["error"]["code"] == "rate_limited"
        assert body["error"]["details"]["retry_after_seconds"] == 1
        tool = call_tool(client, key, "wait_for_feedback", {"timeout_seconds": 5})
        assert tool["isError"] is True and tool["content"][0]["text"].startswith("rate_limited:")
        status, listing = get_json(client, "/api/v1/feedback", key)  # no wait: no slot needed
        assert status == 200 and listing["feedback"] == []
        tool = call_tool(client, key, "wait_for_feedback", {"timeout_seconds": 0})
        assert not tool.get("isError")
    from chalicelib.wiring import default_context

    default_context().sleep = app_clock.advance
    try:
        answer = client.http.get("/api/v1/feedback?wait=2", headers=auth(key))
    finally:
        import time
        default_context().sleep = time.sleep
    assert answer.status_code == 200


def test_review_waits_share_the_same_cap(client, key, app_clock):
    """`GET …/reviews?wait=` and MCP `wait_for_review` (issue 34) wait in the same slots."""
    from tests.helpers import publish
    from tests.http.test_mcp import call as call_tool

    doc = publish(client, key)
    with _hold_every_slot(key):
        answer = client.http.get(f"/api/v1/documents/{doc['document_id']}/reviews?wait=5", headers=auth(key))
        assert answer.status_code == 429, answer.body
        assert answer.headers["Retry-After"] == "1" and answer.json_body["error"]["code"] == "rate_limited"
        tool = call_tool(client, key, "wait_for_review", {"document_id": doc["document_id"], "timeout_seconds": 5})
        assert tool["isError"] is True and tool["content"][0]["text"].startswith("rate_limited:")
        status, _ = get_json(client, f"/api/v1/documents/{doc['document_id']}/reviews", key)
        assert status == 200
