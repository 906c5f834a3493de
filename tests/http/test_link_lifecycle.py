"""Link lifecycle (issue 18): expiry, disable and rotate, through REST, MCP and the
share pages, with time injected (FakeClock). Edge coherence (issue 19) is in
tests/http/test_cdn.py."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.helpers import post_json
from tests.sharing_helpers import cookie_of, get_json, send_feedback, set_passphrase, unlock

HOUR = 3600


class RecordingCdn:
    """A CDN that remembers what it was told to drop."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def invalidate(self, paths):
        self.calls.append(list(paths))


@pytest.fixture
def cdn():
    return RecordingCdn()


@pytest.fixture(params=["aws", "sqlite"])
def app(request, aws, clock, cdn, monkeypatch, tmp_path):
    """chalice.test.Client whose services run on the fake clock and the recording CDN,
    on each storage adapter (DynamoDB + S3 in moto, SQLite + files)."""
    from chalice.test import Client

    from app import app as chalice_app
    from chalicelib.wiring import build_repositories
    from chalicelib.adapters.sqlite import repositories
    from chalicelib import wiring
    from chalicelib.services.context import Context

    repos = build_repositories("aws") if request.param == "aws" else repositories(tmp_path / "data", shared=False)
    context = Context(repos=repos, clock=clock, cdn=cdn)
    wiring.reset()
    monkeypatch.setattr(wiring, "default_context", lambda: context)
    with Client(chalice_app) as test_client:
        test_client.context = context
        yield test_client
    wiring.reset()


@pytest.fixture
def key(app):
    from chalicelib import wiring

    _, created = wiring.workspaces().create_workspace("Links", "pro")
    return created.api_key


