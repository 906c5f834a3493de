"""Defects found by the third QA pass over reviews, suggestions, recipients, provenance,
exports and static pages (helper qa3), each reproduced at the HTTP level before its fix."""
from __future__ import annotations

import json

from tests.dashboard_client import outbox_messages
from tests.helpers import auth, post_json, publish


def _error(r) -> dict:
    return json.loads(r.body)["error"]


def _review_mails() -> list[dict]:
    """This test's review mails (DynamoDB runs share one outbox folder across tests)."""
    return [m for m in outbox_messages() if m["kind"] == "review" and m["to"].startswith("person")]


def test_review_requests_are_no_mail_relay_to_strangers(client, key, app_clock):
    """Reproduction: a free key lists a whole mail domain as recipients (`@example.org`:
    any address there), then asks 20 addresses at a time to "review", each mail carrying
    the caller's own 5,000-character message. Nothing limited it (invitations, the other
    mail to strangers, stop at 50 a day): 40 requests mailed 800 strangers. Mail to people
    outside the workspace now has a daily budget per workspace (limits.REVIEW_MAILS_TO_RECIPIENTS);
    a request that would pass it is 429 as a whole, with nothing mailed and nothing changed."""
    doc = publish(client, key, share_access="recipients", share_recipients=["@example.org"])
    path = f"/api/v1/documents/{doc['document_id']}/review-requests"
    sent = 0
    for n in range(40):
        batch = [f"person{n}.{i}@example.org" for i in range(20)]
        r = post_json(client, path, {"reviewers": batch, "message": "Cheap watches! " * 300}, key)
        if r.status_code != 202:
            break
        sent += 20
    assert sent < 800, "every request mailed 20 strangers"
    from chalicelib.domain import limits

    budget = limits.REVIEW_MAILS_TO_RECIPIENTS
    assert r.status_code == 429 and _error(r)["code"] == "rate_limited", r.body
    assert 1 <= int(r.headers["Retry-After"]) <= budget.window_seconds
    assert sent <= budget.limit < sent + 20  # refused whole: nothing of the refused batch went out
    assert len(_review_mails()) == sent
    # Members of the workspace are not strangers: asking them still works.
    from chalicelib import wiring
    from chalicelib.ports.records import Member, User

    workspace_id = json.loads(client.http.get("/api/v1/me", headers=auth(key)).body)["workspace"]["id"]
    ctx = wiring.default_context()
    ctx.users.create(User(email="ana@example.com", password_hash="x", workspace_id=workspace_id, created_ms=1))
    ctx.people.add_member(Member(workspace_id=workspace_id, email="ana@example.com", role="viewer", created_ms=1))
    r = post_json(client, path, {"reviewers": ["ana@example.com"]}, key)
    assert r.status_code == 202, r.body
    # A day later the budget is back.
    app_clock.advance(budget.window_seconds + 1)
    r = post_json(client, path, {"reviewers": ["late@example.org"]}, key)
    assert r.status_code == 202, r.body



def _fields(r) -> list[str]:
    error = _error(r)
    assert error["code"] == "validation_error", r.body
    return [f["field"] for f in error["details"]["fields"]]


