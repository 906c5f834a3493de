"""Recipient links (contract 7f), in-process: the bad input of issue 35, the email step and
its code, the viewer cookie, revocation, and what a recipient's feedback and reviews say."""
from __future__ import annotations

import json
import re

import pytest

from tests.dashboard_client import DashboardClient, mail_codes, outbox_messages
from tests.helpers import auth, publish, publish_raw

AUDIT = ["lead@auditors.example", "@client.example"]
BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def _fields(response) -> list[str]:
    body = json.loads(response.body)
    assert body["error"]["code"] == "validation_error", body
    return [f["field"] for f in body["error"]["details"]["fields"]]


def _patch(client, key, document_id, body):
    return client.http.patch(f"/api/v1/documents/{document_id}", body=json.dumps(body),
                             headers={**auth(key), "Content-Type": "application/json"})


def _codes(email: str) -> list[str]:
    return mail_codes(email)


def _ask(viewer: DashboardClient, share: str, email: str):
    return viewer.post(f"/d/{share}/recipient/email", {"email": email})


def _verify(viewer: DashboardClient, share: str, email: str, code: str):
    return viewer.post(f"/d/{share}/recipient/code", {"email": email, "code": code})


@pytest.fixture
def audit(client, key, app_clock):
    doc = publish(client, key, title="Audit pack", share_access="recipients", share_recipients=AUDIT)
    return doc


# ------------------------------------------------------------------ bad input (one test per line)

def test_recipients_without_entries_is_422_naming_share_recipients(client, key):
    refused = publish_raw(client, key, title="T", html="<p>x</p>", share_access="recipients")
    assert refused.status_code == 422 and _fields(refused) == ["share_recipients"]
    refused = publish_raw(client, key, title="T", html="<p>x</p>", share_access="recipients", share_recipients=[])
    assert refused.status_code == 422 and _fields(refused) == ["share_recipients"]
    doc = publish(client, key, title="Public")
    refused = _patch(client, key, doc["document_id"], {"share_access": "recipients"})
    assert refused.status_code == 422 and _fields(refused) == ["share_recipients"]
    assert json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}",
                                      headers=auth(key)).body)["share_access"] == "public"  # nothing half-written


def test_an_invalid_email_or_domain_entry_is_422_naming_it(client, key):
    for bad in ("not-an-address", "@", "@nodot", "a@b@c.example", "@-bad-.example", "x" * 300 + "@a.example"):
        refused = publish_raw(client, key, title="T", html="<p>x</p>", share_access="recipients",
                              share_recipients=["ok@example.com", bad])
        assert refused.status_code == 422, bad
        assert _fields(refused) == ["share_recipients.1"], bad
    listed = _documents(client, key)
    assert listed == []  # nothing stored


def test_more_than_100_entries_is_422(client, key):
    entries = [f"p{i}@example.com" for i in range(101)]
    refused = publish_raw(client, key, title="T", html="<p>x</p>", share_access="recipients", share_recipients=entries)
    assert refused.status_code == 422 and _fields(refused) == ["share_recipients"]
    doc = publish(client, key, title="T", share_access="recipients", share_recipients=entries[:100])
    got = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).body)
    assert got["share_access"] == "recipients" and len(got["share_recipients"]) == 100


def test_entries_are_lowercased_each_once_and_patch_replaces_them(client, key):
    doc = publish(client, key, title="T", share_access="recipients",
                  share_recipients=["Ann@Example.com", "ann@example.com", "@Client.Example"])
    got = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).body)
    assert got["share_recipients"] == ["ann@example.com", "@client.example"]
    changed = _patch(client, key, doc["document_id"], {"share_recipients": ["bob@example.com"]})
    assert changed.status_code == 200 and json.loads(changed.body)["share_recipients"] == ["bob@example.com"]
    bad = _patch(client, key, doc["document_id"], {"share_recipients": ["nope"]})
    assert bad.status_code == 422 and _fields(bad) == ["share_recipients.0"]


