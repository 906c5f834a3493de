"""Issue 24: preview grants (`?t=` on the content origin) open one version, for
minutes, for framing only. Finding: a `?t=` grant in a URL unlocked every
version for an hour."""
from __future__ import annotations

import json
import re

from tests.helpers import post_json
from tests.http.test_hardening import CONTENT, _get, _text, two_sites  # noqa: F401  (fixture)


def _protected_with_two_versions(client, two_sites, monkeypatch):  # noqa: F811
    from tests.dashboard_client import FAST_ARGON2
    from tests.sharing_helpers import cookie_of, unlock

    for name, value in FAST_ARGON2.items():
        monkeypatch.setenv(name, value)
    key, doc = two_sites
    second = json.loads(post_json(client, "/api/v1/publish", {"title": "Doc", "html": "<p>second</p>",
                                                              "document_id": doc["document_id"]}, key,
                                  headers={"Host": "docs.example"}).body)
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        body=json.dumps({"passphrase": "violet otter 42"}),
                        headers={"X-Api-Key": key, "Content-Type": "application/json", "Host": "docs.example"})
    assert r.status_code == 204
    cookie = cookie_of(unlock(client, doc["share_id"], "violet otter 42", {"Host": "docs.example"}))
    page = _text(_get(client, f"/d/{doc['share_id']}", "docs.example", Cookie=cookie))
    src = re.search(r'<iframe[^>]* src="([^"]+)"', page).group(1).replace("&amp;", "&")
    return doc, second, src[len(CONTENT):]


def test_a_grant_opens_only_the_version_it_was_made_for(client, two_sites, monkeypatch):  # noqa: F811
    doc, second, path = _protected_with_two_versions(client, two_sites, monkeypatch)
    assert f"/v/{second['version_id']}?t=" in path  # the page frames the latest version
    assert _get(client, path, "content.example").status_code == 200
    token = path.split("?t=", 1)[1]
    other = f"/d/{doc['share_id']}/v/{doc['version_id']}?t={token}"
    assert _get(client, other, "content.example").status_code == 401


def test_a_grant_lasts_minutes_not_an_hour(client, two_sites, monkeypatch):  # noqa: F811
    from chalicelib.services import sharing
    from chalicelib.wiring import default_context
    from tests.helpers import FakeClock

    clock = FakeClock()
    default_context().clock = clock
    _, _, path = _protected_with_two_versions(client, two_sites, monkeypatch)
    assert sharing.CONTENT_TOKEN_SECONDS <= 600
    clock.advance(sharing.CONTENT_TOKEN_SECONDS - 1)
    assert _get(client, path, "content.example").status_code == 200
    clock.advance(2)
    assert _get(client, path, "content.example").status_code == 401


def test_a_content_grant_is_not_an_unlock_cookie(client, two_sites, monkeypatch):  # noqa: F811
    """Single purpose: the frame's grant, sent as the unlock cookie, unlocks nothing."""
    doc, _, path = _protected_with_two_versions(client, two_sites, monkeypatch)
    token = path.split("?t=", 1)[1]
    page = _text(_get(client, f"/d/{doc['share_id']}", "docs.example", Cookie=f"dp_unlock={token}"))
    assert "This document is protected" in page
