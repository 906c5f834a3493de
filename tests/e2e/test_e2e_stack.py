"""End-to-end: the real local stack (`make run`, embedded store) over HTTP:
persistence, admin CLI, concurrency, delete."""
from __future__ import annotations

import concurrent.futures
from pathlib import Path

import httpx
import pytest

from tests.stack import LocalStack

pytestmark = pytest.mark.e2e


def blob_files(stack: LocalStack, document_id: str) -> list[Path]:
    """Version HTML files of a document in the stack's blob folder."""
    return [p for p in (stack.data_dir / "blobs").rglob("*")
            if p.is_file() and document_id in p.as_posix() and not p.name.startswith(".")]


def test_data_survives_a_restart(tmp_path):
    stack = LocalStack(tmp_path / "data").start()
    try:
        key = stack.api_key
        with stack.client() as http:
            doc = http.post("/api/v1/publish", json={"title": "Keep me", "html": "<p>persist é</p>"}).json()
    finally:
        stack.stop()
    assert (tmp_path / "data" / "dev-api-key").exists()
    assert (tmp_path / "data" / "docpub.sqlite3").exists()  # the embedded store, no emulator
    assert oct((tmp_path / "data" / "dev-api-key").stat().st_mode)[-3:] == "600"
    again = LocalStack(tmp_path / "data", port=stack.port).start()
    try:
        assert again.api_key == key  # the generated key is kept, not regenerated
        with again.client() as http:
            got = http.get(f"/api/v1/documents/{doc['document_id']}", params={"include_html": "true"})
            assert got.status_code == 200
            assert got.json()["html"] == "<p>persist é</p>"
            assert http.get("/api/v1/me").json()["workspace"]["document_count"] == 1
    finally:
        again.stop()


def test_dev_api_key_from_environment(tmp_path):
    key = "dpk_" + "k" * 40
    stack = LocalStack(tmp_path / "data", env={"DOCPUB_DEV_API_KEY": key}).start()
    try:
        r = httpx.get(stack.base_url + "/api/v1/me", headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200
        assert r.json()["workspace"]["plan"] == "free"
    finally:
        stack.stop()


def test_admin_cli_manages_workspaces_and_keys(stack):
    created = stack.admin("create-workspace", "--name", "Team", "--plan", "free")
    ws_id, key = created["workspace_id"], created["api_key"]
    assert key.startswith("dpk_")
    assert httpx.get(stack.base_url + "/api/v1/me", headers={"X-Api-Key": key}).json()["workspace"]["id"] == ws_id
    refused = stack.admin("create-key", ws_id)
    assert refused["error"]["code"] == "plan_limit_reached"
    assert stack.admin("set-plan", ws_id, "pro")["plan"] == "pro"
    second = stack.admin("create-key", ws_id)
    assert httpx.get(stack.base_url + "/api/v1/me", headers={"X-Api-Key": second["api_key"]}).status_code == 200
    assert stack.admin("revoke-key", second["key_id"]) == {"key_id": second["key_id"], "revoked": True}
    r = httpx.get(stack.base_url + "/api/v1/me", headers={"X-Api-Key": second["api_key"]})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"


def test_free_cap_under_concurrent_http_creates(stack):
    key = stack.admin("create-workspace", "--name", "Race", "--plan", "free")["api_key"]

    def create(i):
        return httpx.post(stack.base_url + "/api/v1/publish", headers={"X-Api-Key": key},
                          json={"title": f"d{i}", "html": "<p/>"}, timeout=60).status_code

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        statuses = sorted(pool.map(create, range(10)))
    assert statuses == [200] * 5 + [403] * 5
    me = httpx.get(stack.base_url + "/api/v1/me", headers={"X-Api-Key": key}).json()
    assert me["workspace"]["document_count"] == 5
    listed = httpx.get(stack.base_url + "/api/v1/documents", headers={"X-Api-Key": key}).json()
    assert len(listed["documents"]) == 5


def test_delete_leaves_no_blob_file(stack):
    key = stack.admin("create-workspace", "--name", "Del", "--plan", "pro")["api_key"]
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "gone", "html": "<p>1</p>"}).json()
        http.post("/api/v1/publish", json={"title": "gone", "html": "<p>2</p>", "document_id": doc["document_id"]})
        assert len(blob_files(stack, doc["document_id"])) == 2
        assert http.delete(f"/api/v1/documents/{doc['document_id']}").status_code == 204
        assert blob_files(stack, doc["document_id"]) == []
        assert http.get(f"/api/v1/documents/{doc['document_id']}").status_code == 404