def _documents(client, key):
    return json.loads(client.http.get("/api/v1/documents", headers=auth(key)).body)["documents"]


# ------------------------------------------------------------------ the email step

def test_the_email_step_answers_the_same_for_any_address_and_mails_only_the_audience(client, audit):
    share = audit["share_id"]
    viewer = DashboardClient(client)
    page = viewer.get(f"/d/{share}")
    assert page.status == 200 and 'action="/d/' + share + '/recipient/email"' in page.text
    assert "Audit pack" not in page.text  # nothing of the document before the code
    assert page.headers["Cache-Control"] == "private, no-store"
    answers = {}
    for email in ("lead@auditors.example", "stranger@else.example", "anyone@client.example",
                  "lead@auditors.example.evil"):
        answer = _ask(viewer, share, email)
        assert answer.status == 200 and answer.headers["Cache-Control"] == "private, no-store"
        answers[email] = answer.text.replace(email, "EMAIL")
    assert len(set(answers.values())) == 1  # the same page, whoever asks
    sent = {m["to"] for m in outbox_messages() if m["kind"] == "recipient_code"}
    assert sent == {"lead@auditors.example", "anyone@client.example"}  # no mail to a stranger
    assert "is your code for Audit pack" in outbox_messages()[0]["subject"]


def test_an_address_that_is_not_one_is_422_on_the_email_step(client, audit):
    viewer = DashboardClient(client)
    answer = _ask(viewer, audit["share_id"], "not an address")
    assert answer.status == 422 and "Enter an email address" in answer.text
    assert outbox_messages() == []


@BOTH
def test_the_right_code_sets_the_viewer_cookie_and_records_the_recipient(client, key, audit, app_clock):
    share = audit["share_id"]
    viewer = DashboardClient(client)
    _ask(viewer, share, "Lead@Auditors.example")
    code = _codes("lead@auditors.example")[0]
    opened = _verify(viewer, share, "lead@auditors.example", code)
    assert opened.status == 303 and opened.location == f"/d/{share}"
    cookie = opened.headers.get("set-cookie") or opened.headers["Set-Cookie"]
    assert cookie.startswith("dp_recipient=") and f"Path=/d/{share};" in cookie
    assert "Max-Age=2592000" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # http://: Secure only on https
    page = viewer.get(f"/d/{share}")
    assert page.status == 200 and "Audit pack" in page.text
    assert page.headers["Cache-Control"] == "private, no-store"
    # The code works once.
    assert _verify(DashboardClient(client), share, "lead@auditors.example", code).status == 401
    app_clock.advance(60)
    viewer.get(f"/d/{share}")
    listed = json.loads(client.http.get(f"/api/v1/documents/{audit['document_id']}/recipients",
                                        headers=auth(key)).body)
    assert listed == {"recipients": [{"email": "lead@auditors.example", "first_opened_at": opened_at(app_clock, 60),
                                      "last_opened_at": opened_at(app_clock, 0), "views": 2, "revoked": False}]}
    # The content, live and threads of the link: private for the recipient, refused to others.
    version = re.search(r'/d/' + share + r'/v/(v_[A-Za-z0-9_-]+)', page.text).group(1)
    content = viewer.get(f"/d/{share}/v/{version}")
    assert content.status == 200 and content.headers["Cache-Control"] == "private, no-store"
    assert DashboardClient(client).get(f"/d/{share}/v/{version}").status == 401
    for path in ("live", "threads/0"):
        mine = viewer.get(f"/d/{share}/{path}")
        assert mine.status == 200 and mine.headers["Cache-Control"] == "private, no-store", path
        assert DashboardClient(client).get(f"/d/{share}/{path}").status == 401, path


def opened_at(clock, ago: float) -> str:
    from chalicelib.services.context import rfc3339

    return rfc3339(int((clock() - ago) * 1000))


