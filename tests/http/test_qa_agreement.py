"""Defects a QA pass left (helper s3-agree): REST, MCP and the dashboard must agree,
and answers must keep what the caller sent. Each reproduced at the HTTP level first."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from tests.helpers import auth, post_json, publish
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


def _at(clock, days: int, fraction: str) -> str:
    moment = datetime.fromtimestamp(clock.now, tz=timezone.utc).replace(microsecond=0) + timedelta(days=days)
    return moment.replace(tzinfo=None).isoformat() + fraction + "Z"


def test_share_expires_at_keeps_its_milliseconds(client, workspace, app_clock):
    """Reproduction: share_expires_at `…T10:00:00.123Z` was stored and answered as
    `…T10:00:00Z` (the link expired 123 ms early) although the store keeps milliseconds."""
    _, key = workspace
    sent = _at(app_clock, 1, ".123")
    doc = publish(client, key, share_expires_at=sent)
    path = f"/api/v1/documents/{doc['document_id']}"
    got = json.loads(client.http.get(path, headers=auth(key)).body)
    assert got["share_expires_at"] == sent
    # PATCH and MCP answer the same; finer fractions keep their milliseconds (truncated).
    r = client.http.patch(path, headers=auth(key), body=json.dumps({"share_expires_at": _at(app_clock, 2, ".4567")}))
    assert r.status_code == 200 and json.loads(r.body)["share_expires_at"] == _at(app_clock, 2, ".456")
    result = call(client, key, "update_document", {"document_id": doc["document_id"],
                                                   "share_expires_at": _at(app_clock, 3, ".5+00:00")[:-1]})
    assert result["structuredContent"]["share_expires_at"] == _at(app_clock, 3, ".500")
    # Whole seconds stay whole seconds (".000" is not added).
    r = client.http.patch(path, headers=auth(key), body=json.dumps({"share_expires_at": _at(app_clock, 1, ".000")}))
    assert json.loads(r.body)["share_expires_at"] == _at(app_clock, 1, "")
    # The link lives until the millisecond named, not the second before it.
    r = client.http.patch(path, headers=auth(key), body=json.dumps({"share_expires_at": sent}))
    assert r.status_code == 200
    expiry = datetime.fromisoformat(sent.replace("Z", "+00:00")).timestamp()
    app_clock.now = expiry - 0.05
    assert client.http.get(f"/d/{doc['share_id']}").status_code == 200
    app_clock.now = expiry + 0.0004  # (float seconds: a hair past the instant)
    assert client.http.get(f"/d/{doc['share_id']}").status_code == 410


def test_a_markdown_edit_not_found_says_old_string_is_matched_against_the_source(client, workspace):
    """Reproduction: on a Markdown document an edit whose old_string is taken from the
    rendered page (`<strong>bold</strong>`) answered edit_not_found without saying that
    old_string is matched against the Markdown source, not the HTML."""
    _, key = workspace
    md = publish(client, key, html="# Notes\n\nSome **bold** text.\n", format="markdown")
    edit = {"edits": [{"old_string": "<strong>bold</strong>", "new_string": "<em>bold</em>"}]}
    r = post_json(client, f"/api/v1/documents/{md['document_id']}/edit", edit, key)
    assert r.status_code == 422, r.body
    error = json.loads(r.body)["error"]
    assert error["code"] == "edit_not_found"
    assert "Markdown source" in error["message"] and "not the rendered HTML" in error["message"]
    result = call(client, key, "edit_document", {"document_id": md["document_id"], **edit})
    assert result["isError"] and "Markdown source" in result["content"][0]["text"]
    # An HTML document's message does not talk about Markdown.
    page = publish(client, key, html="<p>Some text.</p>")
    r = post_json(client, f"/api/v1/documents/{page['document_id']}/edit", edit, key)
    error = json.loads(r.body)["error"]
    assert error["code"] == "edit_not_found" and "Markdown" not in error["message"]
