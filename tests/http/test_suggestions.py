"""Suggested edits (contract 7e): a comment may carry `suggestion: {replacement}` with its
anchor; accepting it applies one literal edit of the latest version (the engine and
errors of POST .../edit) and resolves the thread in that version, in one write; on
REST and MCP, on SQLite and DynamoDB (moto)."""
from __future__ import annotations

import json

import pytest

from tests.helpers import post_json
from tests.helpers import publish as publish_with
from tests.sharing_helpers import get_json, publish, send_feedback

BOTH = pytest.mark.parametrize("store", ["sqlite", pytest.param("aws", marks=pytest.mark.aws)])
HTML = "<p>The database failover takes two minutes.</p><p>Restart the worker.</p>"
ANCHOR = {"quote": "two minutes", "prefix": "The database failover takes ", "suffix": "."}


def _suggest(client, share_id, anchor=ANCHOR, replacement="ninety seconds", message="Faster now"):
    r = send_feedback(client, share_id, {"message": message, "name": "Rita", "anchor": anchor,
                                         "suggestion": {"replacement": replacement}})
    assert r.status_code == 201, r.body
    return json.loads(r.body)["feedback_id"]


def _accept(client, key, feedback_id, body=None):
    return post_json(client, f"/api/v1/feedback/{feedback_id}/accept", {} if body is None else body, key)


def _html(client, key, document_id):
    _, got = get_json(client, f"/api/v1/documents/{document_id}?include_html=true", key)
    return got


def _feedback(client, key, feedback_id):
    _, listing = get_json(client, "/api/v1/feedback?status=all", key)
    return next(f for f in listing["feedback"] if f["feedback_id"] == feedback_id)


@BOTH
def test_accept_applies_the_edit_and_resolves_the_thread_in_that_version(client, workspace, store):
    _, key = workspace
    doc = publish(client, key, html=HTML)
    fid = _suggest(client, doc["share_id"])
    item = _feedback(client, key, fid)
    assert item["suggestion"] == {"replacement": "ninety seconds"} and item["status"] == "open"
    assert item["resolved_in_version"] is None

    r = _accept(client, key, fid)
    assert r.status_code == 200, r.body
    # an accept is a write under the rate limit: it carries X-RateLimit-* like every edit (section 4)
    assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= set(r.headers), r.headers
    body = json.loads(r.body)
    assert body["document"]["document_id"] == doc["document_id"] and body["document"]["version_number"] == 2
    assert set(body["document"]) == {"document_id", "version_id", "version_number", "share_url"}
    assert body["feedback"]["status"] == "resolved" and body["feedback"]["resolved_in_version"] == 2
    got = _html(client, key, doc["document_id"])
    assert got["html"] == HTML.replace("two minutes", "ninety seconds")
    # who suggested and who accepted are on the version
    _, versions = get_json(client, f"/api/v1/documents/{doc['document_id']}/versions", key)
    note = next(v for v in versions["versions"] if v["number"] == 2)["note"]
    assert "Rita" in note and fid in note and "API key" in note
    assert _feedback(client, key, fid)["resolved_in_version"] == 2
    _, listed = get_json(client, "/api/v1/documents", key)
    assert listed["documents"][0]["open_feedback_count"] == 0

    again = _accept(client, key, fid)
    assert again.status_code == 409, again.body
    assert "X-RateLimit-Limit" in again.headers  # refusals too
    assert json.loads(again.body)["error"]["code"] == "already_resolved"
    assert _html(client, key, doc["document_id"])["versions"][-1]["number"] == 2


def test_a_suggestion_needs_an_anchor(client, workspace):
    _, key = workspace
    doc = publish(client, key, html=HTML)
    for body in ({"message": "m", "suggestion": {"replacement": "x"}},
                 {"message": "m", "quote": "two minutes", "suggestion": {"replacement": "x"}}):
        r = send_feedback(client, doc["share_id"], body)
        assert r.status_code == 422, r.body
        fields = json.loads(r.body)["error"]["details"]["fields"]
        assert [f["field"] for f in fields] == ["suggestion"]
    for bad in ({"replacement": "x" * 5001}, {"replacement": 3}, {"text": "x"}, "x"):
        r = send_feedback(client, doc["share_id"], {"message": "m", "anchor": ANCHOR, "suggestion": bad})
        assert r.status_code == 422, r.body
    # an empty replacement deletes the passage
    fid = _suggest(client, doc["share_id"], {"quote": " Restart the worker."[1:]}, replacement="")
    assert _accept(client, key, fid).status_code == 200
    assert _html(client, key, doc["document_id"])["html"] == "<p>The database failover takes two minutes.</p><p></p>"


