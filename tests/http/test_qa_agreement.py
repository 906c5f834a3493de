"""Defects a QA pass left (helper s3-agree): REST, MCP and the dashboard must agree,
and answers must keep what the caller sent. Each reproduced at the HTTP level first."""
from __future__ import annotations

import json

from tests.helpers import auth, publish
from tests.http.test_mcp import call


def _ids(listing: dict) -> list[str]:
    return [d["document_id"] for d in listing["documents"]]


def test_an_empty_find_lists_every_document_on_rest_and_mcp_alike(client, workspace):
    """Reproduction: `GET /api/v1/documents?query=` listed every document while the MCP
    tool find_document with query "" (the contract maps it to that very request) was a
    422 `query: must not be blank`. One rule now: a blank query is no filter."""
    _, key = workspace
    first, second = publish(client, key, title="Alpha"), publish(client, key, title="Beta")
    everything = [second["document_id"], first["document_id"]]  # newest first
    for query in ("", "   "):
        r = client.http.get(f"/api/v1/documents?query={query.replace(' ', '%20')}", headers=auth(key))
        assert r.status_code == 200, r.body
        assert _ids(json.loads(r.body)) == everything
        result = call(client, key, "find_document", {"query": query})
        assert not result.get("isError"), result
        assert _ids(result["structuredContent"]) == everything
    # A real query still filters, on both.
    r = client.http.get("/api/v1/documents?query=alp", headers=auth(key))
    assert _ids(json.loads(r.body)) == [first["document_id"]]
    assert _ids(call(client, key, "find_document", {"query": "alp"})["structuredContent"]) == [first["document_id"]]
    # find_document still needs the argument (contract: `query, limit?`).
    missing = call(client, key, "find_document", {})
    assert missing["isError"] and missing["content"][0]["text"].startswith("validation_error")