def test_a_domain_entry_admits_a_verified_address_which_then_appears_as_a_recipient(client, key, audit):
    share = audit["share_id"]
    viewer = DashboardClient(client)
    _ask(viewer, share, "cfo@client.example")
    assert _verify(viewer, share, "cfo@client.example", _codes("cfo@client.example")[0]).status == 303
    assert viewer.get(f"/d/{share}").status == 200
    listed = json.loads(client.http.get(f"/api/v1/documents/{audit['document_id']}/recipients",
                                        headers=auth(key)).body)["recipients"]
    assert [(r["email"], r["views"]) for r in listed] == [("cfo@client.example", 1), ("lead@auditors.example", 0)]


@BOTH
def test_a_wrong_code_is_401_with_tries_left_and_the_sixth_try_needs_a_new_code(client, audit):
    share = audit["share_id"]
    viewer = DashboardClient(client)
    _ask(viewer, share, "lead@auditors.example")
    code = _codes("lead@auditors.example")[0]
    wrong = "000000" if code != "000000" else "111111"
    for left in (4, 3, 2, 1):
        answer = _verify(viewer, share, "lead@auditors.example", wrong)
        assert answer.status == 401 and f"{left} tr" in answer.text, answer.text
    last = _verify(viewer, share, "lead@auditors.example", wrong)
    assert last.status == 401 and "last try" in last.text and "Send a new code" in last.text
    refused = _verify(viewer, share, "lead@auditors.example", code)  # the right one, too late
    assert refused.status == 401 and "dp_recipient" not in (refused.headers.get("set-cookie") or "")
    _ask(viewer, share, "lead@auditors.example")  # "Send a new code"
    fresh = _codes("lead@auditors.example")[0]
    assert _verify(viewer, share, "lead@auditors.example", fresh).status == 303


def test_a_code_stops_working_after_ten_minutes(client, audit, app_clock):
    share = audit["share_id"]
    viewer = DashboardClient(client)
    _ask(viewer, share, "lead@auditors.example")
    code = _codes("lead@auditors.example")[0]  # made (and its 10 minutes begun) just after the answer
    app_clock.advance(600)
    assert _verify(viewer, share, "lead@auditors.example", code).status == 401


def test_a_stranger_with_any_code_gets_401_and_nothing_is_stored_about_them(client, key, audit):
    viewer = DashboardClient(client)
    _ask(viewer, audit["share_id"], "stranger@else.example")
    assert _verify(viewer, audit["share_id"], "stranger@else.example", "123456").status == 401
    listed = json.loads(client.http.get(f"/api/v1/documents/{audit['document_id']}/recipients",
                                        headers=auth(key)).body)["recipients"]
    assert [r["email"] for r in listed] == ["lead@auditors.example"]


def test_code_requests_are_limited_per_email_and_per_client_address(client, audit):
    share = audit["share_id"]
    viewer = DashboardClient(client)
    for _ in range(5):
        assert _ask(viewer, share, "stranger@else.example").status == 200
    refused = _ask(viewer, share, "stranger@else.example")
    assert refused.status == 429 and refused.headers.get("Retry-After")
    assert _ask(viewer, share, "lead@auditors.example").status == 200  # another address: its own budget
    for i in range(13):
        assert _ask(viewer, share, f"p{i}@else.example").status == 200
    refused = _ask(viewer, share, "p99@else.example")  # the 21st from this address this hour
    assert refused.status == 429 and "from your address" in refused.text
    assert refused.headers["Cache-Control"] == "private, no-store"


# ------------------------------------------------------------------ revocation

def _verified(client, share: str, email: str) -> DashboardClient:
    viewer = DashboardClient(client)
    _ask(viewer, share, email)
    assert _verify(viewer, share, email, _codes(email)[0]).status == 303
    assert viewer.get(f"/d/{share}").status == 200
    return viewer


