"""The deployed path end to end: the same local stack with DOCPUB_STORAGE=aws,
against moto's server (DynamoDB + S3 over HTTP through AWS_ENDPOINT_URL)."""
from __future__ import annotations

import logging

import httpx
import pytest

from tests.stack import LocalStack

pytestmark = pytest.mark.e2e


@pytest.fixture
def moto_endpoint():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_publish_edit_share_admin_delete_on_dynamodb_and_s3(moto_endpoint, tmp_path):
    env = {"DOCPUB_STORAGE": "aws", "AWS_ENDPOINT_URL": moto_endpoint, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "DOCPUB_TABLE": "docpub-smoke", "DOCPUB_BUCKET": "docpub-smoke"}
    stack = LocalStack(tmp_path / "data", env=env).start()
    try:
        created = stack.admin("create-workspace", "--name", "Smoke", "--plan", "free")
        key = created["api_key"]
        with stack.client(key) as http:
            doc = http.post("/api/v1/publish", json={"title": "Smoke", "html": "<p>one</p><!--end-->"})
            assert doc.status_code == 200, doc.text
            doc = doc.json()
            url = f"/api/v1/documents/{doc['document_id']}"
            edit = http.post(url + "/edit", json={"edits": [{"old_string": "one", "new_string": "two"}]})
            assert edit.status_code == 200, edit.text
            got = http.get(url, params={"include_html": "true"}).json()
            assert got["html"] == "<p>two</p><!--end-->" and [v["number"] for v in got["versions"]] == [1, 2]
            share = httpx.get(doc["share_url"])  # DOCPUB_BASE_URL is the stack's address
            assert share.status_code == 200 and "Smoke" in share.text
            assert http.get("/api/v1/me").json()["workspace"]["id"] == created["workspace_id"]
            assert stack.admin("--aws", "set-plan", created["workspace_id"], "pro")["plan"] == "pro"
            assert http.get("/api/v1/me").json()["workspace"]["plan"] == "pro"
            assert http.delete(url).status_code == 204
            assert http.get(url).status_code == 404
    finally:
        stack.stop()
    # the data went to DynamoDB + S3, not to an embedded database
    assert not (tmp_path / "data" / "docpub.sqlite3").exists()
    import boto3

    table = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1",
                         aws_access_key_id="testing", aws_secret_access_key="testing")
    items = table.scan(TableName="docpub-smoke")["Items"]
    assert any(item["PK"]["S"] == f"WS#{created['workspace_id']}" for item in items)
    log = stack.log_path.read_text()
    assert "Found credentials" not in log  # no boto noise on the console
    assert "storage: AWS" in log
