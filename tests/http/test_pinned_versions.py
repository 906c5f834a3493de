"""A link to one version (contract 7f): `{share_url}?version=N` shows version N (404 once
it is deleted), says when a newer one exists, and live refresh does not move it; the
dashboard's version list hands such links out ("Link to this version")."""
from __future__ import annotations

import re

from tests.helpers import auth
from tests.sharing_helpers import publish


def _iframe_src(body: str) -> str:
    match = re.search(r'<iframe[^>]*\bsrc="([^"]+)"', body)
    assert match, body
    return match.group(1)


def _notice(body: str) -> re.Match | None:
    return re.search(r'<div id="rv-pinned" class="live" role="status"( hidden)?><span>([^<]*)</span>', body)


def _three_versions(client, key):
    v1 = publish(client, key, "Report", "<p>one</p>")
    v2 = publish(client, key, "Report", "<p>two</p>", document_id=v1["document_id"])
    v3 = publish(client, key, "Report", "<p>three</p>", document_id=v1["document_id"])
    return v1, v2, v3


def test_a_version_link_shows_that_version_and_says_a_newer_one_exists(client, workspace):
    _, key = workspace
    v1, v2, v3 = _three_versions(client, key)
    share = v1["share_id"]
    r = client.http.get(f"/d/{share}?version=2")
    assert r.status_code == 200
    body = r.body.decode()
    assert _iframe_src(body) == f"/d/{share}/v/{v2['version_id']}"
    assert "Version 2 of 3" in body
    notice = _notice(body)
    assert notice and not notice.group(1), body
    assert notice.group(2) == "This link shows version 2. A newer version (3) exists."
    assert f'<a href="/d/{share}">Open the latest</a>' in body
    # Pinned: the page's script never offers to move it to the latest (data-latest="0"),
    # and what the viewer posts from it is about version 2.
    assert 'data-latest="0"' in body and 'data-version="2"' in body
    assert f'action="/d/{share}/feedback?v=2"' in body
    # A public answer like any wrapper: the CDN keeps it per `version` (infra test).
    assert r.headers["Cache-Control"] == "public, max-age=0, s-maxage=60"


def test_a_link_to_the_latest_version_stays_on_it(client, workspace):
    _, key = workspace
    v1, _v2, v3 = _three_versions(client, key)
    body = client.http.get(f"/d/{v1['share_id']}?version=3").body.decode()
    assert _iframe_src(body) == f"/d/{v1['share_id']}/v/{v3['version_id']}"
    notice = _notice(body)
    assert notice and notice.group(1) == " hidden"  # nothing newer yet
    assert 'data-latest="0"' in body  # a newer version later shows the notice, not "Show it"
    # The plain link still follows the latest.
    assert 'data-latest="1"' in client.http.get(f"/d/{v1['share_id']}").body.decode()


def test_a_version_link_is_404_once_that_version_is_deleted(client, workspace):
    _, key = workspace
    v1, _v2, _v3 = _three_versions(client, key)
    share = v1["share_id"]
    assert client.http.get(f"/d/{share}?version=1").status_code == 200
    r = client.http.delete(f"/api/v1/documents/{v1['document_id']}/versions/{v1['version_id']}", headers=auth(key))
    assert r.status_code == 204
    gone = client.http.get(f"/d/{share}?version=1")
    assert gone.status_code == 404 and "Not found" in gone.body.decode()
    assert client.http.get(f"/d/{share}?version=2").status_code == 200
    for bad in ("4", "0", "-1", "abc", "1.5", "²"):
        r = client.http.get(f"/d/{share}?version={bad}")
        assert r.status_code == 404, bad
        assert r.headers["Content-Type"].startswith("text/html")


def test_the_dashboard_hands_out_a_link_to_each_version(client, app_clock, fast_argon2):
    from tests.dashboard_client import DashboardClient
    from tests.http.test_dashboard import create_key

    dash = DashboardClient(client)
    dash.sign_up()
    key = create_key(dash)
    v1, _v2, _v3 = _three_versions(client, key)
    page = dash.get(f"/dashboard/documents/{v1['document_id']}")
    assert page.status == 200
    links = re.findall(r'<a href="([^"]+)" class="pin"[^>]*>Link to this version</a>', page.text)
    assert links == [f"{v1['share_url']}?version={n}" for n in (3, 2, 1)]
    assert f'data-copy="{v1["share_url"]}?version=2"' in page.text
