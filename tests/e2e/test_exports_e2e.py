"""A workspace export on the real local stack (`make run`, issue 36): the server's own
thread builds it in the background, and the signed download URL is streamed from the data
folder by the server (scripts/serve_local.py), never read whole into memory."""
from __future__ import annotations

import io
import json
import time
import zipfile

import httpx
import pytest

pytestmark = pytest.mark.e2e


def test_export_is_built_in_the_background_and_streamed_by_make_run(stack):
    with stack.client() as api:
        made = api.post("/api/v1/publish", json={"title": "E2E export", "html": "# Hi\n\nthere", "format": "markdown"})
        assert made.status_code == 200, made.text
        started = api.post("/api/v1/exports")
        assert started.status_code == 202, started.text
        export_id = started.json()["export_id"]
        deadline = time.monotonic() + 60  # real work in a real thread: bounded polling, no clock involved
        while True:
            status = api.get(f"/api/v1/exports/{export_id}").json()
            if status["status"] != "running" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert status["status"] == "ready", status
        assert status["download_url"].startswith(stack.base_url + "/exports/")
    got = httpx.get(status["download_url"], timeout=60)  # no key: the signature is the credential
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/zip"
    assert int(got.headers["content-length"]) == len(got.content)
    archive = zipfile.ZipFile(io.BytesIO(got.content))
    document_id = made.json()["document_id"]
    assert archive.read(f"documents/{document_id}/versions/1/content.md") == b"# Hi\n\nthere"
    assert json.loads(archive.read("manifest.json"))["export_id"] == export_id
    forged = httpx.get(status["download_url"][:-2] + "xx", timeout=60)
    assert forged.status_code == 404 and forged.json()["error"]["code"] == "not_found"
