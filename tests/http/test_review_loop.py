"""The review loop (contract 7c): anchored feedback, replies from owners and viewers,
waiting for feedback (`since` / `wait`, one storage read a second), on REST and MCP."""
from __future__ import annotations

import json

import pytest

from chalicelib.ports.records import Workspace
from tests.helpers import auth, post_json
from tests.sharing_helpers import get_json, publish, send_feedback

ANCHOR = {"quote": "the results", "prefix": "In short, ", "suffix": " were good."}


@pytest.fixture
def waiting(app_clock):
    """The app's context sleeps on the fake clock, and counts its activity reads."""
    from chalicelib.wiring import default_context

    ctx = default_context()
    reads = []
    original = ctx.feedback.activity_since
    ctx.sleep = app_clock.advance

    def counted(*args, **kwargs):
        reads.append(app_clock())
        return original(*args, **kwargs)

    ctx.feedback.activity_since = counted
    yield reads
    ctx.feedback.activity_since = original
    import time
    ctx.sleep = time.sleep


def _fb(client, share_id, body, **kw):
    r = send_feedback(client, share_id, body, **kw)
    assert r.status_code == 201, r.body
    return json.loads(r.body)["feedback_id"]


def _reply(client, key, feedback_id, message):
    return post_json(client, f"/api/v1/feedback/{feedback_id}/replies", {"message": message}, key)


def _viewer_reply(client, share_id, feedback_id, body, headers=None):
    return post_json(client, f"/d/{share_id}/feedback/{feedback_id}/replies", body, headers=headers)


def _one(client, key, feedback_id, status="all"):
    _, listing = get_json(client, f"/api/v1/feedback?status={status}", key)
    return next(f for f in listing["feedback"] if f["feedback_id"] == feedback_id)


# ------------------------------------------------------------------ anchors

def test_anchor_is_stored_and_fills_quote(client, workspace):
    _, key = workspace
    doc = publish(client, key, html="<p>In short, the results were good.</p>")
    fid = _fb(client, doc["share_id"], {"message": "Which results?", "anchor": ANCHOR})
    item = _one(client, key, fid)
    assert item["anchor"] == ANCHOR and item["quote"] == "the results" and item["replies"] == []
    # quote and anchor.quote together must agree
    same = _fb(client, doc["share_id"], {"message": "ok", "quote": "the results", "anchor": {"quote": "the results"}})
    assert _one(client, key, same)["anchor"] == {"quote": "the results", "prefix": None, "suffix": None}


@pytest.mark.parametrize("anchor", [
    {"quote": ""}, {"quote": "   "}, {"quote": "x" * 1001}, {"quote": "x", "prefix": "p" * 65},
    {"quote": "x", "suffix": "s" * 65}, {"quote": "x", "exact": "x"}, {"prefix": "only"}, "the results",
])
def test_bad_anchors_are_422(client, workspace, anchor):
    _, key = workspace
    doc = publish(client, key)
    r = send_feedback(client, doc["share_id"], {"message": "m", "anchor": anchor})
    assert r.status_code == 422, r.body
    assert json.loads(r.body)["error"]["code"] == "validation_error"


