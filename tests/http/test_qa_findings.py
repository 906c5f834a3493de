"""Defects found by driving the running stack like a first user (helper s3-qa), each
reproduced here at the HTTP level before its fix."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers import auth, post_json, publish


def _error(r) -> dict:
    return json.loads(r.body)["error"]


def test_a_route_without_a_body_refuses_unknown_fields_like_every_other(client, workspace):
    """Contract section 1: unknown JSON fields are 422, so a typo never silently does
    nothing; MCP's rotate_share_link already refused an extra argument, REST ignored it
    (POST /share/rotate {"x": 1} rotated the link)."""
    _, key = workspace
    doc = publish(client, key)
    rotate = f"/api/v1/documents/{doc['document_id']}/share/rotate"
    r = post_json(client, rotate, {"keep_old_link": True}, key)
    assert r.status_code == 422, r.body
    assert _error(r)["details"]["fields"][0]["field"] == "keep_old_link"
    before = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).body)
    assert before["share_url"] == doc["share_url"]  # nothing changed
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key), body=b'{"force": true}')
    assert r.status_code == 422 and _error(r)["code"] == "validation_error"
    assert client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).status_code == 200
    r = client.http.post(rotate, headers={"X-Api-Key": key, "Content-Type": "application/json"}, body=b"{bad")
    assert r.status_code == 400 and _error(r)["code"] == "invalid_json"
    # No body, an empty body or an empty object: what clients send, still fine.
    assert client.http.post(rotate, headers={"X-Api-Key": key}).status_code == 200
    assert post_json(client, rotate, {}, key).status_code == 200
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key), body=b"")
    assert r.status_code == 204


def _uploaded(client, key, data: bytes, filename: str = "page.html") -> str:
    """An upload of `data`, complete: PUT to the local server, or (DynamoDB + S3) put
    where the presigned URL points, as S3 would store it."""
    from urllib.parse import urlsplit

    from tests.http.test_content_uploads import put, ticket

    t = json.loads(ticket(client, key, filename, len(data)).body)
    url = urlsplit(t["upload_url"])
    if "X-Amz-Signature=" in url.query:
        from chalicelib import config
        from chalicelib.adapters.aws import clients

        clients.s3().put_object(Bucket=config.bucket_name(), Body=data,
                                Key=f"uploads/{url.path.split('/')[-2]}/{t['upload_id']}.bin")
    else:
        assert put(client, t["upload_url"], data).status_code == 204
    return t["upload_id"]


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_a_refused_publish_does_not_use_up_its_upload(client, workspace):
    """Reproduction: an upload of a page without <title> or <h1>, published without a
    title, is 422 naming `title`; the corrected publish then got 404 "No such upload
    (an upload is used once)": the refused request had consumed the upload, and the
    user had to send the file (up to 36 MiB) again. A refused request changes nothing."""
    _, key = workspace
    upload_id = _uploaded(client, key, b"<p>no title here</p>")
    r = post_json(client, "/api/v1/publish", {"upload_id": upload_id}, key)
    assert r.status_code == 422 and _error(r)["details"]["fields"][0]["field"] == "title"
    assert _error(r)["message"] == "title: is required: the page has no <title> or <h1> to take it from"
    r = post_json(client, "/api/v1/publish", {"upload_id": upload_id,
                                              "document_id": "3f0c0000-0000-4000-8000-000000000000"}, key)
    assert r.status_code == 404  # an unknown document: refused, the upload is still there
    r = post_json(client, "/api/v1/publish", {"upload_id": upload_id, "title": "Now titled"}, key)
    assert r.status_code == 200, r.body
    again = post_json(client, "/api/v1/publish", {"upload_id": upload_id, "title": "Twice"}, key)
    assert again.status_code == 404  # still single use once published


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_a_retried_upload_publish_replays_its_first_answer(client, workspace):
    """Reproduction: the CLI keeps its Idempotency-Key across retries; a publish by
    upload_id whose answer was lost, retried with the same key and body, got 404 "No
    such upload." instead of the first answer (contract section 5: a retry with the
    same key and body returns the first answer and creates nothing new)."""
    _, key = workspace
    upload_id = _uploaded(client, key, b"<title>Up</title><p>big</p>")
    headers = {"Idempotency-Key": "cli-run-1"}
    first = post_json(client, "/api/v1/publish", {"upload_id": upload_id}, key, headers)
    assert first.status_code == 200, first.body
    retry = post_json(client, "/api/v1/publish", {"upload_id": upload_id}, key, headers)
    assert retry.status_code == 200, retry.body
    assert json.loads(retry.body) == json.loads(first.body)
    listing = json.loads(client.http.get("/api/v1/documents", headers=auth(key)).body)
    assert len(listing["documents"]) == 1  # nothing new
    other = post_json(client, "/api/v1/publish", {"upload_id": upload_id, "note": "other"}, key, headers)
    assert other.status_code == 422  # the same key with a different body


def test_dashboard_diff_and_restore_after_an_old_version_was_deleted(owner, client):
    """Reproduction: with versions 1-3 and version 1 deleted (DELETE …/versions/:id),
    the dashboard's "Changes" page without from/to answered 404 (it took the number of
    versions, 2, for the latest number, and compared 1 with 2); a version number too
    large for the store (?from=99999999999999999999, or restore number=…) was a 500."""
    from tests.http.test_dashboard import create_key, doc_id_from, rest, upload

    key = create_key(owner)
    document_id = doc_id_from(upload(owner, b"<p>one</p>\n", title="Notes"))
    upload(owner, b"<p>two</p>\n", document_id=document_id)
    upload(owner, b"<p>three</p>\n", document_id=document_id)
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}", key).body)
    first = got["versions"][0]["version_id"]
    assert rest(client, "delete", f"/api/v1/documents/{document_id}/versions/{first}", key).status_code == 204
    page = owner.get(f"/dashboard/documents/{document_id}/diff")
    assert page.status == 200, page.text
    assert "Version 2 → version 3" in page.text  # the latest against the version before it
    assert owner.get(f"/dashboard/documents/{document_id}/diff?to=3").status == 200
    huge = "99999999999999999999"
    assert owner.get(f"/dashboard/documents/{document_id}/diff?from={huge}&to=3").status == 404
    assert owner.get(f"/dashboard/documents/{document_id}/diff?from=2&to={huge}").status == 404
    page = owner.post(f"/dashboard/documents/{document_id}/restore", {"number": huge}, csrf=owner.token())
    assert page.status == 404, page.text
    got = json.loads(rest(client, "get", f"/api/v1/documents/{document_id}", key).body)
    assert [v["number"] for v in got["versions"]] == [2, 3]  # nothing written


def test_a_request_without_a_body_is_not_refused_for_its_content_type(client, workspace):
    """Reproduction: GET /api/v1/me (or a share page, or the dashboard) carrying
    `Content-Type: text/plain` or a form type and no body was 415: Chalice judges the
    header on every request. httpx keeps the form's Content-Type when it follows the
    dashboard's 303 after a form post, so every redirected page was 415. 415 is for a
    body sent with a type the route does not take (contract section 3)."""
    _, key = workspace
    doc = publish(client, key)
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        headers = {"X-Api-Key": key, "Content-Type": content_type}
        assert client.http.get("/api/v1/me", headers=headers).status_code == 200
        assert client.http.get(f"/d/{doc['share_id']}", headers={"Content-Type": content_type}).status_code == 200
        assert client.http.get("/dashboard/sign-in", headers={"Content-Type": content_type}).status_code == 200
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key,
                                                                                "Content-Type": "text/plain"})
    assert r.status_code == 204
    # A body of a type the route does not take is still 415.
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "text/plain"},
                         body=b'{"title": "a", "html": "<p>b</p>"}')
    assert r.status_code == 415 and _error(r)["code"] == "unsupported_media_type"


def test_base_version_id_without_document_id_is_refused(client, workspace):
    """Reproduction: a script meaning to append a version but missing `document_id`
    sent `base_version_id` (the version it read) and got a new document: the guard it
    asked for silently did nothing. Without a document it names no version: 422."""
    _, key = workspace
    doc = publish(client, key)
    r = post_json(client, "/api/v1/publish", {"title": "Doc", "html": "<p>y</p>",
                                              "base_version_id": doc["version_id"]}, key)
    assert r.status_code == 422, r.body
    assert _error(r)["details"]["fields"][0]["field"] == "base_version_id"
    listing = json.loads(client.http.get("/api/v1/documents", headers=auth(key)).body)
    assert len(listing["documents"]) == 1  # nothing created
    r = post_json(client, "/api/v1/publish", {"title": "Doc", "html": "<p>y</p>", "document_id": doc["document_id"],
                                              "base_version_id": doc["version_id"]}, key)
    assert r.status_code == 200, r.body


def test_a_publish_or_edit_refused_for_its_content_type_carries_the_rate_limit_headers(client, workspace):
    """Contract section 4: every publish and edit answer carries X-RateLimit-*; a 415
    (a body of a type the route does not take) came from Chalice before the view and
    carried none, unlike the 400, 404 and 422 answers of the same routes."""
    _, key = workspace
    doc = publish(client, key)
    for path in ("/api/v1/publish", f"/api/v1/documents/{doc['document_id']}/edit"):
        r = client.http.post(path, headers={"X-Api-Key": key, "Content-Type": "text/plain"}, body=b"{}")
        assert r.status_code == 415 and _error(r)["code"] == "unsupported_media_type"
        assert r.headers["X-RateLimit-Limit"] == "60" and r.headers["X-RateLimit-Remaining"] == "59", r.headers


def test_mcp_get_provenance_takes_the_version_number_as_a_number(client, workspace):
    """Reproduction (official MCP client): get_provenance with {"version_number": 1}, the
    number list_versions answers and REST puts in its path, was `validation_error:
    version_number: must be a string`; the tool's schema said string. A number is the
    argument's type now (a numeric string still works)."""
    from tests.http.test_mcp import call, rpc

    _, key = workspace
    doc = publish(client, key)
    tools = json.loads(rpc(client, key, "tools/list").body)["result"]["tools"]
    schema = next(t for t in tools if t["name"] == "get_provenance")["inputSchema"]
    assert schema["properties"]["version_number"]["type"] == "integer"
    assert schema["properties"]["version_number"]["minimum"] == 1
    rest = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}/versions/1/provenance",
                                      headers=auth(key)).body)
    for number in (1, "1"):
        result = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": number})
        assert not result.get("isError"), result
        assert result["structuredContent"] == rest
    missing = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": 2})
    assert missing["isError"] and missing["content"][0]["text"].startswith("not_found")
    bad = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": 0})
    assert bad["isError"] and bad["content"][0]["text"].startswith("validation_error: version_number")


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_a_member_removed_from_their_only_workspace_signs_in_and_joins_or_creates_one(client, app_clock,
                                                                                       fast_argon2):
    """Reproduction: Ed joined Acme from an invitation (no workspace of his own), Acme removed
    him, then Other Co invited him. Signing in (the invitation page's "Sign in as …") was
    401 "This account is not a member of any workspace any more", so the invitation could
    never be accepted. Now he signs in to a welcome page that offers the invitation link
    and a workspace of his own; nothing else of the dashboard opens without a workspace."""
    from tests.dashboard_client import DashboardClient, mail_link
    from tests.http.test_people import PASSWORD, invite, join_as_new

    acme = DashboardClient(client)
    acme.sign_up(email="owner@example.com", workspace="Acme")
    invite(acme, "ed@example.com", "editor")
    invite(acme, "vi@example.com", "viewer")
    ed = join_as_new(client, "ed@example.com")
    join_as_new(client, "vi@example.com")
    for email in ("ed@example.com", "vi@example.com"):
        assert acme.post("/dashboard/members/remove", {"email": email}, csrf=acme.token()).status == 303
    assert ed.get("/dashboard/documents").status == 303  # the session ended with the membership

    other = DashboardClient(client)
    other.sign_up(email="boss@example.com", workspace="Other Co")
    invite(other, "ed@example.com", "viewer")
    link = mail_link("ed@example.com", "invite")
    join_path = link[link.index("/dashboard/"):]
    ed = DashboardClient(client)
    page = ed.get(join_path)
    assert "Sign in as ed@example.com" in page.text
    signed = ed.post("/dashboard/sign-in", {"email": "ed@example.com", "password": PASSWORD,
                                            "next": join_path}, csrf=ed.get("/dashboard/sign-in").csrf())
    assert signed.status == 303, signed.text  # was 401 "not a member of any workspace any more"
    assert signed.location.endswith(join_path)
    page = ed.get(join_path)
    assert page.status == 200 and "Join Other Co" in page.text
    # Without a workspace, the dashboard's workspace pages send him to the welcome page.
    for path in ("/dashboard/documents", "/dashboard/keys", "/dashboard/members", "/dashboard/workspace"):
        r = ed.get(path)
        assert r.status == 303 and r.location.endswith("/dashboard/welcome"), (path, r.status)
    forged = ed.post_multipart("/dashboard/upload", {"title": "X"}, {"file": ("x.html", b"<p>x</p>")},
                               csrf=page.csrf())
    assert forged.status == 303 and forged.location.endswith("/dashboard/welcome")
    welcome = ed.get("/dashboard/welcome")
    assert welcome.status == 200, welcome.text
    assert "not a member of any workspace" in welcome.text and "Create a workspace" in welcome.text
    assert 'action="/dashboard/sign-out"' in welcome.text  # the header keeps Sign out
    assert ed.get("/dashboard/shared").status == 200  # links shared with his address still open
    # The welcome page lists the invitations waiting for him (no mail link needed), and joins.
    assert "Join Other Co" in welcome.text and "boss@example.com invited you as viewer" in welcome.text
    invite_id = re.search(r'name="invite_id" value="([^"]+)"', welcome.text).group(1)
    for bad in ("0" * 16, "é" * 16, ""):
        wrong = ed.post("/dashboard/welcome/join", {"invite_id": bad}, csrf=welcome.csrf())
        assert wrong.status == 404 and "No such invitation" in wrong.text, (bad, wrong.status)
    joined = ed.post("/dashboard/welcome/join", {"invite_id": invite_id}, csrf=welcome.csrf())
    assert joined.status == 303 and "m=joined" in joined.location, joined.text
    used = ed.post("/dashboard/join", {"token": join_path.split("token=")[1]}, csrf=page.csrf())
    assert used.status == 422  # the mailed link was that invitation: used now
    documents = ed.get("/dashboard/documents")
    assert documents.status == 200 and "viewer" in documents.text
    assert "Other Co" in ed.get("/dashboard/workspace").text
    assert ed.get("/dashboard/welcome").location.endswith("/dashboard/documents")  # nothing to welcome to

    # Vi has no invitation: she makes a workspace of her own (once: she is then its owner).
    vi = DashboardClient(client)
    assert vi.sign_in(email="vi@example.com", password=PASSWORD).status == 303
    welcome = vi.get("/dashboard/welcome")
    out = vi.post("/dashboard/sign-out", {}, csrf=welcome.csrf())
    assert out.status == 303 and vi.get("/dashboard/welcome").location.startswith("/dashboard/sign-in")
    assert vi.sign_in(email="vi@example.com", password=PASSWORD).status == 303
    welcome = vi.get("/dashboard/welcome")
    assert "No invitation is waiting for vi@example.com" in welcome.text
    empty = vi.post("/dashboard/welcome/workspace", {"workspace_name": " "}, csrf=welcome.csrf())
    assert empty.status == 422 and "workspace_name" in empty.text
    made = vi.post("/dashboard/welcome/workspace", {"workspace_name": "Vi Co"}, csrf=welcome.csrf())
    assert made.status == 303 and made.location.endswith("/dashboard/documents?m=workspace-created"), made.text
    assert "Vi Co" in vi.get("/dashboard/workspace").text
    assert vi.post("/dashboard/keys", {"name": "ci"}, csrf=vi.token()).status == 201  # she owns it
    again = vi.post("/dashboard/welcome/workspace", {"workspace_name": "Vi Two"}, csrf=vi.token())
    assert again.status == 303 and again.location.endswith("/dashboard/documents")
    names = [w["name"] for w in __import__("chalicelib.wiring", fromlist=["people"]).people()
             .workspaces_of("vi@example.com")]
    assert names == ["Vi Co"]