def test_gzip_and_error_shapes_over_http(stack):
    with stack.client() as http:
        html = "<p>" + "é" * 5000 + "</p>"
        doc = http.post("/api/v1/publish", json={"title": "zip", "html": html}).json()
        r = http.get(f"/api/v1/documents/{doc['document_id']}", params={"include_html": "true"},
                     headers={"Accept-Encoding": "gzip"})
        assert r.headers.get("content-encoding") == "gzip"
        assert r.json()["html"] == html
        bad = http.post("/api/v1/publish", content=b"{oops", headers={"Content-Type": "application/json"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_json"
        wrong = http.delete("/api/v1/publish")
        assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


def test_forty_concurrent_edits_of_one_document(stack):
    """Measured on the emulator-based stack: 28 of 40 answered 503 while their
    versions committed, and the document then answered 503 for good. Now: no
    5xx, gapless versions, every version's HTML readable, no edit lost."""
    key = stack.admin("create-workspace", "--name", "Edits", "--plan", "pro")["api_key"]
    end = "<!--end-->"
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "busy", "html": f"<p>start</p>{end}"}).json()
    url = f"{stack.base_url}/api/v1/documents/{doc['document_id']}"

    def edit(i: int) -> tuple[int, str, dict]:
        marker = f"<i>edit-{i:02d}</i>"
        r = httpx.post(url + "/edit", headers={"X-Api-Key": key}, timeout=120,
                       json={"edits": [{"old_string": end, "new_string": marker + end}]})
        return r.status_code, marker, (r.json() if r.status_code == 200 else {})

    with concurrent.futures.ThreadPoolExecutor(40) as pool:
        results = list(pool.map(edit, range(40)))
    statuses = [status for status, _, _ in results]
    assert all(status < 500 for status in statuses), statuses
    assert set(statuses) <= {200, 409}, statuses
    acked = [(marker, body["version_id"]) for status, marker, body in results if status == 200]
    assert len(acked) >= 30, statuses  # the service retries a lost race before answering 409

    with stack.client(key) as http:
        detail = http.get(url, params={"include_html": "true"}).json()
        numbers = sorted(v["number"] for v in detail["versions"])
        assert numbers == list(range(1, len(acked) + 2))  # gapless: the publish plus every acknowledged edit
        assert all(marker in detail["html"] for marker, _ in acked), "an acknowledged edit was lost"
        for version in detail["versions"]:
            got = http.get(url, params={"include_html": "true", "version_id": version["version_id"]})
            assert got.status_code == 200 and got.json()["html"].endswith(end)
        for marker, version_id in acked:
            html = http.get(url, params={"include_html": "true", "version_id": version_id}).json()["html"]
            assert marker in html


@pytest.mark.aws
def test_make_run_imports_a_folder_in_the_old_snapshot_format(aws_storage, tmp_path):
    """A data folder saved by the emulator-based `make run` (every item as DynamoDB
    JSON + one file per S3 object) is imported on start and served; the old files
    are renamed, not deleted."""
    import json

    from chalicelib import config
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.models import PublishRequest
    from chalicelib import wiring
    from chalicelib.services.auth import credentials_from_key

    _, key = wiring.workspaces().create_workspace("Old", "free")
    doc = wiring.documents().publish(credentials_from_key(key.api_key),
                                       PublishRequest(title="From before", html="<p>old é</p>")).response
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    items = aws.dynamodb().scan(TableName=config.table_name())["Items"]
    (data_dir / "dynamodb-items.json").write_text(json.dumps({"items": items}))
    for obj in aws.s3().list_objects_v2(Bucket=config.bucket_name())["Contents"]:
        target = data_dir / "s3" / obj["Key"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(aws.s3().get_object(Bucket=config.bucket_name(), Key=obj["Key"])["Body"].read())

    stack = LocalStack(data_dir).start()
    try:
        with stack.client(key.api_key) as http:
            got = http.get(f"/api/v1/documents/{doc.document_id}", params={"include_html": "true"})
            assert got.status_code == 200, got.text
            assert got.json()["title"] == "From before" and got.json()["html"] == "<p>old é</p>"
    finally:
        stack.stop()
    assert (data_dir / "docpub.sqlite3").exists()
    assert not (data_dir / "dynamodb-items.json").exists()
    assert (data_dir / "dynamodb-items.json.imported").exists()
    assert "Imported the old snapshot" in stack.log_path.read_text()