def test_quote_must_equal_anchor_quote(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    r = send_feedback(client, doc["share_id"], {"message": "m", "quote": "a", "anchor": {"quote": "b"}})
    assert r.status_code == 422
    assert "anchor" in json.loads(r.body)["error"]["message"]


# ------------------------------------------------------------------ replies

def test_owner_and_viewer_replies_form_a_thread(client, workspace, app_clock):
    _, key = workspace
    doc = publish(client, key)
    fid = _fb(client, doc["share_id"], {"message": "Typo", "anchor": ANCHOR})
    app_clock.advance(1)
    r = _reply(client, key, fid, "Fixed, thanks")
    assert r.status_code == 201, r.body
    reply = json.loads(r.body)
    assert set(reply) == {"reply_id", "message", "name", "author", "created_at"}
    assert reply["author"] == "owner" and reply["name"] is None and reply["message"] == "Fixed, thanks"
    app_clock.advance(1)
    r = _viewer_reply(client, doc["share_id"], fid, {"message": "Great", "name": "Ana"})
    assert r.status_code == 201, r.body
    assert json.loads(r.body)["author"] == "viewer"
    thread = _one(client, key, fid)
    assert [(x["author"], x["message"], x["name"]) for x in thread["replies"]] == [
        ("owner", "Fixed, thanks", None), ("viewer", "Great", "Ana")]


def test_viewer_reply_reopens_a_resolved_thread_owner_reply_does_not(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    fid = _fb(client, doc["share_id"], {"message": "Typo"})
    assert client.http.post(f"/api/v1/feedback/{fid}/resolve", headers=auth(key), body=b"").status_code == 200
    assert _reply(client, key, fid, "closing note").status_code == 201
    assert _one(client, key, fid)["status"] == "resolved"
    _, d = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert d["open_feedback_count"] == 0
    assert _viewer_reply(client, doc["share_id"], fid, {"message": "still wrong"}).status_code == 201
    item = _one(client, key, fid)
    assert item["status"] == "open" and item["resolved_at"] is None
    _, d = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert d["open_feedback_count"] == 1


def test_reply_errors(client, workspace, services):
    _, key = workspace
    doc = publish(client, key)
    other_doc = publish(client, key, "Other")
    fid = _fb(client, doc["share_id"], {"message": "Typo"})
    for bad in ("fb_doesnotexist00", "nope", "x" * 3000):
        r = _reply(client, key, bad, "hi")
        assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    # another workspace's thread is not found
    _, other = services.workspaces.create_workspace("Other", "free")
    assert _reply(client, other.api_key, fid, "hi").status_code == 404
    # a thread of another document through this link: not found
    assert _viewer_reply(client, other_doc["share_id"], fid, {"message": "hi"}).status_code == 404
    for body in ({"message": ""}, {"message": " "}, {"message": "x" * 5001}, {"message": "hi", "extra": 1}, {}):
        r = _reply(client, key, fid, None) if body == {} else post_json(
            client, f"/api/v1/feedback/{fid}/replies", body, key)
        assert r.status_code == 422, (body, r.body)
    assert _viewer_reply(client, doc["share_id"], fid, {"message": "x", "name": "n" * 101}).status_code == 422
    assert _reply(client, "dpk_" + "x" * 40, fid, "hi").status_code == 401


def test_viewer_replies_share_the_feedback_budget(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    fid = _fb(client, doc["share_id"], {"message": "first"})
    for i in range(9):
        assert _viewer_reply(client, doc["share_id"], fid, {"message": f"r{i}"}).status_code == 201
    r = _viewer_reply(client, doc["share_id"], fid, {"message": "one too many"})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
    assert send_feedback(client, doc["share_id"], {"message": "also refused"}).status_code == 429
    # the owner is not limited by viewers' budget
    assert _reply(client, key, fid, "owner").status_code == 201


def test_viewer_reply_on_a_protected_document_needs_the_cookie(client, services):
    from tests.sharing_helpers import cookie_of, set_passphrase, unlock

    _, k = services.workspaces.create_workspace("Pro", "pro")
    key = k.api_key
    doc = publish(client, key)
    assert set_passphrase(client, key, doc["document_id"], "tangerine-lantern-42").status_code == 204
    unlocked = unlock(client, doc["share_id"], "tangerine-lantern-42")
    cookie = {"Cookie": cookie_of(unlocked)}
    fid = _fb(client, doc["share_id"], {"message": "m"}, headers=cookie)
    assert _viewer_reply(client, doc["share_id"], fid, {"message": "r"}).status_code == 401
    assert _viewer_reply(client, doc["share_id"], fid, {"message": "r"}, headers=cookie).status_code == 201


# ------------------------------------------------------------------ waiting

def test_since_returns_new_activity_once(client, workspace, app_clock):
    _, key = workspace
    doc = publish(client, key)
    status, first = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}", key)
    assert status == 200 and first["since"]
    fid = _fb(client, doc["share_id"], {"message": "new", "anchor": ANCHOR})
    _, woke = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&since={first['since']}", key)
    assert [f["feedback_id"] for f in woke["feedback"]] == [fid]
    assert woke["feedback"][0]["anchor"]["quote"] == "the results" and woke["next_cursor"] is None
    _, again = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&since={woke['since']}", key)
    assert again["feedback"] == []
    # resolved threads wake too when a viewer replies; the owner's own reply does not
    client.http.post(f"/api/v1/feedback/{fid}/resolve", headers=auth(key), body=b"")
    assert _reply(client, key, fid, "mine").status_code == 201
    _, quiet = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&since={again['since']}", key)
    assert quiet["feedback"] == []
    app_clock.advance(1)
    assert _viewer_reply(client, doc["share_id"], fid, {"message": "no"}).status_code == 201
    _, woke2 = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&since={quiet['since']}", key)
    assert [f["feedback_id"] for f in woke2["feedback"]] == [fid]
    assert [r["message"] for r in woke2["feedback"][0]["replies"]] == ["mine", "no"]


def test_wait_times_out_reading_once_a_second(client, workspace, waiting, app_clock):
    _, key = workspace
    doc = publish(client, key)
    start = app_clock()
    status, body = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&wait=25", key)
    assert status == 200 and body["feedback"] == [] and body["since"]
    assert app_clock() - start == pytest.approx(25)
    assert len(waiting) <= 26
    gaps = [b - a for a, b in zip(waiting, waiting[1:])]
    assert all(g >= 1 for g in gaps)


def test_wait_answers_at_once_when_there_is_news(client, workspace, waiting, app_clock):
    _, key = workspace
    doc = publish(client, key)
    _, first = get_json(client, "/api/v1/feedback", key)
    fid = _fb(client, doc["share_id"], {"message": "hello"})
    start = app_clock()
    _, body = get_json(client, f"/api/v1/feedback?since={first['since']}&wait=25", key)
    assert [f["feedback_id"] for f in body["feedback"]] == [fid]
    assert app_clock() == start and len(waiting) == 1


def test_wait_returns_feedback_that_arrives_while_waiting(client, workspace, app_clock):
    """A real wait on the real clock: another thread posts after ~1 s."""
    import threading
    import time

    from chalicelib.wiring import default_context

    default_context().clock = time.time
    _, key = workspace
    doc = publish(client, key)
    _, first = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}", key)
    from chalicelib.models import FeedbackSubmission
    from chalicelib import wiring as registry

    def later():
        time.sleep(1.2)
        registry.feedback().submit(doc["share_id"], FeedbackSubmission(message="late"), "203.0.113.9", None)

    thread = threading.Thread(target=later)
    thread.start()
    began = time.monotonic()
    _, body = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&since={first['since']}&wait=10",
                       key)
    took = time.monotonic() - began
    thread.join()
    assert [f["message"] for f in body["feedback"]] == ["late"]
    assert 1.0 < took < 4