def test_revoking_an_address_the_link_never_named_is_404_on_rest_and_mcp(client, workspace):
    """Reproduction: DELETE …/recipients/kim@exmaple.com (a typo) on a link for
    kim@example.com answered 204 and listed "kim@exmaple.com" as a revoked recipient
    (GET …/recipients lists listed addresses and addresses verified under a listed
    domain, contract 7f); so did any address on a public link. An address that is not
    in share_recipients, not under a listed domain and never opened the link is 404,
    and nothing is recorded; MCP revoke_recipient answers the same."""
    from tests.http.test_mcp import call

    _, key = workspace
    doc = publish(client, key)
    document_id = doc["document_id"]
    r = client.http.patch(f"/api/v1/documents/{document_id}", headers={**auth(key), "Content-Type": "application/json"},
                          body=json.dumps({"share_access": "recipients",
                                           "share_recipients": ["kim@example.com", "@acme.example"]}))
    assert r.status_code == 200, r.body
    r = client.http.delete(f"/api/v1/documents/{document_id}/recipients/kim%40exmaple.com", headers=auth(key))
    assert r.status_code == 404 and _error(r)["code"] == "not_found", r.body
    assert "kim@exmaple.com" in _error(r)["message"]
    bad = call(client, key, "revoke_recipient", {"document_id": document_id, "email": "kim@exmaple.com"})
    assert bad["isError"] and bad["content"][0]["text"].startswith("not_found"), bad
    listed = json.loads(client.http.get(f"/api/v1/documents/{document_id}/recipients", headers=auth(key)).body)
    assert [x["email"] for x in listed["recipients"]] == ["kim@example.com"]
    # Listed ones, and addresses under a listed domain (before they open it), are revoked as before.
    assert client.http.delete(f"/api/v1/documents/{document_id}/recipients/Kim%40Example.com",
                              headers=auth(key)).status_code == 204
    assert client.http.delete(f"/api/v1/documents/{document_id}/recipients/kim%40example.com",
                              headers=auth(key)).status_code == 204  # again: still revoked, not 404
    done = call(client, key, "revoke_recipient", {"document_id": document_id, "email": "ann@acme.example"})
    assert not done.get("isError"), done
    listed = json.loads(client.http.get(f"/api/v1/documents/{document_id}/recipients", headers=auth(key)).body)
    assert {x["email"]: x["revoked"] for x in listed["recipients"]} == {"kim@example.com": True,
                                                                        "ann@acme.example": True}
    public = publish(client, key, title="Public")
    r = client.http.delete(f"/api/v1/documents/{public['document_id']}/recipients/kim%40example.com",
                           headers=auth(key))
    assert r.status_code == 404, r.body


