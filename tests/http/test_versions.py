"""GET /api/v1/documents/:id/versions (contract section 4) and its MCP tool
list_versions: every version, newest first, a page at a time. Declared once in
chalicelib/operations.py (the worked example of docs/architecture.md)."""
from __future__ import annotations

import json

import pytest

from tests.helpers import post_json
from tests.http.test_mcp import call


@pytest.fixture
def key(client):
    from chalicelib import wiring

    _, created = wiring.workspaces().create_workspace("Versions", "pro")
    return created.api_key


@pytest.fixture
def document(client, key):
    """A document with five versions (notes n1..n5)."""
    document_id = None
    for n in range(1, 6):
        body = {"title": "Notes", "html": f"<p>{n}</p>", "note": f"n{n}"}
        if document_id:
            body["document_id"] = document_id
        r = post_json(client, "/api/v1/publish", body, key)
        assert r.status_code == 200, r.body
        document_id = json.loads(r.body)["document_id"]
    return document_id


def _get(client, key, path):
    return client.http.get(path, headers={"X-Api-Key": key})


def test_versions_come_newest_first_a_page_at_a_time(client, key, document):
    seen, cursor = [], None
    while True:
        r = _get(client, key, f"/api/v1/documents/{document}/versions?limit=2"
                              + (f"&cursor={cursor}" if cursor else ""))
        assert r.status_code == 200, r.body
        page = json.loads(r.body)
        assert len(page["versions"]) <= 2
        seen.extend(page["versions"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [v["number"] for v in seen] == [5, 4, 3, 2, 1]
    assert [v["note"] for v in seen] == ["n5", "n4", "n3", "n2", "n1"]
    assert set(seen[0]) == {"version_id", "number", "note", "created_at", "size_bytes"}
    detail = json.loads(_get(client, key, f"/api/v1/documents/{document}").body)
    assert [v["version_id"] for v in reversed(detail["versions"])] == [v["version_id"] for v in seen]


def test_default_page_holds_every_version_of_a_small_document(client, key, document):
    page = json.loads(_get(client, key, f"/api/v1/documents/{document}/versions").body)
    assert len(page["versions"]) == 5 and page["next_cursor"] is None


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "cursor=made-up", "cursor=5", "colour=red"])
def test_bad_input_is_422(client, key, document, query):
    r = _get(client, key, f"/api/v1/documents/{document}/versions?{query}")
    assert r.status_code == 422, r.body
    assert json.loads(r.body)["error"]["code"] == "validation_error"


def test_a_cursor_of_another_document_is_422(client, key, document):
    other = json.loads(post_json(client, "/api/v1/publish", {"title": "O", "html": "<p/>"}, key).body)["document_id"]
    post_json(client, "/api/v1/publish", {"title": "O", "html": "<p>2</p>", "document_id": other}, key)
    cursor = json.loads(_get(client, key, f"/api/v1/documents/{other}/versions?limit=1").body)["next_cursor"]
    assert cursor
    r = _get(client, key, f"/api/v1/documents/{document}/versions?cursor={cursor}")
    assert r.status_code == 422


def test_another_workspaces_document_is_404_and_no_key_is_401(client, document):
    from chalicelib import wiring

    _, stranger = wiring.workspaces().create_workspace("Other", "free")
    r = _get(client, stranger.api_key, f"/api/v1/documents/{document}/versions")
    assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    assert client.http.get(f"/api/v1/documents/{document}/versions").status_code == 401


def test_the_mcp_tool_gives_the_same_pages(client, key, document):
    result = call(client, key, "list_versions", {"document_id": document, "limit": 3})
    assert not result.get("isError"), result
    first = result["structuredContent"]
    rest = json.loads(_get(client, key, f"/api/v1/documents/{document}/versions?limit=3").body)
    assert [v["version_id"] for v in first["versions"]] == [v["version_id"] for v in rest["versions"]]
    more = call(client, key, "list_versions", {"document_id": document, "cursor": first["next_cursor"]})
    assert [v["number"] for v in more["structuredContent"]["versions"]] == [2, 1]
    bad = call(client, key, "list_versions", {"document_id": document, "limit": 0})
    assert bad["isError"] and bad["content"][0]["text"].startswith("validation_error")


def test_the_operation_is_in_openapi_and_needs_the_read_scope(client):
    from chalicelib.operations import TOOL_SCOPES

    doc = json.loads(client.http.get("/api/v1/openapi.json").body)
    operation = doc["paths"]["/api/v1/documents/{document_id}/versions"]["get"]
    assert operation["operationId"] == "listVersions"
    assert {p["name"] for p in operation["parameters"]} == {"document_id", "limit", "cursor"}
    assert TOOL_SCOPES["list_versions"] == "docs:read"


def test_the_mcp_tool_delete_version_deletes_an_old_version(client, key, document):
    """delete_version as an MCP tool: the REST operation's rules, a structured answer."""
    versions = json.loads(_get(client, key, f"/api/v1/documents/{document}/versions").body)["versions"]
    latest, old = versions[0]["version_id"], versions[2]["version_id"]
    result = call(client, key, "delete_version", {"document_id": document, "version_id": old})
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"document_id": document, "version_id": old, "deleted": True}
    left = json.loads(_get(client, key, f"/api/v1/documents/{document}/versions").body)["versions"]
    assert [v["number"] for v in left] == [5, 4, 2, 1]
    again = call(client, key, "delete_version", {"document_id": document, "version_id": old})
    assert again["isError"] and again["content"][0]["text"].startswith("not_found")
    kept = call(client, key, "delete_version", {"document_id": document, "version_id": latest})
    assert kept["isError"] and kept["content"][0]["text"].startswith("version_conflict")
    assert latest in kept["content"][0]["text"]  # details name the latest version
    missing = call(client, key, "delete_version", {"document_id": document})
    assert missing["isError"] and missing["content"][0]["text"].startswith("validation_error")


def test_the_delete_version_tool_is_declared_destructive_and_needs_the_write_scope(client, key):
    from chalicelib.operations import TOOL_SCOPES
    from tests.http.test_mcp import rpc

    assert TOOL_SCOPES["delete_version"] == "docs:write"
    tools = {t["name"]: t for t in json.loads(rpc(client, key, "tools/list").body)["result"]["tools"]}
    tool = tools["delete_version"]
    assert tool["annotations"]["destructiveHint"] is True and tool["annotations"]["readOnlyHint"] is False
    assert set(tool["inputSchema"]["required"]) == {"document_id", "version_id"}
    assert set(tool["outputSchema"]["properties"]) == {"document_id", "version_id", "deleted"}
