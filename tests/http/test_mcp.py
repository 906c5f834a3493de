"""/mcp in-process (chalice test client + moto): HTTP edges, protocol versions, tools."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
TOOL_NAMES = {"publish_document", "edit_document", "get_document", "update_document", "delete_document",
              "list_documents", "find_document", "get_workspace_info", "list_feedback", "resolve_feedback",
              "get_document_stats",
              "set_passphrase", "rotate_share_link", "list_versions", "delete_version", "reply_to_feedback",
              "wait_for_feedback", "accept_suggestion", "submit_review", "list_reviews", "wait_for_review",
              "request_review", "start_export", "get_export", "list_recipients", "revoke_recipient", "get_provenance"}
ACCEPT = "application/json, text/event-stream"


def rpc(client, key, method, params=None, version="2025-11-25", msg_id=1, headers=None):
    body = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        body["params"] = params
    h = {"Content-Type": "application/json", "Accept": ACCEPT, "X-Api-Key": key}
    if version:
        h["MCP-Protocol-Version"] = version
    if version == "2026-07-28":
        h["Mcp-Method"] = method
    h.update(headers or {})
    return client.http.post("/mcp", headers=h, body=json.dumps(body))


def call(client, key, name, arguments, version="2025-11-25"):
    r = rpc(client, key, "tools/call", {"name": name, "arguments": arguments}, version)
    assert r.status_code == 200, r.body
    return json.loads(r.body)["result"]


def test_importing_app_does_not_import_the_sdk():
    code = ("import sys, app; heavy = [m for m in ('mcp', 'mcp_types', 'starlette', 'jinja2', 'argon2') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(PROJECT_DIR)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("headers, code", [
    ({}, "unauthorized"),
    ({"X-Api-Key": "dpk_" + "x" * 43}, "invalid_api_key"),
    ({"X-Api-Key": "not-a-key"}, "invalid_api_key"),
])
def test_missing_or_bad_key_is_401_in_contract_shape(client, headers, code):
    r = client.http.post("/mcp", headers={"Content-Type": "application/json", "Accept": ACCEPT, **headers},
                         body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert r.status_code == 401
    assert json.loads(r.body)["error"]["code"] == code
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_bearer_header_works(client, key):
    r = client.http.post("/mcp", headers={"Content-Type": "application/json", "Accept": ACCEPT,
                                          "Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25"},
                         body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert r.status_code == 200, r.body


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_other_methods_are_405(client, key, method):
    r = getattr(client.http, method.lower())("/mcp", headers={"X-Api-Key": key})
    assert r.status_code == 405
    assert json.loads(r.body)["error"]["code"] == "method_not_allowed"
    assert "POST" in r.headers["Allow"]


def test_malformed_json_is_contract_400(client, key):
    r = client.http.post("/mcp", headers={"Content-Type": "application/json", "Accept": ACCEPT, "X-Api-Key": key},
                         body="{nope")
    assert r.status_code == 400
    assert json.loads(r.body)["error"]["code"] == "invalid_json"


def test_non_json_content_type_is_415(client, key):
    r = client.http.post("/mcp", headers={"Content-Type": "text/plain", "X-Api-Key": key}, body="x")
    assert r.status_code == 415
    assert json.loads(r.body)["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_initialize_handshake_versions(client, key, version):
    r = rpc(client, key, "initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "1"}}, version=None)
    assert r.status_code == 200, r.body
    result = json.loads(r.body)["result"]
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "docpub"
    assert "tools" in result["capabilities"]
    listed = json.loads(rpc(client, key, "tools/list", version=version).body)["result"]["tools"]
    assert {t["name"] for t in listed} == TOOL_NAMES


def test_tools_list_schemas_and_annotations(client, key):
    tools = {t["name"]: t for t in json.loads(rpc(client, key, "tools/list").body)["result"]["tools"]}
    assert set(tools) == TOOL_NAMES
    for tool in tools.values():
        assert len(tool["description"]) > 80
        assert tool["outputSchema"]["type"] == "object"
        assert tool["annotations"]["openWorldHint"] is False
    publish = tools["publish_document"]
    assert publish["inputSchema"]["required"] == ["html"]  # title is inferred when left out (7b)
    assert set(publish["inputSchema"]["properties"]) == {"title", "html", "document_id", "note", "description",
                                                        "share_enabled", "share_expires_at", "format", "files", "share_access",
                                                        "share_recipients", "allow_secrets"}
    assert publish["inputSchema"]["properties"]["title"]["anyOf"][0]["maxLength"] == 500
    assert "4 MiB" in publish["description"] and "5 documents" in publish["description"]
    assert "60" in publish["description"]
    assert "literal" in tools["edit_document"]["description"] and "atomic" in tools["edit_document"]["description"]
    assert tools["edit_document"]["inputSchema"]["properties"]["edits"]["maxItems"] == 100
    assert set(publish["outputSchema"]["required"]) == {"document_id", "version_id", "version_number", "share_url"}
    for name in ("get_document", "list_documents", "find_document", "get_workspace_info", "list_feedback"):
        assert tools[name]["annotations"]["readOnlyHint"] is True, name
    assert tools["delete_document"]["annotations"]["destructiveHint"] is True
    assert tools["publish_document"]["annotations"]["destructiveHint"] is False
    assert tools["publish_document"]["annotations"]["idempotentHint"] is False
    assert tools["update_document"]["annotations"]["idempotentHint"] is True


def test_tool_calls_round_trip(client, key):
    published = call(client, key, "publish_document", {"title": "Café", "html": "<p>a b a</p>"})
    assert published["isError"] is False
    doc = published["structuredContent"]
    assert json.loads(published["content"][0]["text"]) == doc
    ambiguous = call(client, key, "edit_document", {"document_id": doc["document_id"],
                                                     "edits": [{"old_string": "a", "new_string": "c"}]})
    assert ambiguous["isError"] is True
    assert ambiguous["content"][0]["text"].startswith("edit_ambiguous: edits[0].old_string matches 2 times")
    assert "replace_all" in ambiguous["content"][0]["text"]
    edited = call(client, key, "edit_document", {"document_id": doc["document_id"], "edits": [
        {"old_string": "a", "new_string": "é", "replace_all": True}]})
    assert edited["structuredContent"]["summary"]["replacements"] == 2
    got = call(client, key, "get_document", {"document_id": doc["document_id"], "include_html": True})
    assert got["structuredContent"]["html"] == "<p>é b é</p>"
    assert [v["number"] for v in got["structuredContent"]["versions"]] == [1, 2]
    assert "é b é" in got["content"][0]["text"]  # UTF-8 kept as is, never \\u-escaped


def test_argument_errors_start_with_validation_error(client, key):
    too_long = call(client, key, "publish_document", {"title": "x" * 501, "html": "<p>x</p>"})
    assert too_long["isError"] is True
    assert too_long["content"][0]["text"].startswith("validation_error: title:")
    blank = call(client, key, "publish_document", {"title": "   ", "html": "<p>x</p>"})
    assert blank["content"][0]["text"].startswith("validation_error: title: ")
    unknown = call(client, key, "publish_document", {"title": "t", "html": "<p>x</p>", "tittle": "x"})
    assert unknown["content"][0]["text"].startswith("validation_error: tittle: is not an argument")
    no_tool = call(client, key, "publish", {})
    assert no_tool["isError"] is True and no_tool["content"][0]["text"].startswith("not_found: There is no tool")
    missing = call(client, key, "get_document", {})
    assert missing["content"][0]["text"].startswith("validation_error: document_id: ")
    empty_edits = call(client, key, "edit_document", {"document_id": "7d3c1a52-0b8e-4f4e-9a3c-2b1f0c9d8e7a",
                                                      "edits": []})
    assert empty_edits["content"][0]["text"].startswith("validation_error: edits:")


def test_service_errors_carry_code_and_fix(client, key):
    missing = call(client, key, "get_document", {"document_id": "7d3c1a52-0b8e-4f4e-9a3c-2b1f0c9d8e7a"})
    assert missing["isError"] is True
    assert missing["content"][0]["text"].startswith("not_found: ")
    assert "find_document" in missing["content"][0]["text"]
    too_big = call(client, key, "publish_document", {"title": "big", "html": "x" * (4 * 1024 * 1024 + 1)})
    assert too_big["content"][0]["text"].startswith("document_too_large: ")
    assert '"limit_bytes":4194304' in too_big["content"][0]["text"]


def test_free_plan_cap_applies(client, key):
    for i in range(5):
        assert call(client, key, "publish_document", {"title": f"d{i}", "html": "<p>x</p>"})["isError"] is False
    sixth = call(client, key, "publish_document", {"title": "d6", "html": "<p>x</p>"})
    assert sixth["content"][0]["text"].startswith("plan_limit_reached: ")
    assert '"limit":5' in sixth["content"][0]["text"]


def test_write_rate_limit_applies_through_the_service(client, key, monkeypatch):
    monkeypatch.setenv("DOCPUB_WRITE_RATE_LIMIT", "2")
    doc = call(client, key, "publish_document", {"title": "r", "html": "<p>0</p>"})["structuredContent"]
    assert call(client, key, "publish_document", {"title": "r", "html": "<p>1</p>",
                                                  "document_id": doc["document_id"]})["isError"] is False
    limited = call(client, key, "edit_document", {"document_id": doc["document_id"],
                                                   "edits": [{"old_string": "1", "new_string": "2"}]})
    assert limited["content"][0]["text"].startswith("rate_limited: ")
    assert "retry_after_seconds" in limited["content"][0]["text"]


def test_modern_protocol_2026_07_28_discover_and_call(client, key):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    r = rpc(client, key, "server/discover", {"_meta": meta}, version="2026-07-28")
    assert r.status_code == 200, r.body
    assert "2026-07-28" in json.loads(r.body)["result"]["supportedVersions"]
    r = rpc(client, key, "tools/call", {"name": "get_workspace_info", "arguments": {}, "_meta": meta},
            version="2026-07-28", headers={"Mcp-Name": "get_workspace_info"})
    assert r.status_code == 200, r.body
    result = json.loads(r.body)["result"]
    assert result["structuredContent"]["workspace"]["plan"] == "free"
    # A JSON-RPC error of the modern protocol keeps its JSON-RPC body (MCP clients parse it).
    r = rpc(client, key, "tools/list", {}, version="2026-07-28")
    assert r.status_code == 400
    assert json.loads(r.body)["error"]["code"] == -32602


def test_tools_refuse_true_false_for_a_number(client, key):
    """Reproduction: the hand-written tools read `true`/`false` as 1/0 (pydantic's lax int):
    list_documents(limit=true) answered a page of one, get_document_stats(days=true) one day,
    wait_for_feedback(timeout_seconds=false) did not wait; REST answers 422 for a boolean where
    a number belongs, and the generated tools' version_number refuses it. Every integer
    argument of a hand-written tool now refuses a boolean, and still takes a number's digits.
    So do the generated tools' query and body numbers: list_versions(limit=true) answered a page
    of one and submit_review(version_number=true) reviewed version 1 (REST's body: 422)."""
    from tests.helpers import publish

    doc = publish(client, key)
    document_id = doc["document_id"]
    cases = {("list_documents", "limit"): {}, ("find_document", "limit"): {"query": "x"},
             ("list_feedback", "limit"): {}, ("wait_for_feedback", "timeout_seconds"): {},
             ("wait_for_review", "timeout_seconds"): {"document_id": document_id},
             ("get_document_stats", "days"): {"document_id": document_id},
             ("list_versions", "limit"): {"document_id": document_id},
             ("get_provenance", "version_number"): {"document_id": document_id},
             ("submit_review", "version_number"): {"document_id": document_id, "decision": "approved"}}
    listed = rpc(client, key, "tools/list")
    integers = {(t["name"], name) for t in json.loads(listed.body)["result"]["tools"]
                for name, schema in t["inputSchema"]["properties"].items()
                if "integer" in json.dumps(schema) and "boolean" not in json.dumps(schema)}
    assert integers == set(cases)  # a new integer argument joins this test
    schemas = {(t["name"], name): schema for t in json.loads(listed.body)["result"]["tools"]
               for name, schema in t["inputSchema"]["properties"].items()}
    for found in integers:  # bounds stay JSON Schema's own words (the validator must not hide them)
        said = json.dumps(schemas[found])
        assert '"minimum"' in said and '"ge"' not in said and '"le"' not in said, (found, said)
    for (tool, argument), others in cases.items():
        for boolean in (True, False):
            refused = call(client, key, tool, {**others, argument: boolean})
            text = refused["content"][0]["text"]
            assert refused["isError"] and text.startswith(f"validation_error: {argument}:"), (tool, boolean, refused)
            assert "whole number" in text, text
        fine = call(client, key, tool, {**others, argument: "1"})
        assert not fine["isError"], (tool, fine)