def test_an_export_verifies_offline_with_the_keys_it_carries(api, storage):
    """Reproduction: docs/exports.md says each exported version verifies offline with
    `docpub verify … --provenance provenance/<n>.json --keys KEYS.json`, but the zip held
    no keys: whoever keeps the export has to fetch them from the service that may be gone
    (the reason to verify offline). The zip now carries `signing-keys.json`, the JWKS of
    /.well-known/docpub-signing-keys.json, named in the manifest, and every statement
    verifies against it alone."""
    import io
    import zipfile

    from chalicelib import wiring
    from chalicelib.domain import provenance as signed
    from tests.http.test_exports import _download

    _, created = wiring.workspaces().create_workspace("Export Co", "free")
    key = created.api_key
    started: list[str] = []
    wiring.default_context().run_export = started.append
    doc = publish(api, key, title="Kept")
    publish(api, key, title="Kept", document_id=doc["document_id"], html="<p>second</p>")
    r = api.http.post("/api/v1/exports", headers={"X-Api-Key": key})
    assert r.status_code == 202, r.body
    wiring.exports().build(started.pop())
    ready = json.loads(api.http.get(f"/api/v1/exports/{json.loads(r.body)['export_id']}",
                                    headers={"X-Api-Key": key}).body)
    archive = zipfile.ZipFile(io.BytesIO(_download(api, ready["download_url"], storage)))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["signing_keys"] == "signing-keys.json", manifest
    keys = json.loads(archive.read("signing-keys.json"))
    published = json.loads(api.http.get("/.well-known/docpub-signing-keys.json").body)
    assert keys == published and keys["keys"]
    folder = f"documents/{doc['document_id']}"
    for version in json.loads(archive.read(f"{folder}/document.json"))["versions"]:
        answer = json.loads(archive.read(version["provenance"]))
        assert signed.verify(answer, keys, archive.read(version["content"])).valid, version["number"]


