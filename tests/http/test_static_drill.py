"""The failure drill of issue 38: with the API function and DynamoDB unreachable, a
public link's page and content still serve from S3.

`edge_get` does what CloudFront's `/d/*` behaviours do (infra/resources.yaml, docs/deploy.md
"Public links are static at the edge"): the origin group reads the object at the S3 origin
(OriginPath `/static/main`, origin access control: a missing object is 403) and fails over
to the share function only on 403/404/5xx. Here every DynamoDB call fails (a faulting
client: what a regional outage looks like to the code) and the function is unreachable
(calling it fails the test), yet the page and its content are served, byte for byte what
the function wrote while storage was up."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from tests.faults import Faults
from tests.helpers import publish

pytestmark = pytest.mark.aws

DYNAMODB_CALLS = ("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "TransactWriteItems",
                  "TransactGetItems", "DeleteItem", "BatchWriteItem")


def edge_get(path: str, function) -> tuple[int, bytes, dict]:
    """CloudFront's origin group: S3 first (the static copy), the share function on a miss."""
    try:
        found = aws.s3().get_object(Bucket=config.bucket_name(), Key="static/main" + path)
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in ("NoSuchKey", "404", "403", "AccessDenied"):
            raise
        response = function(path)
        return response.status_code, response.body, dict(response.headers)
    return 200, found["Body"].read(), {"Content-Type": found["ContentType"], "Cache-Control": found["CacheControl"]}


def _unreachable(path):
    raise AssertionError(f"the share function was called for {path}: it is down")


@pytest.fixture
def static_client(monkeypatch, aws_storage):
    monkeypatch.setenv("DOCPUB_STATIC_PAGES", "on")
    from chalice.test import Client

    from app import app

    with Client(app) as client:
        yield client


def test_a_public_link_serves_from_s3_with_dynamodb_and_the_function_down(static_client, key):
    doc = publish(static_client, key, title="Drill", html="<h1>Still here</h1>")
    share = doc["share_id"]
    page_path, content_path = f"/d/{share}", f"/d/{share}/v/{doc['version_id']}"
    faults = Faults()
    try:
        for operation in DYNAMODB_CALLS:
            faults.fail("dynamodb", operation, "InternalServerError", 500)
        # The function path is down with DynamoDB (a 503 page): what a miss would get without the static copy.
        assert static_client.http.get(page_path).status_code == 503
        status, page, headers = edge_get(page_path, _unreachable)
        assert status == 200 and b"<title>Drill</title>" in page and headers["Content-Type"].startswith("text/html")
        assert f'src="/d/{share}/v/{doc["version_id"]}"'.encode() in page
        status, content, _ = edge_get(content_path, _unreachable)
        assert status == 200 and content.startswith(b"<h1>Still here</h1>")
        status, beacon, _ = edge_get(f"/d/{share}/seen", _unreachable)  # views are still logged at the edge
        assert status == 200 and beacon == b""
    finally:
        faults.clear()


def test_a_link_with_an_expiry_has_no_static_copy_and_goes_to_the_function(static_client, key):
    import json
    import time

    from chalicelib.services.context import rfc3339

    doc = publish(static_client, key, title="Expiring", html="<p>e</p>")
    share = doc["share_id"]
    assert edge_get(f"/d/{share}", _unreachable)[0] == 200  # public: static
    later = rfc3339(int(time.time() * 1000) + 7 * 24 * 3600 * 1000)
    r = static_client.http.patch(f"/api/v1/documents/{doc['document_id']}", body=json.dumps(
        {"share_expires_at": later}), headers={"X-Api-Key": key, "Content-Type": "application/json"})
    assert r.status_code == 200, r.body
    served_by = []

    def function(path):
        served_by.append(path)
        return static_client.http.get(path)

    status, body, _ = edge_get(f"/d/{share}", function)
    assert status == 200 and b"Expiring" in body and served_by == [f"/d/{share}"]