@pytest.mark.parametrize("query", ["wait=26", "wait=-1", "wait=abc", "wait=1.5", "since=bogus", "since=",
                                   "since=eyJsIjoiYWN0aXZpdHkiLCJwIjpbMF19.AAAAAAAAAAAAAAAAAAAAAA"])
def test_bad_wait_and_since_are_422(client, workspace, query):
    _, key = workspace
    status, body = get_json(client, f"/api/v1/feedback?{query}", key)
    assert status == 422, body
    assert body["error"]["code"] == "validation_error"


def test_since_is_bound_to_its_listing_and_workspace(client, workspace, services):
    _, key = workspace
    doc = publish(client, key)
    _, ws_wide = get_json(client, "/api/v1/feedback", key)
    status, _ = get_json(client, f"/api/v1/feedback?document_id={doc['document_id']}&since={ws_wide['since']}", key)
    assert status == 422
    _, other = services.workspaces.create_workspace("Other", "free")
    status, _ = get_json(client, f"/api/v1/feedback?since={ws_wide['since']}", other.api_key)
    assert status == 422


# ------------------------------------------------------------------ MCP

def test_mcp_reply_and_wait(client, workspace):
    from tests.http.test_mcp import call as call_tool

    _, key = workspace
    doc = publish(client, key)
    waited = call_tool(client, key, "wait_for_feedback", {"document_id": doc["document_id"], "timeout_seconds": 0})
    assert not waited.get("isError")
    since = waited["structuredContent"]["since"]
    fid = _fb(client, doc["share_id"], {"message": "Please fix", "anchor": ANCHOR})
    got = call_tool(client, key, "wait_for_feedback", {"document_id": doc["document_id"], "since": since})
    items = got["structuredContent"]["feedback"]
    assert [i["feedback_id"] for i in items] == [fid] and items[0]["anchor"]["quote"] == "the results"
    replied = call_tool(client, key, "reply_to_feedback", {"feedback_id": fid, "message": "Done"})
    assert replied["structuredContent"]["author"] == "owner"
    bad = call_tool(client, key, "wait_for_feedback", {"since": "nope", "timeout_seconds": 0})
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("validation_error:")
    missing = call_tool(client, key, "reply_to_feedback", {"feedback_id": "fb_nothere12345", "message": "x"})
    assert missing["isError"] is True and missing["content"][0]["text"].startswith("not_found:")