def test_mcp_not_found_hints_name_where_the_tools_ids_come_from(client, workspace):
    """Reproduction (official MCP client): get_export with an unknown export_id answered
    `not_found: No export … (check the id: list_documents, find_document and list_feedback
    return valid ids)`: none of those gives an export id. The hint of a tool whose ids
    come from elsewhere names that place (start_export, list_versions, list_recipients)."""
    from tests.http.test_mcp import call

    _, key = workspace
    doc = publish(client, key)
    cases = [("get_export", {"export_id": "exp_AAAAAAAAAAAAAAAA"}, "start_export"),
             ("get_provenance", {"document_id": doc["document_id"], "version_number": 7}, "list_versions"),
             ("revoke_recipient", {"document_id": doc["document_id"], "email": "kim@example.com"},
              "list_recipients")]
    for name, arguments, source in cases:
        text = call(client, key, name, arguments)["content"][0]["text"]
        assert text.startswith("not_found: ") and source in text and "list_feedback" not in text, (name, text)
    text = call(client, key, "get_document", {"document_id": "3f0c0000-0000-4000-8000-000000000000"})
    assert "list_documents" in text["content"][0]["text"]  # the general hint stays for the others


def test_an_export_keeps_who_a_link_was_shared_with(api, storage):
    """Reproduction: a `recipients` document's document.json in the export said
    `"share_access": "recipients"` but not who (no share_recipients, no passphrase_protected,
    unlike GET /api/v1/documents/:id that docs/exports.md says it mirrors), and who opened it
    (GET …/recipients) was not in the zip at all. Both are there now."""
    import io
    import zipfile

    from chalicelib import wiring
    from tests.http.test_exports import _download

    _, created = wiring.workspaces().create_workspace("Export Co", "free")
    key = created.api_key
    started: list[str] = []
    wiring.default_context().run_export = started.append
    doc = publish(api, key, title="Audit pack")
    r = api.http.patch(f"/api/v1/documents/{doc['document_id']}",
                       headers={**auth(key), "Content-Type": "application/json"},
                       body=json.dumps({"share_access": "recipients",
                                        "share_recipients": ["kim@example.com", "@acme.example"]}))
    assert r.status_code == 200, r.body
    assert api.http.delete(f"/api/v1/documents/{doc['document_id']}/recipients/kim%40example.com",
                           headers=auth(key)).status_code == 204
    detail = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).body)
    listed = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}/recipients", headers=auth(key)).body)
    r = api.http.post("/api/v1/exports", headers={"X-Api-Key": key})
    wiring.exports().build(started.pop())
    ready = json.loads(api.http.get(f"/api/v1/exports/{json.loads(r.body)['export_id']}",
                                    headers={"X-Api-Key": key}).body)
    archive = zipfile.ZipFile(io.BytesIO(_download(api, ready["download_url"], storage)))
    folder = f"documents/{doc['document_id']}"
    exported = json.loads(archive.read(f"{folder}/document.json"))
    assert exported["share_access"] == "recipients"
    assert exported["share_recipients"] == detail["share_recipients"] == ["@acme.example"]
    assert exported["passphrase_protected"] is False
    assert json.loads(archive.read(f"{folder}/recipients.json")) == listed
    assert listed["recipients"][0]["email"] == "kim@example.com" and listed["recipients"][0]["revoked"]
