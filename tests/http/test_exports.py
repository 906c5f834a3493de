"""Workspace exports over REST and MCP (contract 7g, issue 36): a workspace with a bundle,
a Markdown document, feedback with owner and viewer replies and reviews is exported, and
every part is read back from the zip alone (nothing imported), on both stores: the
embedded store's signed download route, and S3's presigned URL (moto). Bad input: an
export while one runs is 429, a non-owner 403, an unknown id 404."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile

import pytest

from chalicelib import wiring
from chalicelib.domain import roles
from tests.helpers import auth, post_json, publish

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@pytest.fixture
def owner_key(api):
    _, created = wiring.workspaces().create_workspace("Export Co", "free")
    return created.api_key


@pytest.fixture
def handed(api):
    """Started exports, built when the test says (the background runner, injected)."""
    started: list[str] = []
    wiring.default_context().run_export = started.append
    return started


def _get(api, path, key):
    r = api.http.get(path, headers={"X-Api-Key": key})
    return r.status_code, json.loads(r.body) if r.body else None


def _start(api, key):
    return api.http.post("/api/v1/exports", headers={"X-Api-Key": key})


def _workspace(api, key, clock) -> dict:
    """A bundle (2 versions), a Markdown document, feedback, replies and reviews."""
    bundle = publish(api, key, title="Site", html='<link rel="stylesheet" href="css/site.css"><img src="img/dot.png">',
                     files=[{"path": "css/site.css", "content": "body { color: teal }"},
                            {"path": "img/dot.png", "content": base64.b64encode(PNG).decode(), "encoding": "base64"}])
    bundle2 = publish(api, key, title="Site", document_id=bundle["document_id"], note="second",
                      html='<link rel="stylesheet" href="css/site.css"><p>v2</p>',
                      files=[{"path": "css/site.css", "content": "body { color: navy }"}])
    notes = publish(api, key, title="Notes", html="# Notes\n\nThe *first* draft.", format="markdown")
    fb = post_json(api, f"/d/{notes['share_id']}/feedback", {"message": "Say more", "name": "Ana",
                                                                "quote": "first"})
    assert fb.status_code == 201, fb.body
    feedback_id = json.loads(fb.body)["feedback_id"]
    owner_reply = post_json(api, f"/api/v1/feedback/{feedback_id}/replies", {"message": "Will do"}, key)
    assert owner_reply.status_code == 201, owner_reply.body
    clock.advance(1)
    viewer_reply = post_json(api, f"/d/{notes['share_id']}/feedback/{feedback_id}/replies",
                             {"message": "Thanks!", "name": "Ana"})
    assert viewer_reply.status_code == 201, viewer_reply.body
    review = post_json(api, f"/api/v1/documents/{notes['document_id']}/reviews",
                       {"decision": "changes_requested", "message": "Needs numbers"}, key)
    assert review.status_code == 201, review.body
    return {"bundle": bundle, "bundle2": bundle2, "notes": notes, "feedback_id": feedback_id}


def _download(api, url: str, storage: str) -> bytes:
    if storage == "sqlite":  # the embedded store's signed route, served by the app itself
        path = url.split("://", 1)[1].split("/", 1)[1]
        r = api.http.get("/" + path, headers={"Accept": "*/*"})
        assert r.status_code == 200, r.body
        assert r.headers["Content-Type"] == "application/zip"
        assert r.headers["Content-Disposition"].startswith('attachment; filename="docpub-export-co-')
        return r.body
    from tests.http.test_content_downloads import fetch_presigned

    got = fetch_presigned(url)  # the presigned S3 GET, without credentials (moto answers it)
    assert got.status_code == 200, got.content
    assert got.headers["content-type"] == "application/zip"
    assert got.headers["content-disposition"].startswith('attachment; filename="docpub-export-co-')
    return got.content


@BOTH
def test_export_holds_every_part_and_reads_back_from_the_zip(api, storage, clock, owner_key, handed):
    made = _workspace(api, owner_key, clock)
    r = _start(api, owner_key)
    assert r.status_code == 202, r.body
    export_id = json.loads(r.body)["export_id"]
    assert list(json.loads(r.body)) == ["export_id"]
    assert _get(api, f"/api/v1/exports/{export_id}", owner_key) == (200, {"status": "running"})
    wiring.exports().build(handed.pop())
    status, ready = _get(api, f"/api/v1/exports/{export_id}", owner_key)
    assert status == 200 and ready["status"] == "ready" and set(ready) == {"status", "download_url", "expires_at"}
    if storage == "aws":
        assert "X-Amz-Expires=3600" in ready["download_url"]  # a presigned GET valid for an hour
    archive = zipfile.ZipFile(io.BytesIO(_download(api, ready["download_url"], storage)))
    assert archive.testzip() is None
    names = set(archive.namelist())

    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["format"] == "docpub-workspace-export" and manifest["export_id"] == export_id
    assert manifest["workspace"]["name"] == "Export Co"
    assert manifest["counts"] == {"documents": 2, "versions": 3, "files": 3, "feedback": 1, "replies": 2,
                                  "reviews": 1, "activity": manifest["counts"]["activity"], "provenance": 3}
    assert manifest["provenance"] is True
    # Each version's signed statement beside it, verifying against the exported content and files.
    from chalicelib.domain import provenance as signed
    from chalicelib.services.provenance import key_set

    keys = key_set(wiring.default_context()).model_dump()
    for listed in manifest["documents"]:
        folder = f"documents/{listed['document_id']}"
        for version in json.loads(archive.read(f"{folder}/document.json"))["versions"]:
            answer = json.loads(archive.read(version["provenance"]))
            content = archive.read(version.get("source") or version["content"])
            files = {f["path"]: f["sha256"] for f in version.get("files", [])} if version.get("files") else None
            assert signed.verify(answer, keys, content, files).valid, (folder, version["number"])

    # The bundle: both versions as published, each with its own files, byte for byte.
    site = f"documents/{made['bundle']['document_id']}"
    document = json.loads(archive.read(f"{site}/document.json"))
    assert document["title"] == "Site" and [v["number"] for v in document["versions"]] == [1, 2]
    assert document["versions"][1]["note"] == "second"
    assert archive.read(f"{site}/versions/1/content.html").startswith(b'<link rel="stylesheet" href="css/site.css">')
    assert archive.read(f"{site}/versions/1/files/css/site.css") == b"body { color: teal }"
    assert archive.read(f"{site}/versions/1/files/img/dot.png") == PNG
    assert archive.read(f"{site}/versions/2/files/css/site.css") == b"body { color: navy }"
    assert f"{site}/versions/2/files/img/dot.png" not in names
    for version in document["versions"]:
        for info in version.get("files", []):
            data = archive.read(f"{site}/versions/{version['number']}/files/{info['path']}")
            assert hashlib.sha256(data).hexdigest() == info["sha256"] and len(data) == info["size_bytes"]
    assert json.loads(archive.read(f"{site}/feedback.json")) == []
    assert json.loads(archive.read(f"{site}/reviews.json")) == []

    # The Markdown document: its source and the page rendered from it.
    notes = f"documents/{made['notes']['document_id']}"
    assert archive.read(f"{notes}/versions/1/content.md") == b"# Notes\n\nThe *first* draft."
    assert b"<em>first</em>" in archive.read(f"{notes}/versions/1/content.html")
    assert json.loads(archive.read(f"{notes}/document.json"))["versions"][0]["format"] == "markdown"
    # Feedback with its replies (owner's and viewer's), and the review.
    [thread] = json.loads(archive.read(f"{notes}/feedback.json"))
    assert thread["feedback_id"] == made["feedback_id"] and thread["message"] == "Say more"
    assert thread["quote"] == "first" and thread["name"] == "Ana"
    assert [(r["author"], r["message"]) for r in thread["replies"]] == [("owner", "Will do"), ("viewer", "Thanks!")]
    [review] = json.loads(archive.read(f"{notes}/reviews.json"))
    assert review["decision"] == "changes_requested" and review["message"] == "Needs numbers"
    assert review["version_number"] == 1

    # Activity, one JSON object a line: the publishes and the export's own start.
    lines = [json.loads(line) for line in archive.read("activity.jsonl").decode().splitlines()]
    assert len(lines) == manifest["counts"]["activity"]
    assert {"workspace.export", "document.publish"} <= {line["action"] for line in lines}
    # Nothing else: every name is one the layout documents.
    assert all(n in ("manifest.json", "activity.jsonl", "signing-keys.json") or n.startswith("documents/") for n in names)


@BOTH
def test_bad_input_429_while_one_runs_403_for_non_owners_404_for_unknown(api, storage, owner_key, handed,
                                                                         monkeypatch):
    first = _start(api, owner_key)
    assert first.status_code == 202
    second = _start(api, owner_key)
    assert second.status_code == 429
    body = json.loads(second.body)
    assert body["error"]["code"] == "rate_limited"
    assert body["error"]["details"] == {"retry_after_seconds": 5}
    assert second.headers["Retry-After"] == "5"
    for unknown in ("exp_zzzzzzzzzzzzzzzz", "not-an-export"):
        status, missing = _get(api, f"/api/v1/exports/{unknown}", owner_key)
        assert status == 404 and missing["error"]["code"] == "not_found"
    monkeypatch.setattr(roles, "API_KEY_ROLE", "editor")  # the workspace key now acts as an editor
    refused = _start(api, owner_key)
    assert refused.status_code == 403 and json.loads(refused.body)["error"]["code"] == "forbidden_role"
    status, _ = _get(api, f"/api/v1/exports/{json.loads(first.body)['export_id']}", owner_key)
    assert status == 403
    r = api.http.post("/api/v1/exports")  # no key
    assert r.status_code == 401


def test_mcp_tools_start_and_follow_an_export(api, owner_key, handed):
    def call(name, arguments):
        r = api.http.post("/mcp", headers={**auth(owner_key), "Accept": "application/json, text/event-stream"},
                          body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                           "params": {"name": name, "arguments": arguments}}))
        assert r.status_code == 200, r.body
        return json.loads(r.body)["result"]

    started = call("start_export", {})
    export_id = started["structuredContent"]["export_id"]
    assert call("get_export", {"export_id": export_id})["structuredContent"] == {"status": "running"}
    again = call("start_export", {})
    assert again["isError"] is True and "rate_limited" in again["content"][0]["text"]
    wiring.exports().build(handed.pop())
    ready = call("get_export", {"export_id": export_id})["structuredContent"]
    assert ready["status"] == "ready" and ready["download_url"].startswith("http")


def test_dashboard_button_progress_then_download_link(fast_argon2, owner, client):
    """Workspace page (owner): "Export workspace" (a CSRF form) starts it, the page follows
    it (an accessible status region its script polls), then shows the download link."""
    handed: list[str] = []
    wiring.default_context().run_export = handed.append
    page = owner.get("/dashboard/workspace")
    assert "Export workspace" in page and 'action="/dashboard/workspace/export"' in page.text
    assert owner.post("/dashboard/workspace/export", {}).status == 403  # no CSRF token
    started = owner.post("/dashboard/workspace/export", {}, csrf=page.csrf())
    assert started.status == 303 and "export=exp_" in started.location and started.location.endswith("#export")
    export_id = started.location.split("export=", 1)[1].split("#", 1)[0]
    following = owner.get(started.location[started.location.index("/dashboard/"):].split("#")[0])
    assert following.status == 200
    assert 'role="status"' in following and 'aria-live="polite"' in following and "<progress" in following
    assert f'data-export-poll="/dashboard/workspace/exports/{export_id}"' in following.text
    polled = owner.get(f"/dashboard/workspace/exports/{export_id}")
    assert polled.status == 200 and json.loads(polled.text) == {"status": "running"}
    again = owner.post("/dashboard/workspace/export", {}, csrf=following.csrf())
    assert again.status == 429 and "one runs at a time" in again.text
    wiring.exports().build(handed.pop())
    ready = json.loads(owner.get(f"/dashboard/workspace/exports/{export_id}").text)
    assert ready["status"] == "ready"
    done = owner.get(f"/dashboard/workspace?export={export_id}")
    assert "Download the export (zip)" in done and "<progress" not in done.text
    link = ready["download_url"]
    assert link.replace("&", "&amp;") in done.text
    r = client.http.get("/" + link.split("://", 1)[1].split("/", 1)[1], headers={"Accept": "*/*"})
    assert r.status_code == 200 and zipfile.ZipFile(io.BytesIO(r.body)).read("manifest.json")
    assert owner.get("/dashboard/workspace/exports/exp_zzzzzzzzzzzzzzzz").status == 404


def test_dashboard_shows_no_export_to_an_editor_and_refuses_one(fast_argon2, owner, client):
    from tests.dashboard_client import DashboardClient, mail_link

    invited = owner.post("/dashboard/members/invite", {"email": "ed@example.com", "role": "editor"},
                         csrf=owner.token())
    assert invited.status == 303
    editor = DashboardClient(client)
    path = mail_link("ed@example.com", "invite")
    path = path[path.index("/dashboard/"):]
    form = editor.get(path)
    editor.post("/dashboard/join/sign-up", {"token": path.split("token=")[1], "password": "correct horse battery"},
                csrf=form.csrf())
    page = editor.get("/dashboard/workspace")
    assert page.status == 200 and "Export workspace" not in page and "/workspace/export" not in page.text
    refused = editor.post("/dashboard/workspace/export", {}, csrf=page.csrf())
    assert refused.status == 403 and "owner" in refused.text