# ------------------------------------------------------------------ the same on DynamoDB (moto)

@pytest.mark.aws
def test_threads_and_since_on_dynamodb(client, workspace, app_clock, services):
    test_owner_and_viewer_replies_form_a_thread(client, workspace, app_clock)
    test_viewer_reply_reopens_a_resolved_thread_owner_reply_does_not(client, workspace)
    test_since_returns_new_activity_once(client, workspace, app_clock)
    test_anchor_is_stored_and_fills_quote(client, workspace)


@pytest.mark.aws
def test_deleting_a_document_deletes_threads_and_their_events_on_dynamodb(client, workspace, ctx):
    from tests.helpers import stored_records

    _, key = workspace
    doc = publish(client, key)
    fid = _fb(client, doc["share_id"], {"message": "secret words"})
    assert _reply(client, key, fid, "more secret words").status_code == 201
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).status_code == 204
    assert not [r for _kind, r in stored_records(ctx) if "secret words" in json.dumps(r, default=str)]


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_activity_positions_are_exactly_once(storage, ctx, clock):
    """Port contract: every waking event is returned once across successive calls,
    including one committed late (its time taken before a position was handed out)."""
    from chalicelib.ports.records import Feedback
    from chalicelib.services.events import make_event

    ctx.workspaces.create(Workspace("ws_a", "A", "free", 1))
    from chalicelib.ports.records import Document, Version

    doc = {"document_id": "00000000-0000-4000-8000-000000000001"}
    ctx.documents.create(
        Document(document_id=doc["document_id"], workspace_id="ws_a", title="t", description="",
                 share_id="share000001ws_aaaaaa", created_ms=1, updated_ms=1, version_count=1,
                 latest_version_id="v_1", latest_size=1, open_feedback_count=0),
        Version(version_id="v_1", number=1, note=None, created_ms=1, size_bytes=1,
                blob_key="documents/ws_a/x/v_1.html"), 5, ("pro",), None, None)

    def post(n, at_ms):
        item = Feedback(feedback_id=f"fb_{n:012d}", document_id=doc["document_id"], workspace_id="ws_a",
                        version_id="v_1", version_number=1, message=f"m{n}", status="open", created_ms=at_ms)
        ctx.feedback.create(item, None, make_event("feedback.created", "ws_a", doc["document_id"], at_ms, {},
                                                   feedback_id=item.feedback_id, wakes=True))

    now = ctx.now_ms()
    position = ctx.feedback.activity_head("ws_a", now)
    post(1, now + 1)
    post(2, now + 2)
    events, position = ctx.feedback.activity_since("ws_a", None, position, now + 3, 100)
    assert [e.feedback_id for e in events] == ["fb_000000000001", "fb_000000000002"]
    late_ms = now + 4  # its time is taken now, it commits after the next read
    events, position = ctx.feedback.activity_since("ws_a", None, position, now + 5, 100)
    assert events == []
    post(3, late_ms)
    events, position = ctx.feedback.activity_since("ws_a", doc["document_id"], position, now + 6, 100)
    assert [e.feedback_id for e in events] == ["fb_000000000003"]
    for n in range(4, 9):
        post(n, now + 10 + n)
    got = []
    for _ in range(4):
        events, position = ctx.feedback.activity_since("ws_a", None, position, now + 30, 2)
        got += [e.feedback_id for e in events]
    assert got == [f"fb_{n:012d}" for n in range(4, 9)]
    from chalicelib.ports import BadCursor

    with pytest.raises(BadCursor):
        ctx.feedback.activity_since("ws_a", None, "garbage!", now, 10)
