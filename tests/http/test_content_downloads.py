"""Downloads too large for a Lambda response (contract 7b, issue 26).

A deployed function answers at most 6 MB and sends a binary body base64-encoded: the
zip of a bundle with 5 MiB of files (7 MB as base64) cannot be its answer. The AWS
store redirects (302) to a presigned S3 GET that names the file; the embedded store
sends the bytes itself. Followed here to the bytes (moto intercepts the presigned URL
in-process; tests/engine/test_engine_e2e.py follows it to s3rver over HTTP)."""
from __future__ import annotations

import base64
import io
import os
import time
import zipfile

import pytest

from tests.http.test_content_bundles import ACCEPT_ALL, files, make_zip, ok, publish, share_of, upload

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024
BIG = 5 * 1024 * 1024 + 123  # incompressible: the zip is as large


def lambda_payload(response) -> int:
    """What the function would return to Lambda for this answer (a binary body is base64)."""
    body = response.body if isinstance(response.body, bytes) else str(response.body).encode()
    return len(base64.b64encode(body)) + sum(len(k) + len(v) + 6 for k, v in response.headers.items())


class Fetched:
    def __init__(self, status_code: int, headers, content: bytes):
        self.status_code, self.headers, self.content = status_code, headers, content


def fetch_presigned(url: str) -> Fetched:
    """GET a presigned S3 URL from moto in-process (what a browser following the redirect
    does; the session mock's per-test reset drops its `requests` interception)."""
    import requests
    from moto.core.models import botocore_stubber

    status, headers, body = botocore_stubber.process_prepared_request(requests.Request("GET", url).prepare())
    content = body if isinstance(body, bytes) else (body.read() if hasattr(body, "read") else str(body).encode())
    return Fetched(status, {k.lower(): v for k, v in headers.items()}, content)


def big_site(client, key) -> tuple[dict, bytes]:
    data = os.urandom(BIG)
    result = ok(upload(client, key, "site.zip", make_zip({"index.html": "<title>Big Site</title><p>big",
                                                          "data/big.bin": data})))
    return result, data


def routes(result: dict, key: str) -> list[tuple[str, dict]]:
    return [(f"/d/{share_of(result)}?download=1", ACCEPT_ALL),
            (f"/api/v1/documents/{result['document_id']}/download", {"X-Api-Key": key, **ACCEPT_ALL})]


@pytest.mark.aws
def test_deployed_a_bundle_too_large_for_a_lambda_response_redirects_to_s3_then_serves_the_zip(client, workspace,
                                                                                                ctx):
    _, key = workspace
    result, data = big_site(client, key)
    for path, headers in routes(result, key):
        r = client.http.get(path, headers=headers)
        assert lambda_payload(r) < LAMBDA_PAYLOAD_BYTES, (path, r.status_code, len(r.body))
        assert r.status_code == 302, (path, r.status_code)
        assert r.headers["Cache-Control"] == "private, no-store"
        location = r.headers["Location"]
        assert "X-Amz-Signature=" in location and "X-Amz-Expires=60" in location
        got = fetch_presigned(location)
        assert got.status_code == 200
        assert got.headers["content-type"] == "application/zip"
        assert got.headers["content-disposition"] == 'attachment; filename="big-site.zip"'
        archive = zipfile.ZipFile(io.BytesIO(got.content))
        assert sorted(archive.namelist()) == ["data/big.bin", "index.html"]
        assert archive.read("data/big.bin") == data
    # Built once into S3, by content: the second download reused it.
    assert len(ctx.blobs.list_keys("downloads/")) == 1


def test_the_embedded_store_sends_a_large_bundle_itself(client, workspace, ctx):
    _, key = workspace
    result, data = big_site(client, key)
    for path, headers in routes(result, key):
        r = client.http.get(path, headers=headers)
        assert r.status_code == 200 and r.headers["Content-Disposition"] == 'attachment; filename="big-site.zip"'
        assert zipfile.ZipFile(io.BytesIO(r.body)).read("data/big.bin") == data
    assert ctx.blobs.list_keys("downloads/") == []


@pytest.mark.aws
def test_deployed_a_page_over_the_inline_limit_redirects_to_its_own_object(client, workspace, monkeypatch):
    from chalicelib.domain import limits

    monkeypatch.setattr(limits, "INLINE_RESPONSE_BYTES", 100)
    _, key = workspace
    page = "<!doctype html><title>Long Page</title>" + "<p>Ünïcode ☃</p>" * 20
    result = ok(publish(client, key, html=page))
    md = ok(publish(client, key, html="# Notes\n\n" + "Ünïcode ☃ " * 50, format="markdown"))
    for doc, name, kind, body in ((result, "long-page.html", "text/html; charset=utf-8", page),
                                  (md, "notes.md", "text/markdown; charset=utf-8", "# Notes\n\n" + "Ünïcode ☃ " * 50)):
        r = client.http.get(f"/d/{share_of(doc)}?download=1", headers=ACCEPT_ALL)
        assert r.status_code == 302
        got = fetch_presigned(r.headers["Location"])
        assert got.headers["content-disposition"] == f'attachment; filename="{name}"'
        assert got.headers["content-type"] == kind and got.content == body.encode()


@pytest.mark.aws
def test_cached_zips_are_touched_by_each_download_and_swept_an_hour_after_the_last(client, workspace, ctx, clock,
                                                                                   monkeypatch):
    from chalicelib.domain import limits
    from chalicelib.services.downloads import CACHE_SECONDS, sweep_downloads

    monkeypatch.setattr(limits, "INLINE_RESPONSE_BYTES", 10)
    _, key = workspace
    result = ok(publish(client, key, title="Small", files=files()))
    assert client.http.get(f"/d/{share_of(result)}?download=1", headers=ACCEPT_ALL).status_code == 302
    clock.now = time.time()
    assert sweep_downloads(ctx) == 0
    clock.now = time.time() + CACHE_SECONDS + 60
    assert sweep_downloads(ctx) == 1
    assert ctx.blobs.list_keys("downloads/") == []
    # Gone from the cache: the next download builds it again.
    assert client.http.get(f"/d/{share_of(result)}?download=1", headers=ACCEPT_ALL).status_code == 302
    assert len(ctx.blobs.list_keys("downloads/")) == 1


@BOTH
def test_a_small_bundle_is_still_answered_inline(client, workspace, ctx):
    _, key = workspace
    result = ok(publish(client, key, title="Site", files=files()))
    r = client.http.get(f"/d/{share_of(result)}?download=1", headers=ACCEPT_ALL)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/zip"
    assert ctx.blobs.list_keys("downloads/") == []


def test_the_openapi_document_names_the_redirect():
    import json
    from pathlib import Path

    spec = json.loads(Path("docs/openapi.json").read_text())
    answer = spec["paths"]["/api/v1/documents/{document_id}/download"]["get"]["responses"]["302"]
    assert "presigned S3 URL" in answer["description"] and answer["headers"]["Location"]["required"] is True