@BOTH
def test_a_failed_accept_changes_nothing(client, workspace, store):
    _, key = workspace
    doc = publish(client, key, html=HTML)
    fid = _suggest(client, doc["share_id"])
    edited = post_json(client, f"/api/v1/documents/{doc['document_id']}/edit",
                       {"edits": [{"old_string": "two minutes", "new_string": "Two Minutes"}]}, key)
    assert edited.status_code == 200
    r = _accept(client, key, fid)
    assert r.status_code == 422, r.body
    error = json.loads(r.body)["error"]
    assert error["code"] == "edit_not_found" and error["details"]["closest_match"] == "Two Minutes"
    assert _html(client, key, doc["document_id"])["versions"][-1]["number"] == 2
    assert _feedback(client, key, fid)["status"] == "open"
    # a stale base_version_id is the edit's 409
    conflict = _accept(client, key, fid, {"base_version_id": doc["version_id"]})
    assert conflict.status_code == 409 and json.loads(conflict.body)["error"]["code"] == "version_conflict"
    assert _feedback(client, key, fid)["status"] == "open"


def test_prefix_and_suffix_choose_among_repeats(client, workspace):
    _, key = workspace
    html = "<p>Call ops now.</p><p>Then call ops again.</p>"
    doc = publish(client, key, html=html)
    second = _suggest(client, doc["share_id"], {"quote": "call ops", "prefix": "Then ", "suffix": " again."},
                      replacement="page the on-call")
    assert _accept(client, key, second).status_code == 200
    assert _html(client, key, doc["document_id"])["html"] == "<p>Call ops now.</p><p>Then page the on-call again.</p>"
    # repeats that nothing tells apart are the edit's edit_ambiguous
    doc2 = publish(client, key, html="<p>ok</p><p>ok</p>")
    fid = _suggest(client, doc2["share_id"], {"quote": "ok"}, replacement="fine")
    r = _accept(client, key, fid)
    assert r.status_code == 422 and json.loads(r.body)["error"]["code"] == "edit_ambiguous"
    assert json.loads(r.body)["error"]["details"]["match_count"] == 2
    assert _feedback(client, key, fid)["status"] == "open"


def test_rejecting_is_resolving_and_then_accepting_is_409(client, workspace):
    _, key = workspace
    doc = publish(client, key, html=HTML)
    fid = _suggest(client, doc["share_id"])
    assert post_json(client, f"/api/v1/feedback/{fid}/resolve", {}, key).status_code == 200
    r = _accept(client, key, fid)
    assert r.status_code == 409 and json.loads(r.body)["error"]["code"] == "already_resolved"
    assert _html(client, key, doc["document_id"])["versions"][-1]["number"] == 1


def test_accept_refusals(client, workspace):
    _, key = workspace
    doc = publish(client, key, html=HTML)
    plain = send_feedback(client, doc["share_id"], {"message": "nice", "anchor": ANCHOR})
    plain_id = json.loads(plain.body)["feedback_id"]
    r = _accept(client, key, plain_id)
    assert r.status_code == 422 and json.loads(r.body)["error"]["code"] == "validation_error"
    assert _accept(client, key, "fb_nothere12345").status_code == 404
    fid = _suggest(client, doc["share_id"])
    assert _accept(client, key, fid, {"surprise": 1}).status_code == 422


def test_markdown_quote_is_matched_in_the_source(client, workspace):
    _, key = workspace
    doc = publish_with(client, key, title="Runbook", format="markdown", html="# Runbook\n\nThe failover takes *two* minutes.\n")
    ok = _suggest(client, doc["share_id"], {"quote": "The failover takes"}, replacement="Failover takes")
    assert _accept(client, key, ok).status_code == 200
    _, got = get_json(client, f"/api/v1/documents/{doc['document_id']}?include_source=true", key)
    assert got["source"] == "# Runbook\n\nFailover takes *two* minutes.\n"
    # the rendered text "two minutes" is not in the source as written ("*two* minutes")
    bad = _suggest(client, doc["share_id"], {"quote": "two minutes"}, replacement="2 minutes")
    r = _accept(client, key, bad)
    assert r.status_code == 422 and json.loads(r.body)["error"]["code"] == "edit_not_found"
    assert "Markdown source" in json.loads(r.body)["error"]["message"]


def test_concurrent_accepts_one_wins(client, workspace):
    from chalicelib import wiring
    from chalicelib.services.auth import credentials_from_key
    from tests.helpers import run_together

    _, key = workspace
    doc = publish(client, key, html=HTML)
    fid = _suggest(client, doc["share_id"])
    who = credentials_from_key(key)
    results, failures = run_together([lambda: wiring.suggestions().accept(who, fid)] * 2)
    assert len(results) == 1 and failures == ["AlreadyResolved"], (results, failures)
    assert _html(client, key, doc["document_id"])["versions"][-1]["number"] == 2


def test_mcp_accept_suggestion(client, workspace):
    from tests.http.test_mcp import call as call_tool

    _, key = workspace
    doc = publish(client, key, html=HTML)
    fid = _suggest(client, doc["share_id"])
    got = call_tool(client, key, "accept_suggestion", {"feedback_id": fid})
    assert not got.get("isError"), got
    assert got["structuredContent"]["feedback"]["resolved_in_version"] == 2
    again = call_tool(client, key, "accept_suggestion", {"feedback_id": fid})
    assert again["isError"] is True and again["content"][0]["text"].startswith("already_resolved:")