def at(clock, seconds: float) -> str:
    """RFC 3339 of the fake clock's now + seconds."""
    return datetime.fromtimestamp(clock.now + seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def publish(app, key, **fields) -> dict:
    body = {"title": "Doc", "html": "<p>hello</p>", **fields}
    r = post_json(app, "/api/v1/publish", body, key)
    assert r.status_code == 200, r.body
    doc = json.loads(r.body)
    doc["share_id"] = doc["share_url"].rsplit("/", 1)[1]
    return doc


def patch(app, key, document_id, body):
    return app.http.patch(f"/api/v1/documents/{document_id}", body=json.dumps(body),
                          headers={"X-Api-Key": key, "Content-Type": "application/json"})


def rotate(app, key, document_id):
    return app.http.post(f"/api/v1/documents/{document_id}/share/rotate", headers={"X-Api-Key": key})


def wrapper(app, doc, **headers):
    return app.http.get(f"/d/{doc['share_id']}", headers=headers)


def content(app, doc, **headers):
    return app.http.get(f"/d/{doc['share_id']}/v/{doc['version_id']}", headers=headers)


def document(app, key, document_id) -> dict:
    status, body = get_json(app, f"/api/v1/documents/{document_id}", key)
    assert status == 200, body
    return body


# ------------------------------------------------------------------ expiry

def test_expiry_before_at_and_after_on_wrapper_and_content(app, key, clock):
    doc = publish(app, key, share_expires_at=at(clock, HOUR))
    assert document(app, key, doc["document_id"])["share_expires_at"] == at(clock, HOUR)

    # Before: served, and no cache may keep it past the expiry.
    assert wrapper(app, doc).status_code == 200
    assert content(app, doc).headers["Cache-Control"] == "public, max-age=60, s-maxage=60"
    clock.advance(HOUR - 25)
    page, body = wrapper(app, doc), content(app, doc)
    assert page.status_code == 200 and body.status_code == 200
    assert page.headers["Cache-Control"] == "public, max-age=0, s-maxage=25"
    assert body.headers["Cache-Control"] == "public, max-age=25, s-maxage=25"
    clock.advance(24.5)  # half a second left: nothing may be cached any more
    assert content(app, doc).headers["Cache-Control"] == "public, max-age=0, s-maxage=0"

    # At the expiry instant and after: 410 with the friendly page, on both addresses.
    clock.advance(0.5)
    for _ in range(2):
        for answer in (wrapper(app, doc), content(app, doc), app.http.get(f"/d/{doc['share_id']}?v=1")):
            assert answer.status_code == 410
            assert "This link has expired" in answer.body.decode()
            assert answer.headers["Content-Type"].startswith("text/html")
            assert answer.headers["Cache-Control"] == "public, max-age=0, s-maxage=60"
        clock.advance(HOUR * 24)
    # Feedback on an expired link: the contract's JSON error.
    r = send_feedback(app, doc["share_id"], {"message": "still there?"})
    assert r.status_code == 410 and json.loads(r.body)["error"]["code"] == "gone"
    # The owner still reads the document through the API.
    assert document(app, key, doc["document_id"])["title"] == "Doc"


def test_expired_protected_link_shows_expiry_not_the_unlock_form(app, key, clock):
    doc = publish(app, key, share_expires_at=at(clock, 60))
    assert set_passphrase(app, key, doc["document_id"], "correct horse battery").status_code == 204
    clock.advance(60)
    page = wrapper(app, doc)
    assert page.status_code == 410 and "passphrase" not in page.body.decode().lower()
    assert unlock(app, doc["share_id"], "correct horse battery").status_code == 410


def test_expiry_can_be_moved_and_cleared_with_patch(app, key, clock):
    doc = publish(app, key)
    assert document(app, key, doc["document_id"])["share_expires_at"] is None
    r = patch(app, key, doc["document_id"], {"share_expires_at": at(clock, 120)})
    assert r.status_code == 200 and json.loads(r.body)["share_expires_at"] == at(clock, 120)
    clock.advance(120)
    assert wrapper(app, doc).status_code == 410
    # Moving it later revives the link; null clears it for good.
    r = patch(app, key, doc["document_id"], {"share_expires_at": at(clock, 60)})
    assert r.status_code == 200 and wrapper(app, doc).status_code == 200
    r = patch(app, key, doc["document_id"], {"share_expires_at": None})
    assert r.status_code == 200 and json.loads(r.body)["share_expires_at"] is None
    clock.advance(400 * 24 * HOUR)
    assert wrapper(app, doc).status_code == 200
    assert wrapper(app, doc).headers["Cache-Control"] == "public, max-age=0, s-maxage=60"


def test_a_new_version_can_set_the_expiry_and_keeps_it_otherwise(app, key, clock):
    doc = publish(app, key)
    publish(app, key, document_id=doc["document_id"], share_expires_at=at(clock, 300))
    publish(app, key, document_id=doc["document_id"], html="<p>v3</p>")  # says nothing: kept
    assert document(app, key, doc["document_id"])["share_expires_at"] == at(clock, 300)


def test_offsets_are_normalised_to_utc(app, key, clock):
    later = datetime.fromtimestamp(clock.now + HOUR, tz=timezone(timedelta(hours=2)))
    doc = publish(app, key, share_expires_at=later.isoformat())
    assert document(app, key, doc["document_id"])["share_expires_at"] == at(clock, HOUR)


@pytest.mark.parametrize("value, message", [
    (("in", -1), "must be in the future"),
    (("in", 0), "must be in the future"),  # "at" is already expired
    (("in", 366 * 24 * HOUR + 1), "at most 366 days"),
    ("tomorrow", "RFC 3339"),
    ("2026-12-01T10:00:00", "RFC 3339"),  # no time zone
    ("2026-02-30T10:00:00Z", "RFC 3339"),
    (12345, "string"),
    (True, "string"),
    ("0154-05-10T21:30:32.796722Z", "must be in the future"),  # found by schemathesis: was a 500
    ("0001-01-01T00:00:00+05:00", "RFC 3339"),  # before year 1 in UTC
    ("9999-12-31T23:59:59-05:00", "RFC 3339"),  # after year 9999 in UTC
])
def test_bad_expiry_is_a_422_naming_the_field(app, key, clock, value, message):
    raw = at(clock, value[1]) if isinstance(value, tuple) else value
    doc = publish(app, key)
    for r in (post_json(app, "/api/v1/publish", {"title": "t", "html": "<p>x</p>", "share_expires_at": raw}, key),
              patch(app, key, doc["document_id"], {"share_expires_at": raw})):
        assert r.status_code == 422, r.body
        error = json.loads(r.body)["error"]
        assert error["code"] == "validation_error"
        assert error["details"]["fields"][0]["field"] == "share_expires_at"
        assert message in json.dumps(error)
    assert document(app, key, doc["document_id"])["share_expires_at"] is None  # nothing changed


def test_expiry_366_days_ahead_is_accepted(app, key, clock):
    doc = publish(app, key, share_expires_at=at(clock, 366 * 24 * HOUR))
    assert document(app, key, doc["document_id"])["share_expires_at"] == at(clock, 366 * 24 * HOUR)


# ------------------------------------------------------------------ disable

def test_disabled_link_is_404_and_the_document_stays(app, key):
    doc = publish(app, key)
    fb = send_feedback(app, doc["share_id"], {"message": "first"})
    assert fb.status_code == 201
    r = patch(app, key, doc["document_id"], {"share_enabled": False})
    assert r.status_code == 200 and json.loads(r.body)["share_enabled"] is False
    for answer in (wrapper(app, doc), content(app, doc), app.http.get(f"/d/{doc['share_id']}?v=1")):
        assert answer.status_code == 404
    assert send_feedback(app, doc["share_id"], {"message": "x"}).status_code == 404
    owner = document(app, key, doc["document_id"])
    assert owner["share_enabled"] is False and owner["open_feedback_count"] == 1
    status, listed = get_json(app, "/api/v1/documents", key)
    assert listed["documents"][0]["share_enabled"] is False
    # Back on: the same link works again.
    assert patch(app, key, doc["document_id"], {"share_enabled": True}).status_code == 200
    assert wrapper(app, doc).status_code == 200 and content(app, doc).status_code == 200


def test_publish_can_create_a_disabled_link(app, key):
    doc = publish(app, key, share_enabled=False)
    assert wrapper(app, doc).status_code == 404
    assert document(app, key, doc["document_id"])["share_enabled"] is False


@pytest.mark.parametrize("body", [{"share_enabled": "no"}, {"share_enabled": None}, {"share_enabled": 0}])
def test_share_enabled_must_be_a_boolean(app, key, body):
    doc = publish(app, key)
    r = patch(app, key, doc["document_id"], body)
    if body["share_enabled"] is None:  # null is "not given": nothing else to change either
        assert r.status_code == 422
    else:
        assert r.status_code == 422 and "share_enabled" in r.body.decode()


# ------------------------------------------------------------------ rotate

def test_rotate_gives_a_new_link_the_old_one_is_404_at_once_feedback_kept(app, key):
    doc = publish(app, key)
    assert send_feedback(app, doc["share_id"], {"message": "keep me"}).status_code == 201
    r = rotate(app, key, doc["document_id"])
    assert r.status_code == 200, r.body
    new_url = json.loads(r.body)["share_url"]
    assert set(json.loads(r.body)) == {"share_url"}
    new = {**doc, "share_id": new_url.rsplit("/", 1)[1]}
    assert new["share_id"] != doc["share_id"] and len(new["share_id"]) == len(doc["share_id"])
    assert wrapper(app, doc).status_code == 404 and content(app, doc).status_code == 404
    assert wrapper(app, new).status_code == 200 and content(app, new).status_code == 200
    owner = document(app, key, doc["document_id"])
    assert owner["share_url"] == new_url and owner["open_feedback_count"] == 1
    status, feedback = get_json(app, f"/api/v1/feedback?document_id={doc['document_id']}", key)
    assert [f["message"] for f in feedback["feedback"]] == ["keep me"]
    # Feedback on the new link lands on the same document.
    assert send_feedback(app, new["share_id"], {"message": "again"}).status_code == 201
    # A new version keeps the new link.
    assert publish(app, key, document_id=doc["document_id"])["share_url"] == new_url


def test_rotate_of_a_protected_link_needs_a_new_unlock(app, key):
    doc = publish(app, key)
    assert set_passphrase(app, key, doc["document_id"], "correct horse battery").status_code == 204
    cookie = cookie_of(unlock(app, doc["share_id"], "correct horse battery"))
    new_id = json.loads(rotate(app, key, doc["document_id"]).body)["share_url"].rsplit("/", 1)[1]
    page = app.http.get(f"/d/{new_id}", headers={"Cookie": cookie})
    # The cookie was scoped to the old path; the new link asks again (and is never public).
    assert page.status_code == 200 and page.headers["Cache-Control"] == "private, no-store"
    assert unlock(app, new_id, "correct horse battery").status_code == 303


def test_rotate_unknown_or_foreign_document_is_404(app, key):
    from chalicelib import wiring

    doc = publish(app, key)
    _, other = wiring.workspaces().create_workspace("Other", "free")
    for who, document_id in ((other.api_key, doc["document_id"]),
                             (key, "00000000-0000-4000-8000-000000000000"), (key, "nope")):
        r = rotate(app, who, document_id)
        assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    assert rotate(app, "", doc["document_id"]).status_code == 401
    assert wrapper(app, doc).status_code == 200  # untouched


def test_rotate_after_delete_is_404(app, key):
    doc = publish(app, key)
    assert app.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).status_code == 204
    assert rotate(app, key, doc["document_id"]).status_code == 404


