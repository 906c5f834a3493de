"""Reviews over REST and MCP (contract 7e): POST/GET /documents/:id/reviews, review
requests (mailed through the outbox), review_state on documents and list items, the
list filter, waiting for a decision, bad input in the contract's error shape."""
from __future__ import annotations

import json

import pytest

from chalicelib.ports.records import Member, User
from tests.helpers import post_json
from tests.sharing_helpers import get_json, publish

ANA = "ana@example.com"


@pytest.fixture
def team(client, workspace):
    """The workspace's key and a member, Ana (a viewer)."""
    from chalicelib import wiring

    ws, key = workspace
    ctx = wiring.default_context()
    ctx.users.create(User(email=ANA, password_hash="x", workspace_id=ws.id, created_ms=1))
    ctx.people.add_member(Member(workspace_id=ws.id, email=ANA, role="viewer", created_ms=1))
    return key


def review(client, key, document_id, body):
    return post_json(client, f"/api/v1/documents/{document_id}/reviews", body, key)


def error_of(response):
    return json.loads(response.body)["error"]


def test_review_answers_201_and_the_state_shows_everywhere(client, team):
    key = team
    doc = publish(client, key)
    _, detail = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert detail["review_state"] == "none"
    r = review(client, key, doc["document_id"], {"decision": "changes_requested", "message": "Shorter, please."})
    assert r.status_code == 201, r.body
    made = json.loads(r.body)
    assert set(made) == {"review_id", "document_id", "version_number", "decision", "message", "reviewer",
                         "created_at"}
    assert made["version_number"] == 1 and made["reviewer"]["kind"] == "key" and "email" not in made["reviewer"]
    _, listed = get_json(client, f"/api/v1/documents/{doc['document_id']}/reviews", key)
    assert set(listed) == {"reviews", "review_state", "since"}
    assert listed["review_state"] == "changes_requested" and listed["reviews"] == [made]
    _, detail = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert detail["review_state"] == "changes_requested"
    _, documents = get_json(client, "/api/v1/documents", key)
    assert documents["documents"][0]["review_state"] == "changes_requested"
    _, filtered = get_json(client, "/api/v1/documents?review_state=approved", key)
    assert filtered["documents"] == []
    _, filtered = get_json(client, "/api/v1/documents?review_state=changes_requested", key)
    assert [d["document_id"] for d in filtered["documents"]] == [doc["document_id"]]
    # a new version returns it to pending
    publish(client, key, html="<p>shorter</p>", document_id=doc["document_id"])
    _, detail = get_json(client, f"/api/v1/documents/{doc['document_id']}", key)
    assert detail["review_state"] == "pending"


@pytest.mark.parametrize("body, field", [
    ({"decision": "lgtm"}, "decision"),
    ({}, "decision"),
    ({"decision": "approved", "message": "x" * 5001}, "message"),
    ({"decision": "approved", "version_number": 0}, "version_number"),
    ({"decision": "approved", "verdict": "yes"}, "verdict"),
])
def test_bad_reviews_are_422_naming_the_field(client, team, body, field):
    doc = publish(client, team)
    r = review(client, team, doc["document_id"], body)
    assert r.status_code == 422, r.body
    error = error_of(r)
    assert error["code"] == "validation_error" and error["details"]["fields"][0]["field"] == field


def test_a_review_of_a_deleted_or_unknown_version_is_404(client, team):
    doc = publish(client, team)
    for n in range(2):
        publish(client, team, html=f"<p>v{n + 2}</p>", document_id=doc["document_id"])
    _, detail = get_json(client, f"/api/v1/documents/{doc['document_id']}", team)
    client.http.delete(f"/api/v1/documents/{doc['document_id']}/versions/{detail['versions'][0]['version_id']}",
                       headers={"X-Api-Key": team})
    for number in (1, 4):
        r = review(client, team, doc["document_id"], {"decision": "approved", "version_number": number})
        assert r.status_code == 404 and error_of(r)["code"] == "not_found", r.body
    assert review(client, team, doc["document_id"], {"decision": "approved", "version_number": 2}).status_code == 201
    r = review(client, team, "00000000-0000-4000-8000-000000000000", {"decision": "approved"})
    assert r.status_code == 404


def test_review_requests_mail_members_through_the_outbox(client, team):
    from chalicelib import config
    from chalicelib.adapters.mail.outbox import read_outbox

    doc = publish(client, team, title="Launch plan")
    r = post_json(client, f"/api/v1/documents/{doc['document_id']}/review-requests",
                  {"reviewers": ["ANA@example.com"], "message": "Numbers on page 2?"}, team)
    assert r.status_code == 202, r.body
    assert json.loads(r.body) == {"requested": [ANA]}
    sent = read_outbox(config.outbox_dir(), limit=5)
    mail = next(m for m in sent if m["to"] == ANA and m["kind"] == "review")
    assert mail["subject"] == "Review requested: Launch plan"
    assert any(link.startswith(doc["share_url"]) for link in mail["links"])
    _, listed = get_json(client, f"/api/v1/documents/{doc['document_id']}/reviews", team)
    assert listed["review_state"] == "pending" and listed["reviews"] == []


