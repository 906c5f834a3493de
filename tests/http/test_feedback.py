"""Viewer feedback: submission, rate limit, owner listing/paging/isolation, resolve/reopen, delete."""
from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from tests.helpers import auth
from tests.sharing_helpers import (  # noqa: F401  (fixtures)
    FORM, get_json, publish, send_feedback,
)


def _created(response) -> str:
    assert response.status_code == 201, response.body
    body = json.loads(response.body)
    assert list(body) == ["feedback_id"]
    return body["feedback_id"]


def _open_count(client, key, document_id) -> int:
    status, doc = get_json(client, f"/api/v1/documents/{document_id}", key)
    assert status == 200
    return doc["open_feedback_count"]


def _resolve(client, key, feedback_id, body=None):
    return client.http.post(f"/api/v1/feedback/{feedback_id}/resolve", headers=auth(key),
                            body=json.dumps(body) if body is not None else b"")


# ------------------------------------------------------------------ viewers

def test_submit_json_and_form(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    first = _created(send_feedback(client, doc["share_id"], {"message": "Typo in §2", "name": "Ana",
                                                              "quote": "teh results"}))
    r = client.http.post(f"/d/{doc['share_id']}/feedback", headers=FORM,
                         body=urlencode({"message": "Form post ✓", "name": "", "quote": ""}))
    second = _created(r)
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.headers["Cache-Control"] == "private, no-store"
    status, listing = get_json(client, "/api/v1/feedback", key)
    assert status == 200
    by_id = {f["feedback_id"]: f for f in listing["feedback"]}
    assert by_id[first] == {
        "feedback_id": first, "document_id": doc["document_id"], "version_id": doc["version_id"],
        "message": "Typo in §2", "name": "Ana", "quote": "teh results", "status": "open",
        "created_at": by_id[first]["created_at"], "resolved_at": None, "anchor": None, "replies": [],
        "anchor_state": None, "suggestion": None, "resolved_in_version": None,
        "recipient_email": None}
    assert by_id[second]["name"] is None and by_id[second]["quote"] is None
    assert by_id[second]["message"] == "Form post ✓"
    assert _open_count(client, key, doc["document_id"]) == 2
    status, docs = get_json(client, "/api/v1/documents", key)
    assert docs["documents"][0]["open_feedback_count"] == 2


def test_feedback_records_the_version_shown(client, workspace):
    _, key = workspace
    v1 = publish(client, key, "Doc", "<p>one</p>")
    v2 = publish(client, key, "Doc", "<p>two</p>", document_id=v1["document_id"])
    on_old = _created(send_feedback(client, v1["share_id"], {"message": "old"}, query="?v=1"))
    on_latest = _created(send_feedback(client, v1["share_id"], {"message": "new"}))
    _, listing = get_json(client, "/api/v1/feedback", key)
    versions = {f["feedback_id"]: f["version_id"] for f in listing["feedback"]}
    assert versions == {on_old: v1["version_id"], on_latest: v2["version_id"]}
    r = send_feedback(client, v1["share_id"], {"message": "x"}, query="?v=7")
    assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"


@pytest.mark.parametrize("body, status, code", [
    ({}, 422, "validation_error"),
    ({"message": ""}, 422, "validation_error"),
    ({"message": "   "}, 422, "validation_error"),
    ({"message": "x" * 5001}, 422, "validation_error"),
    ({"message": "ok", "name": "n" * 101}, 422, "validation_error"),
    ({"message": "ok", "quote": "q" * 1001}, 422, "validation_error"),
    ({"message": "ok", "email": "a@b.c"}, 422, "validation_error"),
    ({"message": "x" * 5000, "name": "n" * 100, "quote": "q" * 1000}, 201, None),
])
def test_submission_rules(client, workspace, body, status, code):
    _, key = workspace
    doc = publish(client, key)
    r = send_feedback(client, doc["share_id"], body)
    assert r.status_code == status, r.body
    if code:
        assert json.loads(r.body)["error"]["code"] == code


def test_malformed_submissions_get_the_contract_error_body(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    path = f"/d/{doc['share_id']}/feedback"
    r = client.http.post(path, headers={"Content-Type": "application/json"}, body="{not json")
    assert r.status_code == 400 and json.loads(r.body)["error"]["code"] == "invalid_json"
    r = client.http.post(path, headers={"Content-Type": "text/plain"}, body="hello")
    assert r.status_code == 415 and json.loads(r.body)["error"]["code"] == "unsupported_media_type"
    r = send_feedback(client, "AAAAAAAAAAAAAAAAAAAAAA", {"message": "hi"})
    assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    assert _open_count(client, key, doc["document_id"]) == 0


def test_ten_posts_per_ip_per_document_per_ten_minutes(client, workspace, app_clock):
    _, key = workspace
    doc = publish(client, key)
    other = publish(client, key, "Other")
    for i in range(10):
        assert send_feedback(client, doc["share_id"], {"message": "" if i == 3 else "spam"}).status_code in (201, 422)
        if i == 3:  # a refused post (422) does not use a slot
            _created(send_feedback(client, doc["share_id"], {"message": "fixed"}))
        app_clock.advance(1)
    r = send_feedback(client, doc["share_id"], {"message": "one too many"})
    assert r.status_code == 429
    error = json.loads(r.body)["error"]
    assert error["code"] == "rate_limited"
    retry = int(r.headers["Retry-After"])
    assert error["details"] == {"retry_after_seconds": retry}
    assert 590 <= retry <= 600
    assert _open_count(client, key, doc["document_id"]) == 10  # the refused post stored nothing
    _created(send_feedback(client, other["share_id"], {"message": "separate budget"}))
    app_clock.advance(retry)
    _created(send_feedback(client, doc["share_id"], {"message": "a slot freed"}))
    assert send_feedback(client, doc["share_id"], {"message": "full again"}).status_code == 429


def test_limit_is_per_client_ip(ctx, client, workspace):
    from chalicelib.errors import RateLimited
    from chalicelib.models import FeedbackSubmission
    from chalicelib.services.feedback import FeedbackService

    _, key = workspace
    doc = publish(client, key)
    service = FeedbackService(ctx)
    note = FeedbackSubmission(message="hi")
    for _ in range(10):
        service.submit(doc["share_id"], note, "198.51.100.1", None)
    with pytest.raises(RateLimited):
        service.submit(doc["share_id"], note, "198.51.100.1", None)
    assert service.submit(doc["share_id"], note, "198.51.100.2", None).feedback_id
    # The IP is kept only as a keyed hash in the rate log's key.
    from tests.helpers import stored_records

    items = stored_records(ctx)
    assert any(kind == "rate_logs" for kind, _ in items)
    assert not any("198.51.100" in json.dumps(i) for i in items)


# ------------------------------------------------------------------ owners: listing

@pytest.fixture
def many(client, workspace, app_clock):
    """Two documents with 25 and 3 feedback messages, one second apart."""
    _, key = workspace
    a = publish(client, key, "A")
    b = publish(client, key, "B")
    ids = []
    for i in range(25):
        # Spread over many "addresses" by moving the clock past the window now and then.
        if i and i % 10 == 0:
            app_clock.advance(601)
        ids.append((a["document_id"], _created(send_feedback(client, a["share_id"], {"message": f"a{i}"}))))
        app_clock.advance(1)
    for i in range(3):
        ids.append((b["document_id"], _created(send_feedback(client, b["share_id"], {"message": f"b{i}"}))))
        app_clock.advance(1)
    return key, a, b, ids


def _all_pages(client, key, query):
    seen, cursor, pages = [], None, 0
    while True:
        path = "/api/v1/feedback?" + urlencode({**query, **({"cursor": cursor} if cursor else {})})
        status, body = get_json(client, path, key)
        assert status == 200, body
        assert len(body["feedback"]) <= int(query.get("limit", 20))
        seen.extend(body["feedback"])
        pages += 1
        cursor = body["next_cursor"]
        if not cursor:
            return seen, pages


def test_list_is_newest_first_and_pages_without_gaps(client, many):
    key, a, b, ids = many
    items, pages = _all_pages(client, key, {"limit": 10})
    assert pages == 3
    assert [f["feedback_id"] for f in items] == [fid for _, fid in reversed(ids)]
    status, first = get_json(client, "/api/v1/feedback", key)
    assert len(first["feedback"]) == 20 and first["next_cursor"]
    per_doc, _ = _all_pages(client, key, {"document_id": a["document_id"], "limit": 7})
    assert [f["message"] for f in per_doc] == [f"a{i}" for i in reversed(range(25))]
    status, only_b = get_json(client, f"/api/v1/feedback?document_id={b['document_id']}", key)
    assert [f["message"] for f in only_b["feedback"]] == ["b2", "b1", "b0"]
    assert only_b["next_cursor"] is None


def test_status_filter(client, many):
    key, a, b, ids = many
    resolved = {fid for _, fid in ids[::4]}
    for fid in resolved:
        assert _resolve(client, key, fid, {"resolved": True}).status_code == 200
    open_items, _ = _all_pages(client, key, {"limit": 4})  # default status: open
    assert {f["feedback_id"] for f in open_items} == {fid for _, fid in ids} - resolved
    done, _ = _all_pages(client, key, {"status": "resolved", "limit": 3})
    assert {f["feedback_id"] for f in done} == resolved
    assert all(f["status"] == "resolved" and f["resolved_at"] for f in done)
    everything, _ = _all_pages(client, key, {"status": "all", "limit": 100})
    assert len(everything) == 28
    assert _open_count(client, key, a["document_id"]) + _open_count(client, key, b["document_id"]) == 28 - len(resolved)


def test_list_query_errors(client, many):
    key, a, _, _ = many
    for query in ("status=closed", "limit=0", "limit=101", "document_id=nope", "cursor=%%%", "foo=1",
                  "cursor=eyJ4IjoxfQ"):
        status, body = get_json(client, f"/api/v1/feedback?{query}", key)
        assert status == 422, query
        assert body["error"]["code"] == "validation_error"
    # A cursor from one listing cannot be replayed against another.
    _, page = get_json(client, f"/api/v1/feedback?limit=2&document_id={a['document_id']}", key)
    status, body = get_json(client, f"/api/v1/feedback?limit=2&cursor={page['next_cursor']}", key)
    assert status == 422
    unknown = "00000000-0000-4000-8000-000000000000"
    status, body = get_json(client, f"/api/v1/feedback?document_id={unknown}", key)
    assert status == 404 and body["error"]["code"] == "not_found"
    assert client.http.get("/api/v1/feedback").status_code == 401


def test_workspaces_are_isolated(client, services, many):
    key, a, _, ids = many
    _, other = services.workspaces.create_workspace("Other", "free")
    other_key = other.api_key
    status, body = get_json(client, "/api/v1/feedback?status=all", other_key)
    assert status == 200 and body["feedback"] == [] and body["next_cursor"] is None
    status, body = get_json(client, f"/api/v1/feedback?document_id={a['document_id']}", other_key)
    assert status == 404
    r = _resolve(client, other_key, ids[0][1], {"resolved": True})
    assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    _, mine = get_json(client, "/api/v1/feedback?limit=2", key)
    status, body = get_json(client, f"/api/v1/feedback?cursor={mine['next_cursor']}", other_key)
    assert status == 422  # another workspace's cursor is refused, not followed


# ------------------------------------------------------------------ owners: resolve

def test_resolve_and_reopen_keep_the_count_exact(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    one = _created(send_feedback(client, doc["share_id"], {"message": "one"}))
    _created(send_feedback(client, doc["share_id"], {"message": "two"}))
    assert _open_count(client, key, doc["document_id"]) == 2
    r = _resolve(client, key, one)  # empty body: resolved defaults to true
    assert r.status_code == 200
    body = json.loads(r.body)
    assert body["status"] == "resolved" and body["resolved_at"] and body["feedback_id"] == one
    assert _open_count(client, key, doc["document_id"]) == 1
    assert _resolve(client, key, one, {"resolved": True}).status_code == 200  # repeat: no change
    assert _open_count(client, key, doc["document_id"]) == 1
    r = _resolve(client, key, one, {"resolved": False})
    body = json.loads(r.body)
    assert r.status_code == 200 and body["status"] == "open" and body["resolved_at"] is None
    assert _open_count(client, key, doc["document_id"]) == 2
    assert _resolve(client, key, one, {"resolved": False}).status_code == 200
    assert _open_count(client, key, doc["document_id"]) == 2


def test_resolve_errors(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    fid = _created(send_feedback(client, doc["share_id"], {"message": "one"}))
    assert _resolve(client, key, "fb_unknown", {"resolved": True}).status_code == 404
    r = _resolve(client, key, fid, {"resolved": True, "why": "x"})
    assert r.status_code == 422
    r = _resolve(client, key, fid, {"resolved": "maybe"})
    assert r.status_code == 422
    r = client.http.post(f"/api/v1/feedback/{fid}/resolve", headers=auth(key), body="[1]")
    assert r.status_code == 400
    assert client.http.get(f"/api/v1/feedback/{fid}/resolve", headers=auth(key)).status_code == 405
    assert _open_count(client, key, doc["document_id"]) == 1


def test_concurrent_resolves_do_not_drift(ctx, client, workspace):
    """Two resolvers that both read `open`: only one transaction can move the count."""
    from chalicelib.ports import FeedbackGone

    _, key = workspace
    doc = publish(client, key)
    fid = _created(send_feedback(client, doc["share_id"], {"message": "race"}))
    stale = ctx.feedback.get(fid)
    ctx.feedback.set_status(stale, True, ctx.now_ms())
    with pytest.raises(FeedbackGone):
        ctx.feedback.set_status(stale, True, ctx.now_ms())
    assert _open_count(client, key, doc["document_id"]) == 0


def test_deleting_a_document_deletes_its_feedback(ctx, client, workspace):

    _, key = workspace
    doc = publish(client, key)
    keep = publish(client, key, "Keep")
    gone = [_created(send_feedback(client, doc["share_id"], {"message": f"m{i}"})) for i in range(3)]
    kept = _created(send_feedback(client, keep["share_id"], {"message": "stays"}))
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).status_code == 204
    _, listing = get_json(client, "/api/v1/feedback?status=all", key)
    assert [f["feedback_id"] for f in listing["feedback"]] == [kept]
    for fid in gone:
        assert ctx.feedback.get(fid) is None
        assert _resolve(client, key, fid).status_code == 404
    from tests.helpers import stored_records

    leftovers = [(kind, record) for kind, record in stored_records(ctx) if doc["document_id"] in json.dumps(record)]
    # Only per-IP rate logs may remain (keyed by IP hash, they expire on their own), and the
    # document's own webhook events (document.published / document.deleted: the outbox
    # delivers them, they are forgotten after 30 days); no feedback text anywhere; the activity log's lines
    # saying who published and deleted it (kept 90 days).
    assert leftovers and {k for k, _ in leftovers} <= {"rate_logs", "events", "activity"}
    assert {r["type"] for k, r in leftovers if k == "events"} <= {"document.published", "document.deleted"}
    assert not [r for _k, r in stored_records(ctx) if '"m1"' in json.dumps(r) or '\\"m1\\"' in json.dumps(r)]
    assert send_feedback(client, doc["share_id"], {"message": "late"}).status_code == 404


def test_feedback_on_a_document_being_deleted_is_refused(ctx, client, workspace):
    """The submission transaction checks the document is not being deleted."""
    from chalicelib.models import FeedbackSubmission
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.errors import NotFound

    _, key = workspace
    doc = publish(client, key)
    item = ctx.documents.get(doc["document_id"])
    service = FeedbackService(ctx)
    access = service.sharing.access(doc["share_id"])  # a viewer resolved the link...
    ctx.documents.begin_delete(item)  # ...then the owner started deleting it
    service.sharing.access = lambda *_a, **_k: access
    with pytest.raises(NotFound):
        service.submit(doc["share_id"], FeedbackSubmission(message="late"), "198.51.100.1", None)


def test_cross_site_posts_are_refused(client, ctx, workspace):
    """A third-party page (or the sandboxed document itself) cannot post the viewer forms."""
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key
    from chalicelib.services.documents import DocumentService

    _, key = workspace
    doc = DocumentService(ctx).publish(credentials_from_key(key), PublishRequest(title="t", html="<p/>")).response
    path = "/d/" + doc.share_url.rsplit("/", 1)[1]
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}, {"Origin": "null"}):
        r = client.http.post(path + "/feedback", headers={**form, **headers}, body="message=spam")
        assert r.status_code == 403, headers
        assert json.loads(r.body)["error"]["code"] == "forbidden"
        assert client.http.post(path + "/unlock", headers={**form, **headers}, body="passphrase=x").status_code == 403
    same = client.http.post(path + "/feedback", headers={**form, "Sec-Fetch-Site": "same-origin",
                                                         "Origin": "http://127.0.0.1:8000"}, body="message=ok")
    assert same.status_code == 201
    scripted = client.http.post(path + "/feedback", headers={"Content-Type": "application/json"},
                                body=json.dumps({"message": "from a script"}))
    assert scripted.status_code == 201