def test_concurrent_rotations_leave_exactly_one_working_link(app, key):
    from chalicelib import wiring
    from chalicelib.services.auth import credentials_from_headers
    from tests.helpers import run_together

    doc = publish(app, key)
    sharing = wiring.sharing()
    who = credentials_from_headers({"x-api-key": key})
    results, failures = run_together([lambda: sharing.rotate(who, doc["document_id"]) for _ in range(5)])
    assert not failures, failures
    current = document(app, key, doc["document_id"])["share_url"]
    working = [r.share_url for r in results if wrapper(app, {"share_id": r.share_url.rsplit("/", 1)[1]})
               .status_code == 200]
    assert working == [current]
    assert wrapper(app, doc).status_code == 404


# ------------------------------------------------------------------ MCP

def test_mcp_rotate_and_link_settings(app, key, clock):
    from tests.http.test_mcp import call

    doc = publish(app, key)
    result = call(app, key, "update_document", {"document_id": doc["document_id"], "share_enabled": False,
                                                "share_expires_at": at(clock, HOUR)})
    assert not result.get("isError"), result
    assert result["structuredContent"]["share_enabled"] is False
    assert result["structuredContent"]["share_expires_at"] == at(clock, HOUR)
    result = call(app, key, "update_document", {"document_id": doc["document_id"], "share_enabled": True,
                                                "share_expires_at": None})
    assert result["structuredContent"]["share_expires_at"] is None
    assert result["structuredContent"]["share_enabled"] is True
    rotated = call(app, key, "rotate_share_link", {"document_id": doc["document_id"]})
    assert not rotated.get("isError"), rotated
    assert wrapper(app, doc).status_code == 404
    assert document(app, key, doc["document_id"])["share_url"] == rotated["structuredContent"]["share_url"]
    bad = call(app, key, "publish_document", {"title": "t", "html": "<p>x</p>",
                                              "share_expires_at": at(clock, -5)})
    assert bad["isError"] and bad["content"][0]["text"].startswith("validation_error")
    made = call(app, key, "publish_document", {"title": "t", "html": "<p>x</p>", "share_expires_at": "never"})
    assert not made.get("isError"), made
