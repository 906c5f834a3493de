"""Secret scanning on REST, MCP and the dashboard (issue 36, contract 7g): 422
secret_detected in the contract's shape with nothing stored, on both stores; the
workspace settings in /me and PATCH /api/v1/workspace; the dashboard's findings."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

from tests.dashboard_client import DashboardClient
from tests.helpers import post_json
from tests.unit.test_secret_scanning import SAMPLES

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
KEY = SAMPLES["aws-access-token"]
PREVIEW = KEY[:4] + "…" + KEY[-4:]


def _me(client, key):
    return json.loads(client.http.get("/api/v1/me", headers={"X-Api-Key": key}).body)["workspace"]


def _stored(client, key):
    me = _me(client, key)
    listed = json.loads(client.http.get("/api/v1/documents", headers={"X-Api-Key": key}).body)["documents"]
    return me["usage"], me["document_count"], len(listed)


def _zip(files):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


@BOTH
def test_a_secret_is_422_and_nothing_is_stored(client, workspace, storage):
    _, key = workspace
    doc = json.loads(post_json(client, "/api/v1/publish", {"title": "Log", "html": "<p>clean</p>"}, key).body)
    before = _stored(client, key)
    answer = post_json(client, "/api/v1/publish", {"title": "Log", "html": f"<h1>Run</h1>\n<p>{KEY}</p>"}, key)
    assert answer.status_code == 422
    error = json.loads(answer.body)["error"]
    assert error["code"] == "secret_detected"
    assert error["details"] == {"findings": [{"rule": "aws-access-token", "line": 2, "column": 4,
                                              "preview": PREVIEW}]}
    assert KEY.encode() not in answer.body
    # a new version of an existing document, an edit, and a bundle file: the same, nothing stored
    assert post_json(client, "/api/v1/publish", {"document_id": doc["document_id"], "html": f"<p>{KEY}</p>"},
                     key).status_code == 422
    edit = post_json(client, f"/api/v1/documents/{doc['document_id']}/edit",
                     {"edits": [{"old_string": "clean", "new_string": KEY}]}, key)
    assert edit.status_code == 422
    assert json.loads(edit.body)["error"]["details"]["findings"][0]["column"] == 4
    files = {"index.html": b"<h1>Site</h1>", "js/config.js": f"const token = '{SAMPLES['github-pat']}';".encode()}
    bundle = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "multipart/form-data; boundary=b"},
                              body=_multipart("site.zip", _zip(files)))
    assert bundle.status_code == 422, bundle.body
    assert json.loads(bundle.body)["error"]["details"]["findings"] == [
        {"rule": "github-pat", "path": "js/config.js", "line": 1, "column": 16,
         "preview": SAMPLES["github-pat"][:4] + "…" + SAMPLES["github-pat"][-4:]}]
    assert _stored(client, key) == before
    versions = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}",
                                          headers={"X-Api-Key": key}).body)["version_count"]
    assert versions == 1
    # allow_secrets: stored, with the findings as warnings
    allowed = post_json(client, "/api/v1/publish", {"title": "Log", "html": f"<p>{KEY}</p>", "allow_secrets": True},
                        key)
    assert allowed.status_code == 200, allowed.body
    assert json.loads(allowed.body)["warnings"] == [{"rule": "aws-access-token", "line": 1, "column": 4,
                                                     "preview": PREVIEW, "kind": "secret"}]


def _multipart(filename: str, data: bytes) -> bytes:
    return (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + filename.encode()
            + b"\"\r\nContent-Type: application/zip\r\n\r\n" + data + b"\r\n--b\r\n"
            b"Content-Disposition: form-data; name=\"title\"\r\n\r\nSite\r\n--b--\r\n")


@BOTH
def test_me_reports_the_settings_and_an_owner_changes_them(client, workspace, storage):
    from chalicelib import wiring
    from chalicelib.models import UpdateWorkspaceRequest
    from chalicelib.errors import ForbiddenRole
    from chalicelib.services.access import Actor, operator

    ws, key = workspace
    me = _me(client, key)
    assert (me["secret_scanning"], me["pii_scanning"]) == ("block", "off")
    # the workspace's own key acts as its owner (a member's key with the member's role)
    answer = client.http.patch("/api/v1/workspace", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                               body=json.dumps({"secret_scanning": "warn"}))
    assert answer.status_code == 200, answer.body
    assert json.loads(answer.body)["workspace"]["secret_scanning"] == "warn"
    changed = wiring.workspaces().update_settings(operator(ws.id), UpdateWorkspaceRequest(pii_scanning="warn"))
    assert (changed.workspace.secret_scanning, changed.workspace.pii_scanning) == ("warn", "warn")
    # an editor may not
    editor = Actor(ws.id, role="editor", member="ed@example.com")
    with pytest.raises(ForbiddenRole):
        wiring.workspaces().update_settings(editor, UpdateWorkspaceRequest(secret_scanning="off"))
    me = _me(client, key)
    assert (me["secret_scanning"], me["pii_scanning"]) == ("warn", "warn")
    answer = post_json(client, "/api/v1/publish", {"title": "Log", "html": f"<p>{KEY} ada@example.org</p>"}, key)
    assert answer.status_code == 200
    assert [(w["rule"], w["kind"]) for w in json.loads(answer.body)["warnings"]] == [
        ("aws-access-token", "secret"), ("email", "pii")]


def test_patch_workspace_validates(client, workspace):
    _, key = workspace
    for body in ({"secret_scanning": "maybe"}, {}, {"pii_scanning": "block"}):
        bad = client.http.patch("/api/v1/workspace", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                                body=json.dumps(body))
        assert bad.status_code == 422 and json.loads(bad.body)["error"]["code"] == "validation_error", body


def test_mcp_tool_error_says_where_and_what_to_do(client, workspace):
    from tests.http.test_mcp import call

    _, key = workspace
    result = call(client, key, "publish_document", {"title": "Log", "html": f"<p>ok</p>\n<p>key {KEY}</p>"})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith(f"secret_detected: The content holds an AWS access key on line 2, column 8 ({PREVIEW}); "
                           "remove it and publish again, or pass allow_secrets: true")
    assert KEY not in text
    ok = call(client, key, "publish_document", {"title": "Log", "html": f"<p>{KEY}</p>", "allow_secrets": True})
    assert not ok.get("isError") and ok["structuredContent"]["warnings"][0]["rule"] == "aws-access-token"


@pytest.fixture
def pro_owner(client, app_clock):
    from chalicelib import wiring

    dash = DashboardClient(client)
    dash.sign_up()
    page = dash.get("/dashboard/workspace")
    workspace_id = page.text.split("Workspace <code>")[1].split("</code>")[0]
    wiring.workspaces().set_plan(workspace_id, "pro")
    return dash


def test_dashboard_upload_and_edit_show_findings_and_settings_save(client, pro_owner):
    dash = pro_owner
    page = dash.post_multipart("/dashboard/upload", {"title": "Run log"},
                               {"file": ("log.md", f"# Run\n\nkey: {KEY}\n".encode())}, csrf=dash.token())
    assert page.status == 422
    assert "line 3, column 6" in page.text and PREVIEW in page.text and KEY not in page.text
    assert 'name="allow_secrets"' in page.text
    page = dash.post_multipart("/dashboard/upload", {"title": "Run log", "allow_secrets": "on"},
                               {"file": ("log.md", f"# Run\n\nkey: {KEY}\n".encode())}, csrf=dash.token())
    assert page.status == 303, page.text
    document_path = page.location.split("?")[0]
    document_path = document_path[document_path.index("/dashboard/"):]
    edit = dash.post(f"{document_path}/edit", {"html": f"<p>{SAMPLES['stripe-access-token']}</p>"},
                     csrf=dash.token())
    assert edit.status == 422 and "stripe-access-token" in edit.text and "line 1, column 4" in edit.text
    saved = dash.post("/dashboard/workspace/scanning", {"secret_scanning": "off", "pii_scanning": "warn"},
                      csrf=dash.token())
    assert saved.status == 303
    page = dash.get("/dashboard/workspace")
    assert '<option value="off" selected>' in page.text and '<option value="warn" selected>' in page.text