def test_a_recipient_is_an_address_mail_goes_to_as_written(client, key, app_clock):
    """Reproduction: `share_recipients` and the email step took anything with one `@` and a
    dot after it: `cfo\\x00@client.example` (a NUL), `cfo@client.example.` (a trailing dot:
    another entry than `cfo@client.example`), `(1)cfo@client.example` (an RFC 5322 comment:
    mailed to cfo@client.example, yet a different address to the per-address limit of 5
    codes an hour, so `(1)…`, `(2)…` mailed the same inbox without end), and took
    `a@münchen.de` but refused `@münchen.de`. An address is now a dot-atom local part at a
    domain of letters, digits and hyphens; a Unicode domain is kept in its ASCII form
    (IDNA), so the entry and the address agree."""
    from tests.dashboard_client import DashboardClient, outbox_messages
    from tests.helpers import publish_raw

    for bad in ["cfo\x00@client.example", "cfo@client.example.", "(1)cfo@client.example", "a,b@client.example",
                "cfo@client..example", ".cfo@client.example", "cfo@-client.example"]:
        r = publish_raw(client, key, share_access="recipients", share_recipients=[bad])
        assert r.status_code == 422 and _fields(r) == ["share_recipients.0"], (bad, r.body)
    doc = publish(client, key, share_access="recipients", share_recipients=["@client.example", "@münchen.de"])
    got = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).body)
    assert got["share_recipients"] == ["@client.example", "@xn--mnchen-3ya.de"]
    viewer = DashboardClient(client)
    for n in range(3):  # the per-address limit held only for the address as written
        page = viewer.post(f"/d/{doc['share_id']}/recipient/email", {"email": f"({n})cfo@client.example"})
        assert page.status == 422, page.text
    assert not [m for m in outbox_messages() if m["kind"] == "recipient_code" and "(" in m["to"]]
    page = viewer.post(f"/d/{doc['share_id']}/recipient/email", {"email": "Jörg@München.de"})
    assert page.status == 422  # a local part mail cannot carry as written
    page = viewer.post(f"/d/{doc['share_id']}/recipient/email", {"email": "joerg@München.de"})
    assert page.status == 200
    assert [m["to"] for m in outbox_messages() if m["kind"] == "recipient_code"][0] == "joerg@xn--mnchen-3ya.de"
    # Revoking names the same address whichever form is given.
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}/recipients/joerg%40m%C3%BCnchen.de",
                           headers=auth(key))
    assert r.status_code == 204, r.body


def test_listing_a_domain_again_admits_again_whom_its_removal_refused(client, key, app_clock):
    """Reproduction: a link for `@client.example`; cfo@client.example opens it. The owner
    narrows the audience to one address, then lists `@client.example` again: every address
    at that domain was admitted again except the people who had opened the link (the
    removal had marked their records revoked, and only an exact address restores a
    record): cfo stayed refused, listed `revoked: true`, while strangers at the domain got
    in. Removing an entry refuses whom it admitted because no entry lists them any more;
    listing the entry again admits them again. A person revoked on their own stays revoked."""
    from tests.dashboard_client import DashboardClient, mail_codes

    doc = publish(client, key, title="Audit pack", share_access="recipients", share_recipients=["@client.example"])
    share, document_id = doc["share_id"], doc["document_id"]

    def verified(email: str) -> DashboardClient:
        viewer = DashboardClient(client)
        viewer.post(f"/d/{share}/recipient/email", {"email": email})
        assert viewer.post(f"/d/{share}/recipient/code", {"email": email, "code": mail_codes(email)[0]}).status == 303
        assert "Audit pack" in viewer.get(f"/d/{share}").text
        return viewer

    def patch(entries):
        r = client.http.patch(f"/api/v1/documents/{document_id}", headers=auth(key),
                              body=json.dumps({"share_recipients": entries}))
        assert r.status_code == 200, r.body

    def revoked() -> dict:
        listed = json.loads(client.http.get(f"/api/v1/documents/{document_id}/recipients", headers=auth(key)).body)
        return {r["email"]: r["revoked"] for r in listed["recipients"]}

    cfo, ceo = verified("cfo@client.example"), verified("ceo@client.example")
    assert client.http.delete(f"/api/v1/documents/{document_id}/recipients/ceo@client.example",
                              headers=auth(key)).status_code == 204
    patch(["lead@auditors.example"])
    assert "recipient/email" in cfo.get(f"/d/{share}").text  # refused while no entry lists them
    assert revoked() == {"cfo@client.example": True, "ceo@client.example": True, "lead@auditors.example": False}
    patch(["lead@auditors.example", "@client.example"])
    assert "Audit pack" in cfo.get(f"/d/{share}").text  # the domain admits them again
    assert "recipient/email" in ceo.get(f"/d/{share}").text  # revoked on their own: still refused
    assert revoked() == {"cfo@client.example": False, "ceo@client.example": True, "lead@auditors.example": False}


