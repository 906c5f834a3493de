"""Large uploads (contract 7b): POST /api/v1/uploads, PUT to upload_url, publish by
upload_id. The embedded store receives the bytes on its own route; deployed, the URL
is a presigned S3 URL (Lambda never carries the bytes)."""
from __future__ import annotations

import io
import json
import zipfile
from urllib.parse import urlsplit

import pytest

from tests.helpers import post_json

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 100


def site_zip(big: int = 7 * 1024 * 1024) -> bytes:
    import os

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("index.html", '<title>Big site</title><img src="photo.bin">')
        archive.writestr("photo.bin", os.urandom(big))  # incompressible: the upload is over 6 MiB
    return out.getvalue()


def ticket(client, key, filename, size):
    return client.http.post("/api/v1/uploads", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                            body=json.dumps({"filename": filename, "size_bytes": size}))


def put(client, url: str, data: bytes):
    parts = urlsplit(url)
    return client.http.put(f"{parts.path}?{parts.query}", headers={"Content-Type": "application/octet-stream"},
                           body=data)


def test_a_large_zip_goes_through_an_upload_on_the_embedded_store(client, workspace):
    _, key = workspace
    data = site_zip()
    assert len(data) > 6 * 1024 * 1024
    r = ticket(client, key, "site.zip", len(data))
    assert r.status_code == 201, r.body
    t = json.loads(r.body)
    assert t["upload_id"].startswith("up_") and t["expires_at"].endswith("Z")
    assert t["upload_url"].startswith("http://127.0.0.1:8000/uploads/")
    # Not complete yet: refused, naming upload_id
    early = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"]}, key)
    assert early.status_code == 422 and json.loads(early.body)["error"]["details"]["fields"][0]["field"] == "upload_id"
    assert put(client, t["upload_url"], data[:-1]).status_code == 422  # not the declared size
    assert put(client, t["upload_url"].replace("token=", "token=x"), data).status_code == 404
    assert put(client, t["upload_url"], data).status_code == 204
    r = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"], "note": "big"}, key)
    assert r.status_code == 200, r.body
    doc = json.loads(client.http.get(f"/api/v1/documents/{json.loads(r.body)['document_id']}",
                                     headers={"X-Api-Key": key}).body)
    assert doc["title"] == "Big site" and doc["versions"][0]["files"][0]["size_bytes"] == 7 * 1024 * 1024
    # Single use
    again = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"]}, key)
    assert again.status_code == 404


def test_declared_sizes_and_names_are_checked_before_any_byte(client, workspace):
    _, key = workspace
    r = ticket(client, key, "site.zip", 40 * 1024 * 1024)
    assert r.status_code == 413 and json.loads(r.body)["error"]["code"] == "bundle_too_large"
    r = ticket(client, key, "page.html", 5 * 1024 * 1024)
    assert r.status_code == 413 and json.loads(r.body)["error"]["code"] == "document_too_large"
    r = ticket(client, key, "notes.txt", 10)
    assert r.status_code == 422 and json.loads(r.body)["error"]["details"]["fields"][0]["field"] == "filename"
    r = ticket(client, key, "a.md", 0)
    assert r.status_code == 422 and json.loads(r.body)["error"]["details"]["fields"][0]["field"] == "size_bytes"
    assert client.http.post("/api/v1/uploads", headers={"Content-Type": "application/json"},
                            body=json.dumps({"filename": "a.md", "size_bytes": 1})).status_code == 401


def test_an_upload_belongs_to_its_workspace_and_expires(api, workspace, services, clock):
    client = api
    _, key = workspace
    _, other = services.workspaces.create_workspace("Other", "free")
    t = json.loads(ticket(client, key, "notes.md", 7).body)
    assert put(client, t["upload_url"], b"# Hello").status_code == 204
    stolen = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"]}, other.api_key)
    assert stolen.status_code == 404
    both = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"], "html": "x"}, key)
    assert both.status_code == 422
    clock.advance(3601)
    late = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"]}, key)
    assert late.status_code == 404


@pytest.mark.aws
def test_deployed_the_upload_url_is_a_presigned_s3_put(client, workspace, storage):
    """Lambda never carries the bytes: the URL points at S3, signed with the exact size."""
    from chalicelib.adapters.aws import clients
    from chalicelib import config

    _, key = workspace
    t = json.loads(ticket(client, key, "notes.md", 7).body)
    url = urlsplit(t["upload_url"])
    assert "s3" in url.netloc and "X-Amz-Signature=" in url.query and "content-length" in url.query.lower()
    # The client's PUT, as S3 would store it:
    ws_id = url.path.split("/")[-2]
    clients.s3().put_object(Bucket=config.bucket_name(), Key=f"uploads/{ws_id}/{t['upload_id']}.bin", Body=b"# Hello")
    r = post_json(client, "/api/v1/publish", {"upload_id": t["upload_id"]}, key)
    assert r.status_code == 200, r.body
    doc_id = json.loads(r.body)["document_id"]
    got = json.loads(client.http.get(f"/api/v1/documents/{doc_id}?include_source=true", headers={"X-Api-Key": key}).body)
    assert got["source"] == "# Hello" and got["title"] == "Hello"


def test_multipart_takes_upload_id_in_place_of_file(client, workspace):
    from urllib3 import encode_multipart_formdata

    _, key = workspace
    t = json.loads(ticket(client, key, "page.html", 13).body)
    assert put(client, t["upload_url"], b"<h1>Mine</h1>").status_code == 204
    body, content_type = encode_multipart_formdata({"upload_id": t["upload_id"], "title": "Via form"})
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": content_type}, body=body)
    assert r.status_code == 200, r.body
