"""The end-to-end slice on the real engines (make test-aws): `make run`'s server
with DOCPUB_STORAGE=aws on DynamoDB Local + s3rver, over HTTP. The racing
edits, plan caps under racing creates, link withdrawals and OAuth (code
exchange, refresh rotation) come from the e2e suites themselves, run on this
stack by the tier (the `stack` fixture); here: that the stack really is on the
engines, and view counting through the beacon."""
from __future__ import annotations

import concurrent.futures

import httpx
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.aws_engine]

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"


def test_the_stack_stores_on_dynamodb_local_and_s3rver(stack, _aws):
    import boto3

    key = stack.admin("create-workspace", "--name", "Engines", "--plan", "pro")
    with stack.client(key["api_key"]) as http:
        doc = http.post("/api/v1/publish", json={"title": "On the engines", "html": "<p>x</p>"})
        assert doc.status_code == 200, doc.text
    env = _aws.engines.env
    dynamodb = boto3.client("dynamodb", endpoint_url=env["AWS_ENDPOINT_URL_DYNAMODB"], region_name="us-east-1",
                            aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
    item = dynamodb.get_item(TableName="docpub-e2e", Key={"PK": {"S": f"DOC#{doc.json()['document_id']}"},
                                                          "SK": {"S": "META"}})
    assert item["Item"]["title"]["S"] == "On the engines"
    s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL_S3"], region_name="us-east-1",
                      aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
    listed = s3.list_objects_v2(Bucket="docpub-e2e", Prefix=f"documents/{key['workspace_id']}/")
    assert listed["KeyCount"] == 1
    assert not (stack.data_dir / "docpub.sqlite3").exists()


def test_concurrent_views_are_counted_over_http(stack):
    key = stack.admin("create-workspace", "--name", "Views", "--plan", "pro")["api_key"]
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "Viewed", "html": "<p>v</p>"}).json()
    share_id = doc["share_url"].rstrip("/").rsplit("/", 1)[-1]
    page = httpx.get(f"{stack.base_url}/d/{share_id}", headers={"User-Agent": CHROME})
    assert page.status_code == 200

    def beacon(i: int) -> int:
        return httpx.post(f"{stack.base_url}/d/{share_id}/view", timeout=60,
                          headers={"User-Agent": CHROME, "X-Forwarded-For": f"203.0.113.{i}"}).status_code

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(beacon, range(20)))
    assert statuses == [204] * 20
    assert httpx.post(f"{stack.base_url}/d/{share_id}/view", headers={"User-Agent": "curl/8.5.0"}).status_code == 204
    # Without a flush interval every counted view is written before its 204.
    with stack.client(key) as http:
        stats = http.get(f"/api/v1/documents/{doc['document_id']}/stats").json()
    assert stats["views_total"] == 20  # every browser view, not the bot


def test_racing_edits_of_one_document_over_http(stack):
    """No 5xx, gapless versions, no acknowledged edit lost (the 40-edit race runs at
    the service level in tests/contract on the same engines)."""
    key = stack.admin("create-workspace", "--name", "Race", "--plan", "pro")["api_key"]
    end = "<!--end-->"
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "busy", "html": f"<p>0</p>{end}"}).json()
    url = f"{stack.base_url}/api/v1/documents/{doc['document_id']}"

    def edit(i: int) -> int:
        return httpx.post(url + "/edit", headers={"X-Api-Key": key}, timeout=120,
                          json={"edits": [{"old_string": end, "new_string": f"<i>e{i}</i>{end}"}]}).status_code

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        statuses = list(pool.map(edit, range(12)))
    assert statuses == [200] * 12, statuses  # under the key's limit: no 429, no 409 after retries
    with stack.client(key) as http:
        detail = http.get(url, params={"include_html": "true"}).json()
    assert sorted(v["number"] for v in detail["versions"]) == list(range(1, 14))
    assert all(f"<i>e{i}</i>" in detail["html"] for i in range(12))


def test_a_large_bundle_download_redirects_to_s3rver_which_serves_the_zip(stack):
    """A download over what a Lambda response carries: 302 to a presigned GET, then the
    bytes from the S3 engine itself, named and typed by the signed response overrides."""
    import io
    import os
    import zipfile

    key = stack.admin("create-workspace", "--name", "Big downloads", "--plan", "pro")["api_key"]
    data = os.urandom(5 * 1024 * 1024 + 7)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("index.html", "<title>Big Site</title><p>big")
        out.writestr("data/big.bin", data)
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", files={"file": ("site.zip", archive.getvalue(), "application/zip")})
        assert doc.status_code == 200, doc.text
        r = http.get(f"/api/v1/documents/{doc.json()['document_id']}/download", follow_redirects=False)
    assert r.status_code == 302, r.text[:300]
    location = r.headers["location"]
    assert location.startswith(os.environ["AWS_ENDPOINT_URL_S3"]) and "X-Amz-Signature=" in location
    got = httpx.get(location, timeout=60)  # no credentials: the URL is the credential
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/zip"
    assert got.headers["content-disposition"] == 'attachment; filename="big-site.zip"'
    assert zipfile.ZipFile(io.BytesIO(got.content)).read("data/big.bin") == data
