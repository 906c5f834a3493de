"""Signed versions (contract 7g): every way a version is made signs a statement of it,
`GET /api/v1/documents/:id/versions/:n/provenance` and the MCP tool `get_provenance`
answer it, `/.well-known/docpub-signing-keys.json` lists the keys, the share page says
"Verified", and a version made before signing existed answers 404 provenance_unavailable."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from chalicelib.domain import provenance as rules
from tests.helpers import post_json, publish
from tests.http.test_mcp import call

BOTH = pytest.mark.parametrize("store", ["sqlite", pytest.param("aws", marks=pytest.mark.aws)])


@pytest.fixture
def pro(client):
    from chalicelib import wiring

    workspace, created = wiring.workspaces().create_workspace("Provenance", "pro")
    return workspace, created.api_key


def _get(client, path, key=None):
    return client.http.get(path, headers={"Accept": "*/*", **({"X-Api-Key": key} if key else {})})


def _provenance(client, key, document_id, number):
    r = _get(client, f"/api/v1/documents/{document_id}/versions/{number}/provenance", key)
    assert r.status_code == 200, r.body
    return json.loads(r.body)


def _keys(client):
    r = _get(client, "/.well-known/docpub-signing-keys.json")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


def _download(client, share_id, number):
    r = _get(client, f"/d/{share_id}?download=1&v={number}")
    assert r.status_code == 200, r.body[:300]
    return r.body


def _verify_download(client, key, document_id, share_id, number):
    """The provenance checked as `docpub verify` does: content as downloaded, the JWKS."""
    answer = _provenance(client, key, document_id, number)
    data = _download(client, share_id, number)
    files = None
    if answer["statement"]["files"]:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            index = next(n for n in names if n in ("index.html", "index.md"))
            files = {n: hashlib.sha256(archive.read(n)).hexdigest() for n in names if n != index}
            data = archive.read(index)
    verdict = rules.verify(answer, _keys(client), data, files)
    assert verdict.valid, verdict.failures
    return answer


@BOTH
def test_every_way_of_making_a_version_signs_it(client, pro, store):
    from chalicelib import wiring
    from chalicelib.services.access import Actor

    workspace, key = pro
    doc = publish(client, key, title="Report", html="<h1>Report</h1><p>two minutes</p>")
    document_id, share_id = doc["document_id"], doc["share_id"]
    first = _verify_download(client, key, document_id, share_id, 1)
    stated = first["statement"]
    assert stated["document_id"] == document_id and stated["workspace_id"] == workspace.id
    assert stated["version_number"] == 1 and stated["files"] == []
    assert stated["content_sha256"] == hashlib.sha256(b"<h1>Report</h1><p>two minutes</p>").hexdigest()
    assert stated["publisher"]["kind"] == "key" and stated["publisher"]["id"].startswith("key_")
    assert first["signature"]["alg"] == "ES256" and len(rules.b64url_decode(first["signature"]["value"])) == 64
    # edit (2), Markdown (3), a bundle (4), a multipart upload (5), restore (6), dashboard edit (7)
    r = post_json(client, f"/api/v1/documents/{document_id}/edit",
                  {"edits": [{"old_string": "two", "new_string": "three"}]}, key)
    assert r.status_code == 200, r.body
    post = post_json(client, "/api/v1/publish", {"document_id": document_id, "format": "markdown",
                                                 "html": "# Report\n\nthree minutes\n"}, key)
    assert post.status_code == 200, post.body
    post = post_json(client, "/api/v1/publish", {"document_id": document_id, "html": "<img src='a/b.svg'>",
                                                 "files": [{"path": "a/b.svg", "content": "<svg/>"}]}, key)
    assert post.status_code == 200, post.body
    from urllib3 import encode_multipart_formdata

    body, content_type = encode_multipart_formdata({"document_id": document_id,
                                                    "file": ("r.html", b"<p>uploaded</p>")})
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": content_type}, body=body)
    assert r.status_code == 200, r.body
    wiring.editing().restore_version(Actor(workspace.id, role="owner", member="ann@example.com",
                                           surface="dashboard"), document_id, 3)
    wiring.editing().save_html(Actor(workspace.id, role="owner", member="ann@example.com",
                                     surface="dashboard"), document_id, "<p>saved in the browser</p>")
    answers = {n: _verify_download(client, key, document_id, share_id, n) for n in range(2, 8)}
    assert answers[3]["statement"]["content_sha256"] == hashlib.sha256(b"# Report\n\nthree minutes\n").hexdigest()
    assert answers[4]["statement"]["files"] == [{"path": "a/b.svg", "sha256": hashlib.sha256(b"<svg/>").hexdigest()}]
    assert answers[6]["statement"]["content_sha256"] == answers[3]["statement"]["content_sha256"]
    assert answers[7]["statement"]["publisher"] == {"kind": "member", "id": "ann@example.com",
                                                    "name": "ann@example.com"}


def test_an_accepted_suggestion_is_signed_by_who_accepted_it(client, pro):
    from tests.http.test_suggestions import ANCHOR, HTML, _accept, _suggest

    _, key = pro
    doc = publish(client, key, html=HTML)
    r = _accept(client, key, _suggest(client, doc["share_id"], anchor=ANCHOR))
    assert r.status_code == 200, r.body
    answer = _verify_download(client, key, doc["document_id"], doc["share_id"], 2)
    assert answer["statement"]["publisher"]["kind"] == "key"


def test_the_mcp_tool_answers_the_same_statement(client, pro):
    _, key = pro
    doc = publish(client, key)
    result = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": 1})
    assert not result.get("isError"), result
    assert result["structuredContent"] == _provenance(client, key, doc["document_id"], 1)
    missing = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": 2})
    assert missing["isError"] and missing["content"][0]["text"].startswith("not_found")
    zero = call(client, key, "get_provenance", {"document_id": doc["document_id"], "version_number": 0})
    assert zero["isError"]


@pytest.mark.parametrize("number", ["0", "2", "x", "01x", "99999999999", "%C2%B2"])
def test_no_such_version_is_404(client, pro, number):
    _, key = pro
    doc = publish(client, key)
    r = _get(client, f"/api/v1/documents/{doc['document_id']}/versions/{number}/provenance", key)
    assert r.status_code == 404 and json.loads(r.body)["error"]["code"] == "not_found"
    assert _get(client, f"/api/v1/documents/{doc['document_id']}/versions/1/provenance").status_code == 401


def test_a_version_made_before_signing_is_404_provenance_unavailable(client, pro, monkeypatch):
    from chalicelib.services import provenance

    _, key = pro
    monkeypatch.setattr(provenance, "signed", lambda ctx, actor, document_id, version, content: version)
    doc = publish(client, key)  # stored as versions were before this feature: no statement
    monkeypatch.undo()
    r = _get(client, f"/api/v1/documents/{doc['document_id']}/versions/1/provenance", key)
    assert r.status_code == 404, r.body
    error = json.loads(r.body)["error"]
    assert error["code"] == "not_found" and error["details"] == {"reason": "provenance_unavailable"}
    line = _get(client, f"/d/{doc['share_id']}/verified?v=1")
    assert line.status_code == 200 and line.body.decode().strip() == ""
    # the next version is signed
    post = post_json(client, "/api/v1/publish", {"document_id": doc["document_id"], "html": "<p>2</p>"}, key)
    assert post.status_code == 200
    _verify_download(client, key, doc["document_id"], doc["share_id"], 2)


def _line(client, share_id, number=1):
    r = _get(client, f"/d/{share_id}/verified?v={number}")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    return r


def test_the_share_page_says_who_published_when_and_that_the_content_matches(client, pro):
    _, key = pro
    doc = publish(client, key, html="<p>checked</p>")
    page = _get(client, f"/d/{doc['share_id']}").body.decode()
    assert f'<div id="pv" data-src="/d/{doc["share_id"]}/verified?v=1"></div>' in page  # page.js fetches it
    r = _line(client, doc["share_id"])
    assert r.headers["Cache-Control"].startswith("public, max-age=0, s-maxage=")
    line = r.body.decode()
    answer = _provenance(client, key, doc["document_id"], 1)
    stated = answer["statement"]
    assert line.startswith('<details class="verified"><summary><b>Verified</b>: published by')
    assert "its content matches what was signed" in line and f"<b>{stated['publisher']['name']}</b>" in line
    assert f'datetime="{stated["published_at"]}"' in line and stated["content_sha256"] in line
    assert answer["signature"]["kid"] in line
    # the share link answers the same statement (what `docpub verify SHARE_URL` reads), to anyone who can view it
    shared = _get(client, f"/d/{doc['share_id']}/provenance")
    assert shared.status_code == 200 and json.loads(shared.body) == answer
    assert _get(client, "/d/nosuchlinkatall000000/provenance").status_code == 404
    assert _get(client, "/d/nosuchlinkatall000000/verified").body == b""


def test_a_tampered_stored_content_is_not_verified_on_the_share_page(client, pro):
    from chalicelib import wiring
    from chalicelib.ports import version_key

    workspace, key = pro
    doc = publish(client, key, html="<p>original</p>")
    ctx = wiring.default_context()
    version = ctx.documents.get_version(doc["document_id"], 1)
    ctx.blobs.put_html(version_key(workspace.id, doc["document_id"], version.version_id), b"<p>forged</p>")
    line = _line(client, doc["share_id"]).body.decode()
    assert "<b>Not verified</b>" in line and "Failed: content" in line


def test_a_protected_links_line_is_private_and_needs_the_passphrase(client, pro):
    _, key = pro
    doc = publish(client, key)
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        headers={"X-Api-Key": key, "Content-Type": "application/json"},
                        body=json.dumps({"passphrase": "a long and unusual passphrase 42"}))
    assert r.status_code in (200, 204), r.body
    locked = _line(client, doc["share_id"])
    assert locked.body == b"" and locked.headers["Cache-Control"] == "private, no-store"
    assert _get(client, f"/d/{doc['share_id']}/provenance").status_code in (401, 403)


def test_the_key_set_is_a_jwks_of_p256_keys(client, pro):
    _, key = pro
    publish(client, key)
    keys = _keys(client)["keys"]
    assert len(keys) == 1
    jwk = keys[0]
    assert {jwk["kty"], jwk["crv"], jwk["alg"], jwk["use"]} == {"EC", "P-256", "ES256", "sig"}
    assert jwk["kid"] == rules.thumbprint(jwk) and "not_after" not in jwk and "d" not in jwk


def test_the_dashboard_hands_out_a_versions_statement_as_a_file(client, signed_in_owner):
    dash, key = signed_in_owner
    doc = publish(client, key, title="Dash", html="<p>dash</p>")
    page = dash.get(f"/dashboard/documents/{doc['document_id']}")
    assert f"/dashboard/documents/{doc['document_id']}/provenance?number=1" in page.text
    got = dash.get(f"/dashboard/documents/{doc['document_id']}/provenance?number=1")
    assert got.status == 200 and got.headers["Content-Disposition"] == 'attachment; filename="provenance-v1.json"'
    assert json.loads(got.text) == _provenance(client, key, doc["document_id"], 1)
    assert dash.get(f"/dashboard/documents/{doc['document_id']}/provenance?number=9").status == 404