@BOTH
def test_a_revoked_recipient_is_refused_on_the_next_request_and_stays_listed(client, key, audit):
    share, document_id = audit["share_id"], audit["document_id"]
    viewer = _verified(client, share, "lead@auditors.example")
    gone = client.http.delete(f"/api/v1/documents/{document_id}/recipients/lead%40auditors.example",
                              headers=auth(key))  # "@" as a client library escapes it
    assert gone.status_code == 204
    page = viewer.get(f"/d/{share}")
    assert page.status == 200 and "recipient/email" in page.text and "Audit pack" not in page.text
    assert viewer.post(f"/d/{share}/feedback", {"message": "still here?"}).status == 401
    listed = json.loads(client.http.get(f"/api/v1/documents/{document_id}/recipients", headers=auth(key)).body)
    assert listed["recipients"][0]["email"] == "lead@auditors.example" and listed["recipients"][0]["revoked"]
    # No code for them any more (the same answer, no mail).
    before = len(_codes("lead@auditors.example"))
    assert _ask(DashboardClient(client), share, "lead@auditors.example").status == 200
    assert len(_codes("lead@auditors.example")) == before
    # Their entry left the list; listing them again admits them again.
    got = json.loads(client.http.get(f"/api/v1/documents/{document_id}", headers=auth(key)).body)
    assert got["share_recipients"] == ["@client.example"]
    assert _patch(client, key, document_id, {"share_recipients": AUDIT}).status_code == 200
    assert "Audit pack" in viewer.get(f"/d/{share}").text
    # Someone a domain entry admits: revoked alone, the domain stays for the others.
    cfo = _verified(client, share, "cfo@client.example")
    assert client.http.delete(f"/api/v1/documents/{document_id}/recipients/cfo@client.example",
                              headers=auth(key)).status_code == 204
    assert "recipient/email" in cfo.get(f"/d/{share}").text
    got = json.loads(client.http.get(f"/api/v1/documents/{document_id}", headers=auth(key)).body)
    assert got["share_recipients"] == AUDIT
    _verified(client, share, "ceo@client.example")
    # Unknown document: 404; not an address: 422.
    assert client.http.delete("/api/v1/documents/00000000-0000-4000-8000-000000000000/recipients/a@b.example",
                              headers=auth(key)).status_code == 404
    assert client.http.delete(f"/api/v1/documents/{document_id}/recipients/nobody",
                              headers=auth(key)).status_code == 422


@BOTH
def test_removing_an_entry_revokes_it_and_listing_it_again_admits_again(client, key, audit):
    share, document_id = audit["share_id"], audit["document_id"]
    viewer = _verified(client, share, "cfo@client.example")
    assert _patch(client, key, document_id, {"share_recipients": ["lead@auditors.example"]}).status_code == 200
    assert "recipient/email" in viewer.get(f"/d/{share}").text
    listed = json.loads(client.http.get(f"/api/v1/documents/{document_id}/recipients", headers=auth(key)).body)
    assert {r["email"]: r["revoked"] for r in listed["recipients"]} == {
        "cfo@client.example": True, "lead@auditors.example": False}
    assert _patch(client, key, document_id,
                  {"share_recipients": ["lead@auditors.example", "cfo@client.example"]}).status_code == 200
    assert "Audit pack" in viewer.get(f"/d/{share}").text


def test_members_open_a_recipients_link_without_the_email_step(client, signed_in_owner):
    owner, key = signed_in_owner
    doc = publish(client, key, title="Board notes", share_access="recipients", share_recipients=["x@y.example"])
    share = doc["share_id"]
    first = owner.get(f"/d/{share}")
    assert "/dashboard/open?share=" + share in first.text  # "A member? Sign in"
    opened = owner.get(f"/dashboard/open?share={share}")
    assert opened.status == 303 and opened.location == f"/d/{share}"
    page = owner.get(f"/d/{share}")
    assert page.status == 200 and "Board notes" in page.text