def test_the_openapi_document_lists_403_where_a_role_is_needed(client, app_clock):
    """Reproduction: a viewer's key revoking a recipient (or deleting a document, rotating a
    link, listing webhooks...) is 403 `forbidden_role` (contract section 3), but
    docs/openapi.json listed no 403 for those operations (revokeRecipient: 204, 400, 401,
    404, 414, 422, 431, 500, 503), and its 403 text named only plan limits. Every
    operation that needs more than a viewer now lists 403, saying `forbidden_role`."""
    from chalicelib import openapi, wiring
    from chalicelib.domain import roles
    from chalicelib.ports.records import Member, User
    from chalicelib.services.access import Actor

    workspaces = wiring.workspaces()
    ws, owner_key = workspaces.create_workspace("Team", "pro")
    ctx = wiring.default_context()
    ctx.users.create(User(email="vic@example.com", password_hash="x", workspace_id=ws.id, created_ms=1))
    ctx.people.add_member(Member(workspace_id=ws.id, email="vic@example.com", role="editor", created_ms=1))
    key = workspaces.create_key(ws.id, "vic's", by=Actor(ws.id, role="editor", member="vic@example.com",
                                                         surface="dashboard")).api_key
    ctx.people.set_role(ws.id, "vic@example.com", "viewer")
    doc = publish(client, owner_key.api_key, share_access="recipients", share_recipients=["a@client.example"])
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}/recipients/a@client.example", headers=auth(key))
    assert r.status_code == 403 and _error(r)["code"] == "forbidden_role", r.body
    document = openapi.build(__import__("app").app.routes)
    listed = {op["operationId"]: set(op["responses"]) for ops in document["paths"].values()
              for op in ops.values() if isinstance(op, dict) and "operationId" in op}
    needing_a_role = sorted(op.operation_id for op in openapi.OPERATIONS
                            if roles.OPERATIONS.get(op.name, "viewer") != "viewer" and op.operation_id in listed)
    assert "revokeRecipient" in needing_a_role
    assert [o for o in needing_a_role if "403" not in listed[o]] == []
    forbidden = document["paths"]["/api/v1/documents/{document_id}/recipients/{email}"]["delete"]["responses"]["403"]
    assert "forbidden_role" in json.dumps(forbidden)


def test_single_sign_on_at_a_unicode_domain_can_turn_on_auto_join(client, app_clock):
    """Reproduction: an owner signed in through SSO as ana@münchen.de (the session's domain
    `@münchen.de`) could not turn on auto-join: `@münchen.de` was 422 (the setting took
    ASCII only) and `@xn--mnchen-3ya.de` 403 (not the session's domain), so no one at an
    internationalised domain could ever join by SSO. Domains are compared in their ASCII
    (IDNA) form, as recipient entries are."""
    from chalicelib import wiring
    from chalicelib.services.accounts import Session
    from chalicelib.services.sso import SsoService

    ws, _key = wiring.workspaces().create_workspace("Stadtwerke", "free")
    who = SsoService.identity({"email": "Ana@München.de", "email_verified": True})
    session = Session("h", who.email, ws.id, 0, 10**15, role="owner", sso_domain=who.domain)
    service = SsoService(wiring.default_context(), None)
    assert service.set_auto_join(session, "@münchen.de", "editor") == {"domain": "@xn--mnchen-3ya.de",
                                                                       "role": "editor"}
    assert service.set_auto_join(session, "@XN--MNCHEN-3YA.DE", "viewer")["domain"] == "@xn--mnchen-3ya.de"
    joiner = SsoService.identity({"email": "bob@münchen.de", "email_verified": True})
    assert wiring.default_context().workspaces.sso_auto_join_for(joiner.domain) == [(ws.id, "viewer")]


