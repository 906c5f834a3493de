"""Per-address limits on the API, MCP and dashboard paths see each viewer, not CloudFront's edge.

Finding (issue 23's closing note, checked against the CloudFront documentation): those paths use
the managed origin request policy AllViewerExceptHostHeader, which forwards the viewer's own
headers (all but Host) and none of the headers CloudFront adds, so CloudFront-Viewer-Address
never reached them: every sign-up, sign-in and OAuth registration behind one edge location
counted against one address (sign-ups: 10 an hour for all of them). A policy cannot both drop
Host and add CloudFront's headers, so a viewer-request CloudFront Function writes the viewer's
address into X-Docpub-Viewer-Address, which that policy forwards (infra: ViewerAddressFunction;
tests/e2e/test_infra.py runs the function's code)."""
from __future__ import annotations

import json

from tests.dashboard_client import DashboardClient

SECRET = "s" * 40


def _behind_cloudfront(monkeypatch) -> None:
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", SECRET)


def _viewer(client, address: str) -> DashboardClient:
    """A browser behind the one edge the test client is (same source address), as CloudFront
    forwards it to the API origin: its origin secret and the function's viewer address."""
    return DashboardClient(client, headers={"X-Docpub-Origin-Secret": SECRET, "X-Docpub-Viewer-Address": address})


def _sign_up(client, address: str, n: int):
    return _viewer(client, address).submit("/dashboard/sign-up", "/dashboard/sign-up", {
        "email": f"person{n}@example.com", "password": "correct horse battery", "workspace_name": f"W{n}"})


def test_people_signing_up_behind_one_edge_each_have_their_own_budget(client, monkeypatch):
    _behind_cloudfront(monkeypatch)
    monkeypatch.setenv("DOCPUB_SIGN_UP_PER_HOUR", "2")
    assert [_sign_up(client, "203.0.113.20", n).status for n in range(3)] == [200, 200, 429]
    assert _sign_up(client, "198.51.100.7", 3).status == 200  # another viewer, the same edge
    assert _sign_up(client, "2001:db8:1:2::5", 4).status == 200  # IPv6, as the function writes it


def test_oauth_registration_is_limited_per_viewer_not_per_edge(client, monkeypatch):
    from chalicelib.domain import limits

    _behind_cloudfront(monkeypatch)
    monkeypatch.setattr(limits, "OAUTH_REGISTER_PER_IP", limits.Rate(2, 3600))

    def register(address: str, n: int) -> int:
        return client.http.post("/oauth/register", headers={
            "Content-Type": "application/json", "X-Docpub-Origin-Secret": SECRET, "X-Docpub-Viewer-Address": address},
            body=json.dumps({"client_name": f"App {n}", "redirect_uris": ["https://app.example/cb"]})).status_code

    assert [register("203.0.113.30", n) for n in range(3)] == [201, 201, 429]
    assert register("203.0.113.31", 3) == 201


def test_the_header_is_believed_only_with_cloudfronts_secret(client, monkeypatch):
    """Without the origin secret (the stack always sets one) a stranger could name any address:
    the header then counts for nothing (and with a secret set, the request is 403 anyway)."""
    from chalicelib.entrypoints.http import client_ip

    class Request:
        context = {"identity": {"sourceIp": "192.0.2.1"}}
        headers = {"x-docpub-viewer-address": "203.0.113.40", "x-docpub-origin-secret": "wrong"}

    _behind_cloudfront(monkeypatch)
    assert client_ip(Request) == "192.0.2.1"
    Request.headers = {**Request.headers, "x-docpub-origin-secret": SECRET}
    assert client_ip(Request) == "203.0.113.40"
    Request.headers = {**Request.headers, "x-docpub-viewer-address": "2001:db8:1:2::5"}
    assert client_ip(Request) == "2001:db8:1:2::/64"
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "false")
    assert client_ip(Request) == "192.0.2.1"