def test_a_members_page_of_a_workspace_link_polls_live_and_threads(client, signed_in_owner):
    """The page's live refresh and comments read the member's pass too (they read the unlock
    cookie alone: 401 for every member), privately."""
    owner, key = signed_in_owner
    share = publish(client, key, title="Team", share_access="workspace")["share_id"]
    assert owner.get(f"/dashboard/open?share={share}").status == 303
    for path in ("live", "threads/0"):
        answer = owner.get(f"/d/{share}/{path}")
        assert answer.status == 200 and answer.headers["Cache-Control"] == "private, no-store", path


# ------------------------------------------------------------------ feedback and reviews

@BOTH
def test_a_recipients_feedback_and_review_name_them_and_outsiders_are_403(client, key, audit):
    share, document_id = audit["share_id"], audit["document_id"]
    viewer = _verified(client, share, "lead@auditors.example")
    posted = viewer.post(f"/d/{share}/feedback", {"message": "Page 3 is wrong"})
    assert posted.status == 201, posted.text
    listed = json.loads(client.http.get(f"/api/v1/feedback?document_id={document_id}", headers=auth(key)).body)
    assert listed["feedback"][0]["recipient_email"] == "lead@auditors.example"
    panel = json.loads(viewer.get(f"/d/{share}/review").text)
    assert panel["reviewer"] == "lead@auditors.example"
    made = viewer.post(f"/d/{share}/reviews", {"decision": "approved"})
    assert made.status == 201, made.text
    assert json.loads(made.text)["reviewer"] == {"kind": "recipient", "id": "lead@auditors.example",
                                                 "name": "lead@auditors.example", "email": "lead@auditors.example"}
    # A review request may name a recipient (mailed how to open it); outside the audience: 422 naming them.
    asked = client.http.post(f"/api/v1/documents/{document_id}/review-requests", headers={
        **auth(key), "Content-Type": "application/json"}, body=json.dumps({"reviewers": ["cfo@client.example"]}))
    assert asked.status_code == 202, asked.body
    mailed = next(m for m in outbox_messages() if m["to"] == "cfo@client.example" and m["kind"] == "review")
    assert mailed["links"] == [f"http://127.0.0.1:8000/d/{share}#review"] or mailed["links"][0].endswith(
        f"/d/{share}#review")
    asked = client.http.post(f"/api/v1/documents/{document_id}/review-requests", headers={
        **auth(key), "Content-Type": "application/json"},
        body=json.dumps({"reviewers": ["cfo@client.example", "out@else.example"]}))
    assert asked.status_code == 422 and _fields(asked) == ["reviewers.1"]
    # Outside the audience now (the entry removed): the reviewer is known, and refused with 403.
    assert _patch(client, key, document_id, {"share_recipients": ["@client.example"]}).status_code == 200
    refused = viewer.post(f"/d/{share}/reviews", {"decision": "changes_requested"})
    assert refused.status == 403 and json.loads(refused.text)["error"]["code"] == "forbidden"
    # No pass at all: 401, as before.
    assert DashboardClient(client).post(f"/d/{share}/reviews", {"decision": "approved"}).status == 401


def test_mcp_tools_set_list_and_revoke_recipients(client, key, audit):
    from tests.http.test_mcp import call

    document_id = audit["document_id"]
    result = call(client, key, "list_recipients", {"document_id": document_id})["structuredContent"]
    assert result["recipients"][0]["email"] == "lead@auditors.example"
    result = call(client, key, "revoke_recipient", {"document_id": document_id, "email": "lead@auditors.example"})
    assert result["structuredContent"] == {"document_id": document_id, "email": "lead@auditors.example",
                                           "revoked": True}
    assert call(client, key, "list_recipients", {"document_id": document_id})["structuredContent"][
        "recipients"][0]["revoked"] is True
    for arguments in ({"share_recipients": ["nope"]}, {"share_recipients": [f"p{i}@x.example" for i in range(101)]},
                      {"share_access": "recipients", "share_recipients": []}):
        bad = call(client, key, "update_document", {"document_id": document_id, **arguments})
        assert bad["isError"] is True, arguments
        text = bad["content"][0]["text"]
        assert text.startswith("validation_error: share_recipients"), text
    made = call(client, key, "publish_document", {"html": "<h1>X</h1>", "share_access": "recipients",
                                                  "share_recipients": ["a@b.example"]})["structuredContent"]
    got = call(client, key, "get_document", {"document_id": made["document_id"]})["structuredContent"]
    assert got["share_access"] == "recipients" and got["share_recipients"] == ["a@b.example"]


