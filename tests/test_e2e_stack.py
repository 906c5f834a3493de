"""End-to-end: the real local stack over HTTP (persistence, admin CLI, concurrency, delete)."""
from __future__ import annotations

import concurrent.futures
import os

import boto3
import httpx
import pytest

from tests.stack import LocalStack

pytestmark = pytest.mark.e2e


def emulator_s3(stack: LocalStack):
    endpoint = (stack.data_dir / "emulator-endpoint").read_text().strip()
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="local", aws_secret_access_key="local")


def test_data_survives_a_restart(tmp_path):
    stack = LocalStack(tmp_path / "data").start()
    try:
        key = stack.api_key
        with stack.client() as http:
            doc = http.post("/api/v1/publish", json={"title": "Keep me", "html": "<p>persist é</p>"}).json()
    finally:
        stack.stop()
    assert (tmp_path / "data" / "dev-api-key").exists()
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


def test_delete_leaves_no_object_in_s3(stack):
    key = stack.admin("create-workspace", "--name", "Del", "--plan", "pro")["api_key"]
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "gone", "html": "<p>1</p>"}).json()
        http.post("/api/v1/publish", json={"title": "gone", "html": "<p>2</p>", "document_id": doc["document_id"]})
        s3 = emulator_s3(stack)
        objects = s3.list_objects_v2(Bucket="docpub-documents").get("Contents", [])
        assert sum(doc["document_id"] in o["Key"] for o in objects) == 2
        assert http.delete(f"/api/v1/documents/{doc['document_id']}").status_code == 204
        objects = s3.list_objects_v2(Bucket="docpub-documents").get("Contents", [])
        assert not any(doc["document_id"] in o["Key"] for o in objects)
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


def test_data_survives_chalice_autoreload(tmp_path):
    """A code change restarts chalice's worker; the data lives in the emulator, not the worker."""
    import time
    from pathlib import Path

    stack = LocalStack(tmp_path / "data", autoreload=True).start()
    app_py = Path(__file__).resolve().parent.parent / "app.py"
    original = app_py.stat()
    try:
        with stack.client() as http:
            doc = http.post("/api/v1/publish", json={"title": "reload", "html": "<p>r</p>"}).json()
        before = stack.log_path.read_text().count("Serving on")
        os.utime(app_py, (original.st_atime, original.st_mtime + 5))  # what an editor's save does
        deadline = time.monotonic() + 60
        while stack.log_path.read_text().count("Serving on") == before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert stack.log_path.read_text().count("Serving on") > before, "the worker did not restart"
        deadline = time.monotonic() + 30
        while True:
            try:
                got = httpx.get(f"{stack.base_url}/api/v1/documents/{doc['document_id']}",
                                headers={"X-Api-Key": stack.api_key}, timeout=5)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert got.status_code == 200 and got.json()["title"] == "reload"
    finally:
        os.utime(app_py, (original.st_atime, original.st_mtime))
        stack.stop()
