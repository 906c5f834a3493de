"""Dashboard pages built on the sharing and feedback services (passphrase, inbox).

They run once those services are merged; until then they skip.
"""
from __future__ import annotations

import importlib.util
import json
import re

import pytest

from tests.dashboard_client import DashboardClient
from tests.http.test_dashboard import create_key, doc_id_from, rest, set_plan, upload, workspace_id_of


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


needs_sharing = pytest.mark.skipif(_missing("chalicelib.services.sharing"),
                                   reason="chalicelib.services.sharing is not in this build yet")
needs_feedback = pytest.mark.skipif(_missing("chalicelib.services.feedback"),
                                    reason="chalicelib.services.feedback is not in this build yet")


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply: these tests sign up many people."""


@pytest.fixture
def owner(client, aws, clock):
    from chalicelib.wiring import default_context

    default_context().clock = clock
    dash = DashboardClient(client)
    dash.sign_up()
    return dash


def share_path(page_text: str) -> str:
    return re.search(r'href="https?://[^/"]+(/d/[A-Za-z0-9_-]+)"', page_text).group(1)


@needs_sharing
def test_passphrase_is_pro_and_protects_the_share_link(owner, client):
    key = create_key(owner)
    document_id = doc_id_from(upload(owner, b"<p>secret plans</p>", title="Plans"))
    page = owner.get(f"/dashboard/documents/{document_id}")
    assert "Passphrase-protected links are a Pro feature" in page.text
    refused = owner.post(f"/dashboard/documents/{document_id}/passphrase",
                         {"action": "set", "passphrase": "open sesame"}, csrf=owner.token())
    assert refused.status == 403
    set_plan(workspace_id_of(owner), "pro")
    short = owner.post(f"/dashboard/documents/{document_id}/passphrase",
                       {"action": "set", "passphrase": "short"}, csrf=owner.token())
    assert short.status == 422
    done = owner.post(f"/dashboard/documents/{document_id}/passphrase",
                      {"action": "set", "passphrase": "open sesame"}, csrf=owner.token())
    assert done.status == 303 and "m=passphrase-set" in done.location
    assert json.loads(rest(client, "get", f"/api/v1/documents/{document_id}", key).body)["passphrase_protected"]
    link = share_path(owner.get(f"/dashboard/documents/{document_id}").text)
    viewer = client.http.get(link)
    body = viewer.body.decode() if isinstance(viewer.body, bytes) else viewer.body
    assert "secret plans" not in body
    removed = owner.post(f"/dashboard/documents/{document_id}/passphrase", {"action": "remove"},
                         csrf=owner.token())
    assert removed.status == 303
    assert not json.loads(rest(client, "get", f"/api/v1/documents/{document_id}", key).body)["passphrase_protected"]


@needs_feedback
def test_feedback_inbox_filter_resolve_reopen(owner, client):
    first = doc_id_from(upload(owner, b"<p>one</p>", title="First doc"))
    second = doc_id_from(upload(owner, b"<p>two</p>", title="Second doc"))
    upload(owner, b"<p>one, v2</p>", title="", document_id=first)
    for document_id, message in ((first, "Typo in the intro"), (second, "Love it")):
        link = share_path(owner.get(f"/dashboard/documents/{document_id}").text)
        r = client.http.post(link + "/feedback", headers={"Content-Type": "application/json"},
                             body=json.dumps({"message": message, "name": "Viewer"}))
        assert r.status_code == 201, r.body
    inbox = owner.get("/dashboard/feedback")
    assert "Typo in the intro" in inbox and "Love it" in inbox
    assert "?v=2" in inbox.text  # links to the version the feedback was left on
    assert "First doc" in owner.get("/dashboard/documents").text
    filtered = owner.get(f"/dashboard/feedback?document_id={second}")
    assert "Love it" in filtered and "Typo in the intro" not in filtered.text
    feedback_id = re.search(r"/dashboard/feedback/([^/\"]+)/resolve", filtered.text).group(1)
    page = owner.post(f"/dashboard/feedback/{feedback_id}/resolve",
                      {"resolved": "true", "back": f"/dashboard/feedback?document_id={second}"}, csrf=filtered.csrf())
    assert page.status == 303 and page.location.startswith(f"/dashboard/feedback?document_id={second}")
    assert "Love it" not in owner.get("/dashboard/feedback").text
    resolved = owner.get("/dashboard/feedback?status=resolved")
    assert "Love it" in resolved and "Reopen" in resolved.text
    page = owner.post(f"/dashboard/feedback/{feedback_id}/resolve", {"resolved": "false"}, csrf=owner.token())
    assert page.status == 303
    assert "Love it" in owner.get("/dashboard/feedback").text
    # Another workspace cannot resolve it.
    other = DashboardClient(client)
    other.sign_up(email="other@example.com", workspace="Other")
    assert other.post(f"/dashboard/feedback/{feedback_id}/resolve", {"resolved": "true"},
                      csrf=other.token()).status == 404


@needs_feedback
def test_inbox_shows_threads_with_anchor_and_replies_and_the_owner_replies(owner, client, clock):
    document_id = doc_id_from(upload(owner, b"<p>In short, the results were good.</p>", title="Report"))
    link = share_path(owner.get(f"/dashboard/documents/{document_id}").text)
    r = client.http.post(link + "/feedback", headers={"Content-Type": "application/json"},
                         body=json.dumps({"message": "Which results?", "name": "Kim", "anchor": {
                             "quote": "the results", "prefix": "In short, ", "suffix": " were good."}}))
    feedback_id = json.loads(r.body)["feedback_id"]
    client.http.post(f"{link}/feedback/{feedback_id}/replies", headers={"Content-Type": "application/json"},
                     body=json.dumps({"message": "The Q3 ones", "name": "Kim"}))
    clock.advance(1)
    inbox = owner.get("/dashboard/feedback")
    assert "<mark>the results</mark>" in inbox.text and "In short, " in inbox.text
    assert "The Q3 ones" in inbox.text
    page = owner.post(f"/dashboard/feedback/{feedback_id}/replies",
                      {"message": "Thanks, clarified in v2", "back": "/dashboard/feedback"}, csrf=inbox.csrf())
    assert page.status == 303 and page.location.startswith("/dashboard/feedback?m=replied")
    thread = json.loads(client.http.get(f"{link}/threads/x1").body)["threads"][0]
    assert [(x["author"], x["message"]) for x in thread["replies"]] == [
        ("viewer", "The Q3 ones"), ("owner", "Thanks, clarified in v2")]
    assert owner.post(f"/dashboard/feedback/{feedback_id}/replies", {"message": ""},
                      csrf=owner.token()).status == 422
    other = DashboardClient(client)
    other.sign_up(email="other@example.com", workspace="Other")
    assert other.post(f"/dashboard/feedback/{feedback_id}/replies", {"message": "hi"},
                      csrf=other.token()).status == 404


@needs_feedback
def test_accepting_a_suggestion_from_the_inbox_makes_the_next_version(owner, client):
    document_id = doc_id_from(upload(owner, b"<p>The failover takes two minutes.</p>", title="Runbook"))
    link = share_path(owner.get(f"/dashboard/documents/{document_id}").text)
    r = client.http.post(link + "/feedback", headers={"Content-Type": "application/json"},
                         body=json.dumps({"message": "Faster now", "name": "Rita",
                                          "anchor": {"quote": "two minutes", "prefix": "The failover takes ",
                                                     "suffix": "."},
                                          "suggestion": {"replacement": "ninety seconds"}}))
    assert r.status_code == 201, r.body
    feedback_id = json.loads(r.body)["feedback_id"]
    inbox = owner.get("/dashboard/feedback")
    page = owner.post(f"/dashboard/feedback/{feedback_id}/accept", {"back": "/dashboard/feedback"},
                      csrf=inbox.csrf())
    assert page.status == 303 and "accepted%20in%20version%202" in page.location, page.location
    key = create_key(owner)
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}?include_html=true", key).body)
    assert got["html"] == "<p>The failover takes ninety seconds.</p>" and len(got["versions"]) == 2