@pytest.mark.parametrize("reviewers, field", [
    ([], "reviewers"),
    ([f"p{n}@example.com" for n in range(21)], "reviewers"),
    ([ANA, "not an email"], "reviewers.1"),
    ([ANA, "stranger@example.org"], "reviewers.1"),  # not a member (recipients: 7f)
    ("ana@example.com", "reviewers"),
])
def test_bad_review_requests_are_422_naming_the_field(client, team, reviewers, field):
    doc = publish(client, team)
    r = post_json(client, f"/api/v1/documents/{doc['document_id']}/review-requests", {"reviewers": reviewers}, team)
    assert r.status_code == 422, r.body
    error = error_of(r)
    assert error["code"] == "validation_error" and error["details"]["fields"][0]["field"] == field
    if reviewers == [ANA, "stranger@example.org"]:
        assert "stranger@example.org" in error["message"]


def test_waiting_for_a_review_answers_with_the_decision(client, team, app_clock, monkeypatch):
    from chalicelib.wiring import default_context

    monkeypatch.setattr(default_context(), "sleep", app_clock.advance)
    doc = publish(client, team)
    path = f"/api/v1/documents/{doc['document_id']}/reviews"
    _, start = get_json(client, path, team)
    _, quiet = get_json(client, f"{path}?since={start['since']}&wait=2", team)
    assert quiet == {"review_state": "none", "reviews": [], "feedback": [], "since": quiet["since"]}
    made = json.loads(review(client, team, doc["document_id"], {"decision": "approved"}).body)
    _, woke = get_json(client, f"{path}?since={quiet['since']}&wait=25", team)
    assert woke["review_state"] == "approved" and woke["reviews"] == [made] and woke["feedback"] == []
    for query, field in (("wait=26", "wait"), ("wait=x", "wait"), ("since=forged", "since")):
        r = client.http.get(f"{path}?{query}", headers={"X-Api-Key": team})
        assert r.status_code == 422 and error_of(r)["details"]["fields"][0]["field"] == field, r.body


def test_webhooks_take_the_review_events(client, team):
    r = post_json(client, "/api/v1/webhooks", {"url": "https://hooks.example.com/docpub", "events": [
        "review.requested", "review.approved", "review.changes_requested", "feedback.created"]}, team)
    assert r.status_code == 201, r.body
    assert json.loads(r.body)["events"][:3] == ["review.requested", "review.approved", "review.changes_requested"]


def test_mcp_tools_request_review_submit_and_wait(client, team, app_clock, monkeypatch):
    from chalicelib.wiring import default_context
    from tests.http.test_mcp import call

    monkeypatch.setattr(default_context(), "sleep", app_clock.advance)
    doc = publish(client, team)
    asked = call(client, team, "request_review", {"document_id": doc["document_id"], "reviewers": [ANA]})
    assert not asked.get("isError"), asked
    assert asked["structuredContent"] == {"requested": [ANA]}
    waited = call(client, team, "wait_for_review", {"document_id": doc["document_id"], "timeout_seconds": 0})
    assert waited["structuredContent"]["review_state"] == "pending"
    assert waited["structuredContent"]["reviews"] == [] and waited["structuredContent"]["feedback"] == []
    since = waited["structuredContent"]["since"]
    made = call(client, team, "submit_review", {"document_id": doc["document_id"], "decision": "approved"})
    assert made["structuredContent"]["decision"] == "approved"
    waited = call(client, team, "wait_for_review", {"document_id": doc["document_id"], "since": since})
    assert waited["structuredContent"]["review_state"] == "approved"
    assert [r["review_id"] for r in waited["structuredContent"]["reviews"]] == [made["structuredContent"]["review_id"]]
    listed = call(client, team, "list_reviews", {"document_id": doc["document_id"]})
    assert listed["structuredContent"]["review_state"] == "approved"
    bad = call(client, team, "submit_review", {"document_id": doc["document_id"], "decision": "lgtm"})
    assert bad["isError"] and bad["content"][0]["text"].startswith("validation_error: decision")
    too_many = call(client, team, "request_review", {"document_id": doc["document_id"],
                                                      "reviewers": [f"p{n}@example.com" for n in range(21)]})
    assert too_many["isError"] and too_many["content"][0]["text"].startswith("validation_error: reviewers")
    docs = call(client, team, "list_documents", {"review_state": "approved"})
    assert [d["document_id"] for d in docs["structuredContent"]["documents"]] == [doc["document_id"]]