def test_the_share_pages_review_route_refuses_an_oversized_body_in_its_own_json_shape(client, key):
    """Reproduction: POST /d/<share>/reviews (the share page's JSON route for decisions,
    contract 7e: 201 Review or section 3's error body) answered a body over the 64 KiB
    form cap with the HTML "Request refused" page, while the feedback route beside it
    answered 413 in the contract's JSON: the page's script got HTML where it reads JSON."""
    doc = publish(client, key)
    body = json.dumps({"decision": "approved", "message": "x" * 70_000}).encode()
    for route in ("reviews", "feedback"):
        r = client.http.post(f"/d/{doc['share_id']}/{route}", headers={"Content-Type": "application/json"},
                             body=body)
        assert r.status_code == 413, (route, r.status_code)
        assert r.headers["Content-Type"].startswith("application/json"), (route, r.body[:80])
        assert _error(r)["details"]["limit_bytes"] == 64 * 1024


def test_a_links_email_step_is_no_mail_relay_from_many_addresses(client, key, app_clock, monkeypatch):
    """Reproduction: a free key's document lists `@example.org` and is titled with an
    advert; its email step, asked from many client addresses (an IPv6 /48 holds 65,536
    /64s, each its own address to the limit of 20 an hour) for as many addresses at the
    domain, mailed a code, the advert and a link to each: 300 asks, 300 mails, and no
    end. Code mails now have a budget per document (200 an hour,
    limits.RECIPIENT_CODE_MAILS_PER_DOCUMENT); past it an admitted address gets no mail, and the answer is the same."""
    from chalicelib import wiring
    from chalicelib.domain import limits
    from tests.dashboard_client import outbox_messages

    # A budget of 20 (200 deployed) keeps the test short; 40 asks stand for the 300.
    monkeypatch.setattr(limits, "RECIPIENT_CODE_MAILS_PER_DOCUMENT", limits.Rate(20, 3600), raising=False)
    doc = publish(client, key, title="Cheap watches at example.biz", share_access="recipients",
                  share_recipients=["@example.org", "lead@example.org"])
    recipients = wiring.recipients()
    for n in range(40):
        assert recipients.request_code(doc["share_id"], f"person{n}@example.org", f"2001:db8:{n:x}::1") \
            == f"person{n}@example.org"  # the same answer for every address, budget or not
    sent = [m for m in outbox_messages() if m["kind"] == "recipient_code" and "Cheap watches" in m["subject"]]
    assert len(sent) < 40, "every ask mailed a stranger"
    assert len(sent) == limits.RECIPIENT_CODE_MAILS_PER_DOCUMENT.limit
    # An address listed one by one is not counted: a stranger spending the budget never locks it out.
    recipients.request_code(doc["share_id"], "lead@example.org", "2001:db8:fffe::1")
    assert [m["to"] for m in outbox_messages() if m["kind"] == "recipient_code"][0] == "lead@example.org"
    app_clock.advance(limits.RECIPIENT_CODE_MAILS_PER_DOCUMENT.window_seconds + 1)
    recipients.request_code(doc["share_id"], "late@example.org", "2001:db8:ffff::1")
    assert [m["to"] for m in outbox_messages() if m["kind"] == "recipient_code"][0] == "late@example.org"


def test_exports_are_not_built_without_end(client, key, app_clock):
    """Reproduction: only one export runs at a time, but the next may start the moment one is
    ready: a free key looping start, poll, start rebuilt its whole workspace (up to 100 MiB
    read, zipped and stored for an hour, each) without end: 30 exports in a row, all built.
    Exports now have a budget per workspace (limits.EXPORTS_PER_WORKSPACE, 10 a day); past
    it a start is 429 with Retry-After, and nothing is started."""
    from chalicelib import wiring

    handed: list[str] = []
    wiring.default_context().run_export = handed.append
    publish(client, key, title="Notes", html="<p>a page</p>")
    accepted = 0
    for _ in range(30):
        r = client.http.post("/api/v1/exports", headers={"X-Api-Key": key})
        if r.status_code != 202:
            break
        accepted += 1
        wiring.exports().build(handed.pop())
        app_clock.advance(60)
    assert accepted < 30, "every export was built"
    assert r.status_code == 429 and _error(r)["code"] == "rate_limited", r.body
    assert int(r.headers["Retry-After"]) > 60 and not handed
    from chalicelib.domain import limits

    assert accepted == limits.EXPORTS_PER_WORKSPACE.limit


TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"  # the shape of a GitHub token (not a real one)


def test_accepting_a_suggestion_is_a_write_like_an_edit_for_the_secret_scan(client, key, app_clock):
    """Reproduction: accepting a suggestion is an edit (contract 7e), yet for the secret scan
    (7g) it was not one: in a workspace that warns, a suggestion bringing in a token was
    stored and the answer carried no `warnings` (an edit's does); in one that blocks it was
    422 `secret_detected` with no way to store it anyway (`allow_secrets` was "not a field of
    this request"). The accept answer now carries `warnings`, and takes `allow_secrets`."""
    from tests.http.test_mcp import call

    doc = publish(client, key, html="<p>the quick brown fox jumps over the lazy dog</p>")

    def suggest(quote: str) -> str:
        r = post_json(client, f"/d/{doc['share_id']}/feedback",
                      {"message": "use this", "anchor": {"quote": quote}, "suggestion": {"replacement": TOKEN}})
        assert r.status_code == 201, r.body
        return json.loads(r.body)["feedback_id"]

    blocked = suggest("quick")
    r = post_json(client, f"/api/v1/feedback/{blocked}/accept", {}, key)
    assert r.status_code == 422 and _error(r)["code"] == "secret_detected", r.body
    r = post_json(client, f"/api/v1/feedback/{blocked}/accept", {"allow_secrets": True}, key)
    assert r.status_code == 200, r.body
    accepted = json.loads(r.body)
    assert [w["rule"] for w in accepted["warnings"]] == ["github-pat"]
    assert accepted["feedback"]["status"] == "resolved"

    r = client.http.patch("/api/v1/workspace", headers=auth(key), body=json.dumps({"secret_scanning": "warn"}))
    assert r.status_code == 200, r.body
    warned = suggest("lazy dog")
    result = call(client, key, "accept_suggestion", {"feedback_id": warned})
    assert not result["isError"], result
    assert [w["rule"] for w in result["structuredContent"]["warnings"]] == ["github-pat", "github-pat"]
    clean = post_json(client, f"/d/{doc['share_id']}/feedback",
                      {"message": "m", "anchor": {"quote": "brown"}, "suggestion": {"replacement": "red"}})
    plain = post_json(client, f"/api/v1/feedback/{json.loads(clean.body)['feedback_id']}/accept", {}, key)
    assert plain.status_code == 200 and "warnings" in json.loads(plain.body)  # the document still holds them


def test_a_title_on_two_lines_does_not_stop_the_links_codes(client, key, app_clock):
    """Reproduction: a title may hold a line break ("Plan\\r\\nQ3": 1 to 500 characters, not
    only whitespace); the code mail of a `recipients` link put it in its Subject as is, the
    mail library refused the header (ValueError), and no code was ever mailed for that
    link: nobody could open it. Every mail's subject is now one line."""
    from tests.dashboard_client import DashboardClient, mail_codes, outbox_messages

    doc = publish(client, key, title="Plan\r\nQ3", share_access="recipients", share_recipients=["a@client.example"])
    viewer = DashboardClient(client)
    assert viewer.post(f"/d/{doc['share_id']}/recipient/email", {"email": "a@client.example"}).status == 200
    codes = mail_codes("a@client.example")
    assert len(codes) == 1, "no code was mailed"
    subject = next(m["subject"] for m in outbox_messages() if m["kind"] == "recipient_code")
    assert subject == f"{codes[0]} is your code for Plan Q3"


