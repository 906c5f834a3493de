"""MCP against the real local stack: the official Python client over Streamable HTTP
and over stdio (the proxy), the Node inspector CLI, and parity with REST."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

pytestmark = pytest.mark.e2e

PROJECT_DIR = Path(__file__).resolve().parents[2]
from tests.http.test_mcp import TOOL_NAMES  # noqa: E402  (one list of the tools the server must offer)
UNKNOWN_ID = "7d3c1a52-0b8e-4f4e-9a3c-2b1f0c9d8e7a"
INSPECTOR = "@modelcontextprotocol/inspector@0.21.1"  # the newest release that runs on Node 20


@pytest.fixture(scope="module")
def key(stack):
    """A Pro workspace of its own (the dev workspace is free and shared with other tests)."""
    created = stack.admin("create-workspace", "--name", "MCP e2e", "--plan", "pro")
    return created["api_key"]


@contextlib.asynccontextmanager
async def http_client(stack, key, mode="auto"):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"X-Api-Key": key}, timeout=60) as http:
        transport = streamable_http_client(stack.base_url + "/mcp", http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:
            yield client


def stdio_params(stack, key):
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "chalicelib.mcp_stdio"], cwd=str(PROJECT_DIR),
        env={"DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": key, "PYTHONPATH": str(PROJECT_DIR)})


def text(result) -> str:
    return result.content[0].text


def post_feedback(stack, share_url: str, message: str) -> str:
    r = httpx.post(share_url + "/feedback", json={"message": message}, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["feedback_id"]


# ------------------------------------------------------------------ official client over HTTP

@pytest.mark.parametrize("mode, version", [("legacy", "2025-11-25"), ("auto", "2026-07-28"),
                                           ("2026-07-28", "2026-07-28")])
def test_official_client_lists_every_tool(stack, key, mode, version):
    async def main():
        async with http_client(stack, key, mode) as client:
            assert client.protocol_version == version
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == TOOL_NAMES
            assert all(t.output_schema and t.annotations and t.description for t in tools)
            info = await client.call_tool("get_workspace_info", {})
            assert info.structured_content["workspace"]["plan"] == "pro"

    anyio.run(main)


def test_protocol_2025_06_18_over_http(stack, key):
    headers = {"X-Api-Key": key, "Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    with httpx.Client(base_url=stack.base_url, headers=headers, timeout=30) as http:
        r = http.post("/mcp", json=init)
        assert r.status_code == 200, r.text
        assert r.json()["result"]["protocolVersion"] == "2025-06-18"
        assert http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         headers={"MCP-Protocol-Version": "2025-06-18"}).status_code == 202
        r = http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                    "params": {"name": "list_documents", "arguments": {"limit": 1}}},
                      headers={"MCP-Protocol-Version": "2025-06-18"})
        assert r.status_code == 200, r.text
        assert set(r.json()["result"]["structuredContent"]) == {"documents", "next_cursor"}


def test_every_tool_succeeds_and_fails_with_a_coded_error(stack, key):
    async def main():
        async with http_client(stack, key) as client:
            async def ok(name, args):
                result = await client.call_tool(name, args)
                assert result.is_error is False, (name, text(result))
                return result.structured_content

            async def fails(name, args, code):
                result = await client.call_tool(name, args)
                assert result.is_error is True, name
                assert text(result).startswith(code + ": "), (name, text(result))

            doc = await ok("publish_document", {"title": "MCP e2e plan", "html": "<h1>Plan</h1><p>draft</p>",
                                                "description": "quarterly"})
            await fails("publish_document", {"title": "", "html": "<p>x</p>"}, "validation_error")
            doc_id = doc["document_id"]
            edited = await ok("edit_document", {"document_id": doc_id, "note": "final",
                                                "edits": [{"old_string": "draft", "new_string": "final"}]})
            assert edited["version_number"] == 2
            await fails("edit_document", {"document_id": doc_id, "edits": [{"old_string": "Draft",
                                                                            "new_string": "x"}]},
                        "edit_not_found")
            got = await ok("get_document", {"document_id": doc_id, "include_html": True})
            assert got["html"] == "<h1>Plan</h1><p>final</p>" and len(got["versions"]) == 2
            listed_versions = await ok("list_versions", {"document_id": doc_id})
            assert [v["number"] for v in listed_versions["versions"]] == [2, 1]
            await fails("delete_version", {"document_id": doc_id, "version_id": edited["version_id"]},
                        "version_conflict")  # the latest stays
            first = doc["version_id"]
            assert await ok("delete_version", {"document_id": doc_id, "version_id": first}) == \
                {"document_id": doc_id, "version_id": first, "deleted": True}
            await fails("delete_version", {"document_id": doc_id, "version_id": first}, "not_found")
            assert [v["number"] for v in (await ok("list_versions", {"document_id": doc_id}))["versions"]] == [2]
            await fails("get_document", {"document_id": UNKNOWN_ID}, "not_found")
            updated = await ok("update_document", {"document_id": doc_id, "title": "MCP e2e plan v2"})
            assert updated["title"] == "MCP e2e plan v2"
            await fails("update_document", {"document_id": doc_id}, "validation_error")
            listed = await ok("list_documents", {"limit": 100})
            assert doc_id in [d["document_id"] for d in listed["documents"]]
            await fails("list_documents", {"cursor": "not-a-cursor"}, "validation_error")
            found = await ok("find_document", {"query": "e2e PLAN v2"})
            assert found["documents"][0]["document_id"] == doc_id
            assert doc_id in [d["document_id"] for d in (await ok("find_document", {"query": ""}))["documents"]]
            assert (await ok("get_workspace_info", {}))["workspace"]["plan"] == "pro"
            await fails("get_workspace_info", {"workspace": "other"}, "validation_error")
            await fails("list_feedback", {"status": "closed"}, "validation_error")
            deleted = await ok("delete_document", {"document_id": doc_id})
            assert deleted == {"document_id": doc_id, "deleted": True}
            await fails("delete_document", {"document_id": doc_id}, "not_found")
            assert httpx.get(doc["share_url"], timeout=30).status_code == 404

    anyio.run(main)


def test_official_client_gets_an_actionable_secret_detected_error(stack, key):
    """Issue 36: the tool error names the secret's kind, place and redacted preview, and what to
    do; nothing is stored; allow_secrets publishes it with the findings as warnings."""
    leak = "ghp_" + "Zq8Rk2Lm9Xw4Tn6Vb1Hc7Jd3Fs5Gp0Ya8Ue2"  # a GitHub token's shape, made up

    async def main():
        async with http_client(stack, key) as client:
            before = (await client.call_tool("get_workspace_info", {})).structured_content["workspace"]["usage"]
            result = await client.call_tool("publish_document", {
                "title": "CI log", "format": "markdown", "html": f"# CI\n\nexport GH_TOKEN={leak}\n"})
            assert result.is_error is True
            assert text(result).startswith(
                "secret_detected: The content holds a GitHub personal access token on line 3, column 17 "
                f"({leak[:4]}…{leak[-4:]}); remove it and publish again, or pass allow_secrets: true"), text(result)
            assert leak not in text(result)
            after = (await client.call_tool("get_workspace_info", {})).structured_content["workspace"]["usage"]
            assert after == before
            allowed = await client.call_tool("publish_document", {
                "title": "CI log", "format": "markdown", "html": f"# CI\n\nexport GH_TOKEN={leak}\n",
                "allow_secrets": True})
            assert allowed.is_error is False
            assert allowed.structured_content["warnings"][0]["rule"] == "github-pat"
            await client.call_tool("delete_document", {"document_id": allowed.structured_content["document_id"]})

    anyio.run(main)


def test_missing_or_invalid_key_over_http(stack):
    r = httpx.post(stack.base_url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Accept": "application/json, text/event-stream"}, timeout=30)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"
    assert "Bearer" in r.headers["WWW-Authenticate"]
    r = httpx.get(stack.base_url + "/mcp", timeout=30)
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_large_non_ascii_document_round_trips_under_the_payload_limit(stack, key):
    html = "<p>" + "日本語の文書" * (4 * 1024 * 1024 // 18 - 2) + "</p>"
    assert 4 * 1024 * 1024 - 100 < len(html.encode()) <= 4 * 1024 * 1024

    async def main():
        async with http_client(stack, key) as client:
            published = await client.call_tool("publish_document", {"title": "big", "html": html})
            assert published.is_error is False, text(published)
            doc_id = published.structured_content["document_id"]
            got = await client.call_tool("get_document", {"document_id": doc_id, "include_html": True})
            assert got.structured_content["html"] == html
            return doc_id

    doc_id = anyio.run(main)
    # On the wire the answer (HTML twice: text block and structuredContent) goes out gzip,
    # far below Lambda's 6 MB response limit.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_document", "arguments": {"document_id": doc_id, "include_html": True}}}
    r = httpx.post(stack.base_url + "/mcp", json=body, timeout=60,
                   headers={"X-Api-Key": key, "Accept": "application/json", "Accept-Encoding": "gzip",
                            "MCP-Protocol-Version": "2025-11-25"})
    assert r.status_code == 200
    assert r.headers["Content-Encoding"] == "gzip"
    assert r.num_bytes_downloaded < 1_000_000
    assert r.json()["result"]["structuredContent"]["html"] == html
    stack.client(key).delete(f"/api/v1/documents/{doc_id}")


# ------------------------------------------------------------------ stdio

def test_official_client_over_stdio(stack, key):
    from mcp import Client

    async def main():
        async with Client(stdio_params(stack, key), mode="legacy") as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOL_NAMES
            published = await client.call_tool("publish_document", {"title": "Over stdio", "html": "<p>s</p>"})
            assert published.is_error is False, text(published)
            doc_id = published.structured_content["document_id"]
            got = await client.call_tool("get_document", {"document_id": doc_id, "include_html": True})
            assert got.structured_content["html"] == "<p>s</p>"
            edit = await client.call_tool("edit_document", {"document_id": doc_id, "edits": [
                {"old_string": "<p>", "new_string": "<p>"}]})
            assert edit.is_error and text(edit).startswith("no_change: ")
            assert (await client.call_tool("delete_document", {"document_id": doc_id})).is_error is False
        async with Client(stdio_params(stack, "dpk_" + "z" * 43)) as client:
            refused = await client.call_tool("get_workspace_info", {})
            assert refused.is_error and text(refused).startswith("invalid_api_key: ")

    anyio.run(main)


def test_stdio_module_delegates_to_the_client_package_help():
    """`python -m chalicelib.mcp_stdio` still works: it runs the client package's docpub-mcp."""
    out = subprocess.run([sys.executable, "-m", "chalicelib.mcp_stdio", "--help"], cwd=PROJECT_DIR,
                         capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if not k.startswith("DOCPUB_")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: docpub-mcp") and "DOCPUB_URL" in out.stdout


# ------------------------------------------------------------------ a third-party client

def _inspector(stack, key, *args: str) -> dict:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed")
    cache = PROJECT_DIR / ".pytest_cache" / "npm"
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "npm_config_cache": str(cache), "npm_config_update_notifier": "false",
           "npm_config_fund": "false", "npm_config_audit": "false"}
    command = [npx, "-y", INSPECTOR, "--cli", stack.base_url + "/mcp", "--transport", "http",
               "--header", f"X-Api-Key: {key}", *args]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    except subprocess.TimeoutExpired:
        pytest.skip("the MCP inspector could not be installed in time")
    if out.returncode != 0 and ("npm ERR" in out.stderr or "npm error" in out.stderr):
        pytest.skip(f"the MCP inspector could not be installed: {out.stderr[-300:]}")
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_inspector_cli_lists_and_calls(stack, key):
    listed = _inspector(stack, key, "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == TOOL_NAMES
    called = _inspector(stack, key, "--method", "tools/call", "--tool-name", "find_document",
                        "--tool-arg", "query=nothing-has-this-title")
    assert called["isError"] is False
    assert called["structuredContent"] == {"documents": [], "next_cursor": None}


# ------------------------------------------------------------------ parity with REST

def test_structured_results_equal_rest_answers(stack, key):
    rest = stack.client(key)

    def rest_json(method, path, **kw):
        r = rest.request(method, path, **kw)
        return r.status_code, (r.json() if r.content else None)

    async def main():
        async with http_client(stack, key) as client:
            async def mcp(name, args):
                result = await client.call_tool(name, args)
                if result.is_error:
                    return text(result).split(":", 1)[0]
                return result.structured_content

            # publish: same input → same shape and numbering
            a = await mcp("publish_document", {"title": "Parity", "html": "<p>one two</p>", "note": "n"})
            _, b = rest_json("POST", "/api/v1/publish", json={"title": "Parity", "html": "<p>one two</p>",
                                                               "note": "n"})
            assert set(a) == set(b) and a["version_number"] == b["version_number"] == 1
            # edit: the same batch on two identical documents → equal summaries
            edit = {"edits": [{"old_string": "one", "new_string": "uno"}], "note": "e"}
            ea = await mcp("edit_document", {"document_id": a["document_id"], **edit})
            _, eb = rest_json("POST", f"/api/v1/documents/{b['document_id']}/edit", json=edit)
            assert set(ea) == set(eb) and ea["summary"] == eb["summary"]
            assert ea["version_number"] == eb["version_number"] == 2
            # reads: identical answers for the same document
            for params in ({}, {"include_html": True}, {"version_id": ea["version_id"]}):
                query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
                assert await mcp("get_document", {"document_id": a["document_id"], **params}) == \
                    rest_json("GET", f"/api/v1/documents/{a['document_id']}", params=query)[1]
            assert await mcp("list_documents", {"limit": 2}) == \
                rest_json("GET", "/api/v1/documents", params={"limit": 2})[1]
            assert await mcp("find_document", {"query": "parity", "limit": 1}) == \
                rest_json("GET", "/api/v1/documents", params={"query": "parity", "limit": 1})[1]
            assert await mcp("get_workspace_info", {}) == rest_json("GET", "/api/v1/me")[1]
            # update: the MCP answer is what REST then reads
            updated = await mcp("update_document", {"document_id": a["document_id"], "description": "d"})
            assert updated == rest_json("GET", f"/api/v1/documents/{a['document_id']}")[1]
            # errors: the same code for the same bad input
            assert await mcp("get_document", {"document_id": UNKNOWN_ID}) == \
                rest_json("GET", f"/api/v1/documents/{UNKNOWN_ID}")[1]["error"]["code"] == "not_found"
            assert await mcp("edit_document", {"document_id": a["document_id"], "edits": [
                {"old_string": "zzz", "new_string": "y"}]}) == rest_json(
                "POST", f"/api/v1/documents/{a['document_id']}/edit",
                json={"edits": [{"old_string": "zzz", "new_string": "y"}]})[1]["error"]["code"]
            # delete: MCP answers {document_id, deleted}; REST 204; both leave a 404
            assert await mcp("delete_document", {"document_id": a["document_id"]}) == \
                {"document_id": a["document_id"], "deleted": True}
            assert rest_json("DELETE", f"/api/v1/documents/{b['document_id']}") == (204, None)
            for doc in (a, b):
                assert rest_json("GET", f"/api/v1/documents/{doc['document_id']}")[0] == 404

    anyio.run(main)


# ------------------------------------------------------------------ feedback (needs the feedback service)

def test_feedback_tools_over_http_match_rest(stack, key):
    pytest.importorskip("chalicelib.services.feedback")
    rest = stack.client(key)

    async def main():
        async with http_client(stack, key) as client:
            published = await client.call_tool("publish_document", {"title": "Feedback", "html": "<p>f</p>"})
            doc = published.structured_content
            feedback_id = post_feedback(stack, doc["share_url"], "Typo in the title")
            listed = await client.call_tool("list_feedback", {"document_id": doc["document_id"]})
            assert listed.is_error is False, text(listed)
            assert [f["feedback_id"] for f in listed.structured_content["feedback"]] == [feedback_id]
            assert listed.structured_content == rest.get(
                "/api/v1/feedback", params={"document_id": doc["document_id"]}).json()
            resolved = await client.call_tool("resolve_feedback", {"feedback_id": feedback_id})
            assert resolved.structured_content["status"] == "resolved"
            again = rest.post(f"/api/v1/feedback/{feedback_id}/resolve", json={"resolved": True}).json()
            assert resolved.structured_content == again
            reopened = await client.call_tool("resolve_feedback", {"feedback_id": feedback_id, "resolved": False})
            assert reopened.structured_content["status"] == "open"
            missing = await client.call_tool("resolve_feedback", {"feedback_id": "fb_unknown"})
            assert missing.is_error and text(missing).startswith("not_found: ")
            bad = await client.call_tool("list_feedback", {"status": "closed"})
            assert bad.is_error and text(bad).startswith("validation_error: status")
            await client.call_tool("delete_document", {"document_id": doc["document_id"]})

    anyio.run(main)


# ------------------------------------------------------------------ link lifecycle

def test_link_tools_over_http_disable_expire_and_rotate(stack, key):
    """The official client withdraws and replaces a link; the real stack's share pages follow."""
    async def main():
        async with http_client(stack, key) as client:
            doc = (await client.call_tool("publish_document", {"title": "Leaky", "html": "<p>l</p>"})
                   ).structured_content
            old = doc["share_url"]
            assert httpx.get(old, timeout=30).status_code == 200
            off = await client.call_tool("update_document", {"document_id": doc["document_id"],
                                                             "share_enabled": False})
            assert off.structured_content["share_enabled"] is False
            assert httpx.get(old, timeout=30).status_code == 404
            on = await client.call_tool("update_document", {"document_id": doc["document_id"], "share_enabled": True,
                                                            "share_expires_at": "2020-01-01T00:00:00Z"})
            assert on.is_error and text(on).startswith("validation_error: share_expires_at")
            await client.call_tool("update_document", {"document_id": doc["document_id"], "share_enabled": True})
            rotated = await client.call_tool("rotate_share_link", {"document_id": doc["document_id"]})
            assert rotated.is_error is False, text(rotated)
            new = rotated.structured_content["share_url"]
            assert new != old
            assert httpx.get(old, timeout=30).status_code == 404
            assert httpx.get(new, timeout=30).status_code == 200
            await client.call_tool("delete_document", {"document_id": doc["document_id"]})
            assert httpx.get(new, timeout=30).status_code == 404

    anyio.run(main)


def test_the_review_loop_with_the_official_client(stack):
    """docs/mcp.md's loop: publish, request_review (the reviewer is mailed the link),
    wait_for_review, a decision wakes it, edit, wait again, until approved."""
    created = stack.admin("create-workspace", "--name", "MCP reviews", "--plan", "pro")
    reviewer = "reviewer@example.com"
    stack.add_member(created["workspace_id"], reviewer)

    async def main():
        async with http_client(stack, created["api_key"]) as client:
            async def call(name, args):
                result = await client.call_tool(name, args)
                assert result.is_error is False, (name, text(result))
                return result.structured_content

            doc = await call("publish_document", {"title": "Review loop", "html": "<p>Ship in March.</p>"})
            doc_id = doc["document_id"]
            assert (await call("request_review", {"document_id": doc_id, "reviewers": [reviewer]})) == {
                "requested": [reviewer]}
            start = await call("wait_for_review", {"document_id": doc_id, "timeout_seconds": 0})
            assert start["review_state"] == "pending" and start["reviews"] == [] and start["feedback"] == []
            await call("submit_review", {"document_id": doc_id, "decision": "changes_requested",
                                         "message": "February, please."})
            woke = await call("wait_for_review", {"document_id": doc_id, "since": start["since"]})
            assert woke["review_state"] == "changes_requested"
            assert [r["message"] for r in woke["reviews"]] == ["February, please."]
            await call("edit_document", {"document_id": doc_id,
                                         "edits": [{"old_string": "March", "new_string": "February"}]})
            assert (await call("get_document", {"document_id": doc_id}))["review_state"] == "pending"
            await call("submit_review", {"document_id": doc_id, "decision": "approved"})
            done = await call("wait_for_review", {"document_id": doc_id, "since": woke["since"]})
            assert done["review_state"] == "approved" and done["reviews"][0]["version_number"] == 2
            result = await client.call_tool("submit_review", {"document_id": doc_id, "decision": "lgtm"})
            assert result.is_error and text(result).startswith("validation_error: decision")

    anyio.run(main)
    mail = [m for m in stack.admin("outbox", "--limit", "20")["messages"] if m["to"] == reviewer]
    assert mail and mail[0]["kind"] == "review"