def test_the_share_page_lists_suggestions_and_accepted_ones(client, workspace):
    _, key = workspace
    doc = publish(client, key, html=HTML)
    fid = _suggest(client, doc["share_id"])
    threads = json.loads(client.http.get(f"/d/{doc['share_id']}/threads/f1").body)["threads"]
    [thread] = threads
    assert thread["suggestion"] == {"replacement": "ninety seconds"} and thread["version_number"] == 1
    assert thread["anchor_state"]["status"] == "exact"
    assert _accept(client, key, fid).status_code == 200
    [thread] = json.loads(client.http.get(f"/d/{doc['share_id']}/threads/f2").body)["threads"]
    assert thread["status"] == "resolved" and thread["resolved_in_version"] == 2
    page = client.http.get(f"/d/{doc['share_id']}").body.decode()
    assert 'id="sg-open"' in page and 'id="fb-replacement"' in page and "On earlier versions" in page


def test_dashboard_inbox_accepts_and_rejects_suggestions(owner, client):
    import re

    from tests.http.test_dashboard import doc_id_from, upload

    document_id = doc_id_from(upload(owner, HTML.encode(), title="Runbook"))
    link = re.search(r'href="(?:https?://[^/"]+)?(/d/[^"/?]+)"', owner.get(f"/dashboard/documents/{document_id}").text)
    share = link.group(1).rsplit("/", 1)[1]
    first = _suggest(client, share)
    second = _suggest(client, share, {"quote": "Restart the worker."}, replacement="Restart it.")
    inbox = owner.get("/dashboard/feedback")
    assert "<del>two minutes</del><ins>ninety seconds</ins>" in inbox.text
    assert f"/dashboard/feedback/{first}/accept" in inbox.text and "Reject" in inbox.text
    done = owner.post(f"/dashboard/feedback/{first}/accept", {"back": "/dashboard/feedback"}, csrf=inbox.csrf())
    assert done.status == 303 and "accepted%20in%20version%202" in done.location
    forged = owner.post(f"/dashboard/feedback/{second}/accept", {}, csrf="nope")
    assert forged.status == 403
    rejected = owner.post(f"/dashboard/feedback/{second}/resolve", {"resolved": "true"}, csrf=owner.token())
    assert rejected.status == 303
    resolved = owner.get("/dashboard/feedback?status=resolved")
    assert "Suggestion accepted in version 2" in resolved.text
    again = owner.post(f"/dashboard/feedback/{second}/accept", {}, csrf=owner.token())
    assert again.status == 409 and "already resolved" in again.text


TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"  # the shape of a GitHub token (not a real one)


def test_dashboard_accept_of_a_blocked_secret_offers_accept_anyway_and_warn_mode_shows_warnings(owner, client):
    """Parity with REST/MCP (contract 7e, 7g): in a workspace that blocks secrets, the
    dashboard's Accept of a suggestion bringing in a token was an error page telling the user
    to pass allow_secrets, which no dashboard form could. The refusal now names what was found
    (never the secret) and offers "Accept anyway" (CSRF-checked, posting allow_secrets); in
    warn mode the answer shows the warnings."""
    import re

    from tests.http.test_dashboard import doc_id_from, upload

    document_id = doc_id_from(upload(owner, HTML.encode(), title="Runbook"))
    link = re.search(r'href="(?:https?://[^/"]+)?(/d/[^"/?]+)"', owner.get(f"/dashboard/documents/{document_id}").text)
    share = link.group(1).rsplit("/", 1)[1]
    blocked = _suggest(client, share, replacement=TOKEN)
    inbox = owner.get("/dashboard/feedback")
    refused = owner.post(f"/dashboard/feedback/{blocked}/accept", {"back": "/dashboard/feedback"}, csrf=inbox.csrf())
    assert refused.status == 422, refused.text
    assert TOKEN not in refused.text and "line 1, column" in refused.text and "github-pat" in refused.text
    assert "Accept anyway" in refused.text and 'name="allow_secrets"' in refused.text
    assert 'name="csrf_token"' in refused.text
    forged = owner.post(f"/dashboard/feedback/{blocked}/accept", {"allow_secrets": "on"}, csrf="nope")
    assert forged.status == 403
    anyway = owner.post(f"/dashboard/feedback/{blocked}/accept",
                        {"allow_secrets": "on", "back": "/dashboard/feedback"}, csrf=refused.csrf())
    assert anyway.status == 200, anyway.text
    assert "accepted in version 2" in anyway.text.lower() and "github-pat" in anyway.text and TOKEN not in anyway.text

    saved = owner.post("/dashboard/workspace/scanning", {"secret_scanning": "warn"}, csrf=owner.token())
    assert saved.status == 303, saved.text
    warned = _suggest(client, share, {"quote": "Restart the worker."}, replacement=TOKEN)
    done = owner.post(f"/dashboard/feedback/{warned}/accept", {"back": "/dashboard/feedback"}, csrf=owner.token())
    assert done.status == 200, done.text
    assert "accepted in version 3" in done.text.lower() and "github-pat" in done.text and TOKEN not in done.text
