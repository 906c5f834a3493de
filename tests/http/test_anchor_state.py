"""anchor_state (contract 7e) on every Feedback answer with an anchor: the passage's
state in the latest version, on SQLite and DynamoDB (moto), REST and MCP."""
from __future__ import annotations

import json

import pytest

from tests.helpers import post_json
from tests.sharing_helpers import get_json, pro, publish, send_feedback  # noqa: F401  (pro: a fixture)

BOTH = pytest.mark.parametrize("store", ["sqlite", pytest.param("aws", marks=pytest.mark.aws)])
HTML = ("<h1>Runbook</h1><p>Intro text here.</p><p>The database failover takes two minutes.</p>"
        "<p>Restart the worker after it.</p>")
# What the share page's frame sends for a selection of the second paragraph (64 characters of context).
ANCHOR = {"quote": "The database failover takes two minutes.", "prefix": "RunbookIntro text here.",
          "suffix": "Restart the worker after it."}


def _states(client, key, document_id):
    _, listing = get_json(client, f"/api/v1/feedback?status=all&document_id={document_id}", key)
    return {f["feedback_id"]: f["anchor_state"] for f in listing["feedback"]}


def _edit(client, key, document_id, old, new):
    r = post_json(client, f"/api/v1/documents/{document_id}/edit",
                  {"edits": [{"old_string": old, "new_string": new}]}, key)
    assert r.status_code == 200, r.body


@BOTH
def test_the_quoted_finding_a_comment_follows_an_edit_near_it(client, workspace, store):
    """Issue 34: a comment on "The database failover…" became "on an earlier version"
    after an edit to "Note: the database failover…"; now it is found (fuzzy), in version 2."""
    _, key = workspace
    doc = publish(client, key, html=HTML)
    r = send_feedback(client, doc["share_id"], {"message": "Is that still true?", "anchor": ANCHOR})
    fid = json.loads(r.body)["feedback_id"]
    plain = json.loads(send_feedback(client, doc["share_id"], {"message": "Nice"}).body)["feedback_id"]
    states = _states(client, key, doc["document_id"])
    assert states[fid] == {"version_number": 1, "status": "exact", "quote_now": None}
    assert states[plain] is None  # no anchor, no state

    _edit(client, key, doc["document_id"], "<p>The database failover", "<p>Note: the database failover")
    assert _states(client, key, doc["document_id"])[fid] == {
        "version_number": 2, "status": "fuzzy", "quote_now": "the database failover takes two minutes."}

    _edit(client, key, doc["document_id"], "<p>Intro text here.</p>", "")
    _edit(client, key, doc["document_id"], "Note: the database failover", "The database failover")
    assert _states(client, key, doc["document_id"])[fid]["status"] == "moved"

    _edit(client, key, doc["document_id"], "<p>The database failover takes two minutes.</p>", "")
    assert _states(client, key, doc["document_id"])[fid] == {"version_number": 5, "status": "orphaned",
                                                             "quote_now": None}


def test_mcp_answers_carry_anchor_state(client, workspace):
    from tests.http.test_mcp import call as call_tool

    _, key = workspace
    doc = publish(client, key, html=HTML)
    send_feedback(client, doc["share_id"], {"message": "m", "anchor": ANCHOR})
    got = call_tool(client, key, "list_feedback", {"document_id": doc["document_id"]})
    assert got["structuredContent"]["feedback"][0]["anchor_state"]["status"] == "exact"


def test_reads_are_bounded(client, pro, monkeypatch):
    """Comments on the latest version are exact without reading it; others read their
    document's latest page once (then cached), at most TEXTS_PER_CALL pages per answer."""
    from chalicelib.services import anchors
    from chalicelib.wiring import default_context

    _, key = pro
    docs = []
    for n in range(anchors.TEXTS_PER_CALL + 2):
        doc = publish(client, key, html=HTML.replace("Runbook", f"Runbook {n}"))
        send_feedback(client, doc["share_id"], {"message": "m", "anchor": ANCHOR})
        docs.append(doc)
    ctx = default_context()
    reads = []
    original = ctx.blobs.get_html
    monkeypatch.setattr(ctx.blobs, "get_html", lambda blob_key: reads.append(blob_key) or original(blob_key))
    anchors.clear_caches()
    _, listing = get_json(client, "/api/v1/feedback?limit=100", key)
    assert reads == [] and {f["anchor_state"]["status"] for f in listing["feedback"]} == {"exact"}
    for doc in docs:
        _edit(client, key, doc["document_id"], "<p>The database failover", "<p>Note: the database failover")
    anchors.clear_caches()
    reads.clear()
    _, listing = get_json(client, "/api/v1/feedback?limit=100", key)
    states = [f["anchor_state"] for f in listing["feedback"]]
    assert len(reads) == anchors.TEXTS_PER_CALL
    assert [s["status"] for s in states if s] == ["fuzzy"] * anchors.TEXTS_PER_CALL and states.count(None) == 2
    reads.clear()
    _, again = get_json(client, "/api/v1/feedback?limit=100", key)  # cached texts are free: more states
    assert sum(1 for f in again["feedback"] if f["anchor_state"]) >= anchors.TEXTS_PER_CALL
