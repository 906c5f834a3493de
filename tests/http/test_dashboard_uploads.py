"""The dashboard's large uploads (issue 26): a file over what one request carries goes to
storage first. The upload page's script asks POST /dashboard/uploads for a ticket
(CSRF-checked, this session's workspace), PUTs the file to its upload_url, then submits
the form with upload_id. Chromium drives the whole flow in tests/browser/test_content_browser.py."""
from __future__ import annotations

import io
import json
import os
import zipfile

import pytest

from tests.dashboard_client import DashboardClient
from tests.http.test_dashboard import doc_id_from, upload


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply."""


@pytest.fixture
def owner(client, app_clock):
    dash = DashboardClient(client)
    dash.sign_up()
    return dash


def big_zip() -> tuple[bytes, bytes]:
    data = os.urandom(7 * 1024 * 1024)  # over the 6 MiB request cap
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("index.html", "<title>Big site</title><img src='img/photo.bin'>")
        archive.writestr("img/photo.bin", data)
    return out.getvalue(), data


def ticket(owner, filename: str, size: int, csrf: str | None = "token"):
    fields = {"filename": filename, "size_bytes": str(size)}
    page = owner.post("/dashboard/uploads", fields, csrf=owner.token() if csrf == "token" else csrf,
                      headers={"Accept": "application/json"})
    return page.status, json.loads(page.text)


def test_a_file_over_the_request_cap_is_published_through_a_ticket(owner, client):
    archive, data = big_zip()
    status, answer = ticket(owner, "site.zip", len(archive))
    assert status == 201, answer
    assert set(answer) == {"upload_id", "upload_url", "expires_at"}
    url = answer["upload_url"]
    put = client.http.put(url[url.index("/uploads/"):], headers={"Content-Type": "application/zip"}, body=archive)
    assert put.status_code == 204, put.body
    page = owner.post_multipart("/dashboard/upload", {"title": "", "upload_id": answer["upload_id"]}, {},
                                csrf=owner.token())
    assert page.status == 303, page.text[:2000]
    document_id = doc_id_from(page)
    download = client.http.get(f"/dashboard/documents/{document_id}/download",
                               headers={**owner._headers(), "Accept": "*/*"})
    assert download.status_code == 200, (download.status_code, download.headers, download.body[:300])
    assert zipfile.ZipFile(io.BytesIO(download.body)).read("img/photo.bin") == data
    assert "Big site" in owner.get(f"/dashboard/documents/{document_id}").text
    # Single use: the same upload_id again is refused on the page, naming it.
    again = owner.post_multipart("/dashboard/upload", {"title": "Again", "upload_id": answer["upload_id"]}, {},
                                 csrf=owner.token())
    assert again.status == 404 and "No such upload" in again.text


def test_the_ticket_route_answers_the_contracts_errors_as_json(owner):
    status, answer = ticket(owner, "notes.txt", 10)
    assert status == 422 and answer["error"]["details"]["fields"][0]["field"] == "filename"
    status, answer = ticket(owner, "site.zip", 0)
    assert status == 422 and answer["error"]["details"]["fields"][0]["field"] == "size_bytes"
    status, answer = ticket(owner, "site.zip", "lots")  # type: ignore[arg-type]
    assert status == 422 and answer["error"]["details"]["fields"][0]["field"] == "size_bytes"
    status, answer = ticket(owner, "page.html", 5 * 1024 * 1024)
    assert status == 413 and answer["error"]["code"] == "document_too_large"
    status, answer = ticket(owner, "site.zip", 40 * 1024 * 1024)
    assert status == 413 and answer["error"]["code"] == "bundle_too_large"
    # Without the form's CSRF token: refused, and said so in the contract's shape.
    status, answer = ticket(owner, "site.zip", 10, csrf="forged")
    assert status == 403 and "did not come from this site" in answer["error"]["message"]


def test_signed_out_the_ticket_route_gives_nothing(client, app_clock):
    page = DashboardClient(client).post("/dashboard/uploads", {"filename": "a.zip", "size_bytes": "1"})
    assert page.status == 303 and "/sign-in" in page.location


def test_an_upload_id_of_another_workspace_is_unknown(owner, client):
    other = DashboardClient(client)
    other.sign_up(email="other@example.com", workspace="Other")
    _, answer = ticket(other, "page.html", 9)
    url = answer["upload_url"]
    assert client.http.put(url[url.index("/uploads/"):], body=b"<p>x</p>\n").status_code == 204
    page = owner.post_multipart("/dashboard/upload", {"title": "Stolen", "upload_id": answer["upload_id"]}, {},
                                csrf=owner.token())
    assert page.status == 404


def test_the_upload_page_offers_the_large_upload_and_allows_its_destination(owner):
    from chalicelib.domain import limits

    page = owner.get("/dashboard/upload")
    assert 'data-upload-via="/dashboard/uploads"' in page.text
    assert f'data-direct-max-bytes="{limits.DASHBOARD_DIRECT_UPLOAD_BYTES}"' in page.text
    assert 'name="upload_id"' in page.text
    assert "connect-src 'self' http://127.0.0.1:8000" in page.headers["Content-Security-Policy"]
    # A file chosen the old way still works (no script, or a small file).
    assert upload(owner, b"<p>small</p>", title="Small").status == 303


@pytest.mark.aws
def test_deployed_the_page_allows_puts_to_s3_and_the_ticket_is_a_presigned_put(owner):
    page = owner.get("/dashboard/upload")
    assert "connect-src 'self' https://" in page.headers["Content-Security-Policy"]
    assert ".amazonaws.com" in page.headers["Content-Security-Policy"]
    _, answer = ticket(owner, "site.zip", 7 * 1024 * 1024)
    assert "X-Amz-Signature=" in answer["upload_url"] and answer["upload_url"].startswith("https://")