# ------------------------------------------------------------------ the dashboard

def test_the_document_page_sets_the_audience_shows_who_opened_it_and_revokes(client, signed_in_owner):
    owner, key = signed_in_owner
    doc = publish(client, key, title="Q3 report")
    path = f"/dashboard/documents/{doc['document_id']}"
    page = owner.get(path)
    assert 'id="audience"' in page.text and "Who opened it" not in page.text
    bad = owner.post(f"{path}/audience", {"share_access": "recipients", "share_recipients": ""}, csrf=page.csrf())
    assert bad.status == 422 and "share_recipients" in bad.text
    saved = owner.post(f"{path}/audience", {"share_access": "recipients",
                                            "share_recipients": "ann@client.example, @auditors.example"},
                       csrf=page.csrf())
    assert saved.status == 303 and saved.location.endswith("#audience")
    viewer = _verified(client, doc["share_id"], "bob@auditors.example")
    page = owner.get(path)
    assert "Who opened it" in page.text and "bob@auditors.example" in page.text and "ann@client.example" in page.text
    assert 'aria-label="Revoke bob@auditors.example"' in page.text
    revoked = owner.post(f"{path}/recipients/revoke", {"email": "bob@auditors.example"}, csrf=page.csrf())
    assert revoked.status == 303
    assert "recipient/email" in viewer.get(f"/d/{doc['share_id']}").text
    page = owner.get(revoked.location)
    assert "Recipient revoked" in page.text and '<span class="badge">revoked</span>' in page.text


@BOTH
def test_shared_with_me_lists_other_workspaces_documents_newest_first_and_opens_them(client, signed_in_owner):
    owner, key = signed_in_owner
    older = publish(client, key, title="Older", share_access="recipients", share_recipients=["@client.example"])
    publish(client, key, title="Not for Ann", share_access="recipients", share_recipients=["bob@else.example"])
    from chalicelib.wiring import default_context

    default_context().clock.advance(5)
    newer = publish(client, key, title="Newer", share_access="recipients", share_recipients=["ann@client.example"])
    ann = DashboardClient(client)
    ann.sign_up(email="ann@client.example", workspace="Client Co")
    page = ann.get("/dashboard/shared")
    assert page.status == 200
    titles = re.findall(r'/dashboard/shared/open\?share=[^"]+">([^<]+)</a>', page.text)
    assert titles == ["Newer", "Older"] and "Acme" in page.text
    opened = ann.get(f"/dashboard/shared/open?share={newer['share_id']}")
    assert opened.status == 303 and opened.location == f"/d/{newer['share_id']}"
    assert "Newer" in ann.get(f"/d/{newer['share_id']}").text
    # Revoked: gone from the list; a link not shared with Ann: 404.
    client.http.delete(f"/api/v1/documents/{older['document_id']}/recipients/ann@client.example", headers=auth(key))
    assert "Older" not in ann.get("/dashboard/shared").text
    assert ann.get(f"/dashboard/shared/open?share={older['share_id']}").status == 404
    # The owner's own workspace is not "shared with" them.
    assert "Nothing yet" in owner.get("/dashboard/shared").text
    # A deleted document goes, with its recipients and audience.
    assert client.http.delete(f"/api/v1/documents/{newer['document_id']}", headers=auth(key)).status_code == 204
    assert "Nothing yet" in ann.get("/dashboard/shared").text
    from chalicelib.wiring import default_context as context

    assert context().recipients.list_for_document(newer["document_id"]) == []
