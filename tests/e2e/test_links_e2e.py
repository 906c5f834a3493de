"""Link lifecycle over the real local stack (chalice local + SQLite, over HTTP): the
cache headers a CDN would see on every share answer, expiry, disable, rotate, and
the operator's view of pending CDN invalidations (none: no CDN locally)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import httpx
import pytest
from chalicelib.entrypoints.share import CONTENT_REVISION

pytestmark = pytest.mark.e2e


def test_share_answers_carry_the_edge_contract_and_withdrawals_apply_at_once(stack):
    key = stack.admin("create-workspace", "--name", "Links e2e", "--plan", "pro")["api_key"]
    api = stack.client(key)
    expires = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = api.post("/api/v1/publish", json={"title": "Edge", "html": "<p>" + "edge " * 400 + "</p>",
                                             "share_expires_at": expires}).json()
    share = doc["share_url"]
    page = httpx.get(share, timeout=30)
    # Content may live on a separate content origin: the main site redirects there (private, no-store).
    content = httpx.get(share + "/v/" + doc["version_id"], headers={"Accept-Encoding": "gzip"}, timeout=30,
                        follow_redirects=True)
    content_url = str(content.url)
    assert page.status_code == 200 and content.status_code == 200
    assert page.headers["Cache-Control"] == "public, max-age=0, s-maxage=60"
    assert content.headers["Cache-Control"] == "public, max-age=60, s-maxage=60"
    for answer in (page, content):
        assert answer.headers["Vary"] == "Accept-Encoding"
    assert content.headers["ETag"] == f"\"{doc['version_id']}.{CONTENT_REVISION}-gz\""
    again = httpx.get(content_url, headers={"If-None-Match": content.headers["ETag"], "Accept-Encoding": "gzip"},
                      timeout=30)
    assert again.status_code == 304 and again.headers["Cache-Control"] == content.headers["Cache-Control"]
    assert api.get(f"/api/v1/documents/{doc['document_id']}").json()["share_expires_at"] == expires

    assert api.patch(f"/api/v1/documents/{doc['document_id']}", json={"share_enabled": False}).status_code == 200
    assert httpx.get(share, timeout=30).status_code == 404
    assert httpx.get(content_url, timeout=30).status_code == 404
    assert api.patch(f"/api/v1/documents/{doc['document_id']}", json={"share_enabled": True}).status_code == 200
    new_share = api.post(f"/api/v1/documents/{doc['document_id']}/share/rotate").json()["share_url"]
    assert httpx.get(share, timeout=30).status_code == 404
    assert httpx.get(new_share, timeout=30).status_code == 200
    # No CDN locally: nothing was ever pending.
    assert stack.admin("cdn-pending") == {"pending": []}