def test_mcp_revoke_recipient_names_the_address_as_the_list_does(client, key, app_clock):
    """Reproduction: MCP revoke_recipient(email="CFO@Client.Example") revoked
    cfo@client.example (as REST does) but answered {"email": "CFO@Client.Example"}, an address
    list_recipients never shows; now the answer names it as stored."""
    from tests.http.test_mcp import call

    doc = publish(client, key, share_access="recipients", share_recipients=["cfo@client.example", "@münchen.de"])
    for given, stored in (("CFO@Client.Example", "cfo@client.example"), ("Jörg@München.de", None),
                          ("joerg@München.DE", "joerg@xn--mnchen-3ya.de")):
        result = call(client, key, "revoke_recipient", {"document_id": doc["document_id"], "email": given})
        if stored is None:
            assert result["isError"]  # not an address mail goes to as written
            continue
        assert not result["isError"], result
        assert result["structuredContent"]["email"] == stored
        listed = call(client, key, "list_recipients", {"document_id": doc["document_id"]})["structuredContent"]
        assert stored in [r["email"] for r in listed["recipients"] if r["revoked"]]


def test_a_suggestion_on_html_text_is_accepted_where_the_page_shows_it(client, key, app_clock):
    """Reproduction: a viewer selects "Fish & Chips" (the page's source says `Fish &amp;
    Chips`, as HTML must) or a sentence the source wraps over two lines, and suggests a
    change; anchor_state says `exact`, yet accepting it was 422 edit_not_found: the quote was
    looked for in the HTML source as typed. And the replacement went into the HTML as is:
    "Salt & Vinegar <crisps>" made a stray `&` and a `<crisps>` element. In an HTML page
    the quote is now also found as HTML writes that text (`&`, `<`, `>` escaped; any run of
    whitespace for a space), and the replacement is text, escaped."""
    cases = [("<p>Fish &amp; Chips today</p>", "Fish & Chips", "Salt & Vinegar <crisps>",
              "<p>Salt &amp; Vinegar &lt;crisps&gt; today</p>"),
             ("<p>The first line\n   goes on here.</p>", "first line goes on", "text",
              "<p>The text here.</p>")]
    for html, quote, replacement, expected in cases:
        doc = publish(client, key, html=html)
        r = post_json(client, f"/d/{doc['share_id']}/feedback",
                      {"message": "m", "anchor": {"quote": quote}, "suggestion": {"replacement": replacement}})
        assert r.status_code == 201, r.body
        accepted = post_json(client, f"/api/v1/feedback/{json.loads(r.body)['feedback_id']}/accept", {}, key)
        assert accepted.status_code == 200, (html, accepted.body)
        got = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}?include_html=true",
                                         headers=auth(key)).body)
        assert got["html"] == expected
        client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key))


def test_a_member_at_a_unicode_domain_can_still_be_asked_to_review(client, key, app_clock):
    """Keeps this pass's address rule from costing anything: a member whose account was made
    with a Unicode domain (ana@münchen.de, as typed at sign-up) is still a member when asked
    to review, though reviewers are now kept in their IDNA form (ana@xn--mnchen-3ya.de)."""
    from chalicelib import wiring
    from chalicelib.ports.records import Member, User

    workspace_id = json.loads(client.http.get("/api/v1/me", headers=auth(key)).body)["workspace"]["id"]
    ctx = wiring.default_context()
    ctx.users.create(User(email="ana@münchen.de", password_hash="x", workspace_id=workspace_id, created_ms=1))
    ctx.people.add_member(Member(workspace_id=workspace_id, email="ana@münchen.de", role="viewer", created_ms=1))
    doc = publish(client, key)
    r = post_json(client, f"/api/v1/documents/{doc['document_id']}/review-requests", {"reviewers": ["ana@münchen.de"]}, key)
    assert r.status_code == 202, r.body
    assert json.loads(r.body) == {"requested": ["ana@xn--mnchen-3ya.de"]}


def test_mcp_get_provenance_takes_a_number_not_true(client, key):
    """Reproduction: MCP get_provenance(version_number=true) answered version 1's statement (the
    SDK read `true` as the number 1); REST's path has no `true`, and its bodies refuse a boolean
    for a number (submit_review: 422 "must be a whole number"). A boolean is now refused here too."""
    from tests.http.test_mcp import call

    doc = publish(client, key)
    refused = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": True})
    assert refused["isError"] and "version_number" in refused["content"][0]["text"], refused
    ok = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": 1})
    assert not ok["isError"] and ok["structuredContent"]["statement"]["version_number"] == 1