# ------------------------------------------------------------------ the share page (members signed in)

def test_a_signed_in_member_reviews_on_the_share_page(client, signed_in_owner):
    from tests.dashboard_client import DashboardClient

    owner, key = signed_in_owner
    doc = publish(client, key)
    share = doc["share_id"]
    page = owner.get(f"/d/{share}")
    assert page.status == 200 and 'id="rvw-form"' in page.text
    assert f'action="/d/{share}/reviews?v=1"' in page.text
    assert f"/dashboard/open?share={share}&amp;v=1&amp;review=1" in page.text  # sign in to review
    # Not signed in through the link yet: the panel offers the sign-in, a post is 401.
    stranger = DashboardClient(client)
    panel = json.loads(stranger.get(f"/d/{share}/review").text)
    assert panel == {"reviewer": None, "review_state": "none", "version_number": 1}
    refused = stranger.post(f"/d/{share}/reviews", {"decision": "approved"})
    assert refused.status == 401 and json.loads(refused.text)["error"]["code"] == "unauthorized"
    # The member signs in (here: already) and comes back with a pass for this link.
    opened = owner.get(f"/dashboard/open?share={share}&v=1&review=1")
    assert opened.status == 303 and opened.location == f"/d/{share}?v=1#review"
    panel = json.loads(owner.get(f"/d/{share}/review?v=1").text)
    assert panel["reviewer"] == "owner@example.com"
    made = owner.post(f"/d/{share}/reviews?v=1", {"decision": "changes_requested", "message": "Shorter"})
    assert made.status == 201, made.text
    review = json.loads(made.text)
    assert review["reviewer"] == {"kind": "member", "id": "owner@example.com", "name": "owner@example.com",
                                  "email": "owner@example.com"}
    assert review["version_number"] == 1 and review["decision"] == "changes_requested"
    _, listed = get_json(client, f"/api/v1/documents/{doc['document_id']}/reviews", key)
    assert listed["review_state"] == "changes_requested"
    # Bad input and another site's form.
    bad = owner.post(f"/d/{share}/reviews", {"decision": "lgtm"})
    assert bad.status == 422 and json.loads(bad.text)["error"]["details"]["fields"][0]["field"] == "decision"
    cross = owner.post(f"/d/{share}/reviews", {"decision": "approved"}, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status == 403
    assert owner.post(f"/d/{share}/reviews?v=7", {"decision": "approved"}).status == 404


# ------------------------------------------------------------------ the dashboard

def test_the_dashboard_reviews_asks_and_shows_decisions_per_version(client, signed_in_owner):
    from tests.dashboard_client import mail_link

    owner, key = signed_in_owner
    doc = publish(client, key, title="Roadmap")
    path = f"/dashboard/documents/{doc['document_id']}"
    page = owner.get(path)
    assert page.status == 200 and 'id="review"' in page.text and "Not reviewed" in page.text
    asked = owner.post(f"{path}/review-requests", {"reviewers": "owner@example.com", "message": "Please"},
                       csrf=owner.token())
    assert asked.status == 303 and "m=review-requested" in asked.location
    assert doc["share_url"] in mail_link("owner@example.com", "review")
    refused = owner.post(f"{path}/review-requests", {"reviewers": "stranger@example.org"}, csrf=owner.token())
    assert refused.status == 422 and "stranger@example.org" in refused.text
    made = owner.post(f"{path}/reviews", {"decision": "changes_requested", "message": "Add Q3"}, csrf=owner.token())
    assert made.status == 303 and "m=reviewed" in made.location
    publish(client, key, title="Roadmap", html="<p>with Q3</p>", document_id=doc["document_id"])
    owner.post(f"{path}/reviews", {"decision": "approved"}, csrf=owner.token())
    page = owner.get(path)
    assert "Approved" in page.text and "Version 2" in page.text and "Version 1" in page.text
    assert page.text.index("Version 2") < page.text.index("Version 1") and "Add Q3" in page.text
    bad = owner.post(f"{path}/reviews", {"decision": "lgtm"}, csrf=owner.token())
    assert bad.status == 422
    # The list: a review column, a filter, and "Needs my review" first.
    listing = owner.get("/dashboard/documents")
    assert "Needs my review" in listing.text and "Approved" in listing.text
    assert listing.text.index("Needs my review") < listing.text.index("Review pending")
    assert "Roadmap" in owner.get("/dashboard/documents?review=approved").text
    assert "Roadmap" not in owner.get("/dashboard/documents?review=pending").text
    assert "Nothing waits for your review" in owner.get("/dashboard/documents?review=mine").text  # approved
    publish(client, key, title="Roadmap", html="<p>v3</p>", document_id=doc["document_id"])
    assert "Roadmap" in owner.get("/dashboard/documents?review=mine").text  # a new version waits for her
