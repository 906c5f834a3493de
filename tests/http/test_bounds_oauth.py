"""Issue 24: the consent page and client-metadata fetches are rate-limited per
address and metadata is cached by its HTTP caching headers. Finding: the
consent page had no rate limit: unlimited client-metadata fetches."""
from __future__ import annotations

import pytest

from chalicelib.domain import limits
from chalicelib.services import cimd

CLIENT = "https://client.example/metadata.json"
DOCUMENT = {"client_id": CLIENT, "client_name": "Example", "redirect_uris": ["https://client.example/cb"],
            "token_endpoint_auth_method": "none"}


@pytest.mark.parametrize("cache_control, expires, seconds", [
    (None, None, cimd.CACHE_SECONDS),
    ("max-age=600", None, 600),
    ("public, max-age=5", None, cimd.MIN_CACHE_SECONDS),
    ("max-age=9999999", None, cimd.MAX_CACHE_SECONDS),
    ("no-store", None, cimd.MIN_CACHE_SECONDS),
    ("no-cache, max-age=600", None, cimd.MIN_CACHE_SECONDS),
    (None, "Thu, 01 Jan 1970 00:00:00 GMT", cimd.MIN_CACHE_SECONDS),
    (None, "Wed, 25 Nov 2026 20:00:00 GMT", 7200),
    (None, "not a date", cimd.MIN_CACHE_SECONDS),
])
def test_cache_lifetime_follows_the_documents_headers(cache_control, expires, seconds):
    import datetime

    now = datetime.datetime(2026, 11, 25, 18, 0, tzinfo=datetime.timezone.utc).timestamp()
    assert cimd.cache_lifetime(cache_control, expires, now) == seconds


def test_the_cache_keeps_a_document_as_long_as_its_headers_say(ctx, clock):
    from chalicelib.services.oauth import OAuthService

    fetched = []

    def fetch(url):
        fetched.append(url)
        return DOCUMENT, 120

    service = OAuthService(ctx, fetch_metadata=fetch)
    assert service.client(CLIENT).client_name == "Example"
    clock.advance(119)
    service.client(CLIENT)
    assert len(fetched) == 1
    clock.advance(2)
    service.client(CLIENT)
    assert len(fetched) == 2


def test_metadata_fetches_are_limited_per_address(ctx, clock, monkeypatch):
    from chalicelib.services.oauth import OAuthError, OAuthService

    monkeypatch.setattr(limits, "OAUTH_METADATA_FETCHES_PER_IP", limits.Rate(3, 600))
    fetched = []
    service = OAuthService(ctx, fetch_metadata=lambda url: fetched.append(url) or ({**DOCUMENT, "client_id": url},
                                                                                  60))
    for i in range(3):
        service.client(f"https://c{i}.example/m.json", "198.51.100.7")
    with pytest.raises(OAuthError) as refused:
        service.client("https://c9.example/m.json", "198.51.100.7")
    assert refused.value.status == 429 and len(fetched) == 3
    service.client("https://c0.example/m.json", "198.51.100.7")  # cached: no fetch, not counted
    service.client("https://c9.example/m.json", "203.0.113.1")   # another address
    assert len(fetched) == 4


def test_the_consent_page_is_limited_per_address(client, monkeypatch):
    from tests.dashboard_client import DashboardClient

    monkeypatch.setattr(limits, "OAUTH_CONSENT_PER_IP", limits.Rate(3, 600))
    dash = DashboardClient(client)
    dash.sign_up()
    query = "/dashboard/oauth/authorize?client_id=https%3A%2F%2Fnowhere.invalid%2Fm.json&response_type=code"
    statuses = [dash.get(query).status for _ in range(4)]
    assert statuses[:3] != [429] * 3 and statuses[3] == 429, statuses


def _register(client, n):
    import json

    return client.http.post("/oauth/register", headers={"Content-Type": "application/json"},
                            body=json.dumps({"client_name": f"App {n}", "redirect_uris": ["https://app.example/cb"]}))


def test_new_clients_are_capped_service_wide(client, app_clock, monkeypatch):
    """Finding: registered clients only aged out after 24 h, so a flood of registrations
    (from many addresses: each is limited apart) grew storage without bound."""
    import json

    monkeypatch.setattr(limits, "OAUTH_NEW_CLIENTS", limits.Rate(3, 24 * 3600))
    monkeypatch.setattr(limits, "OAUTH_REGISTER_PER_IP", limits.Rate(1000, 3600))
    app_clock.now = (int(app_clock()) // 86400) * 86400 + 86400 - 3600  # 23:00 UTC
    for n in range(3):
        assert _register(client, n).status_code == 201
    r = _register(client, 3)
    assert r.status_code == 503, r.body
    refused = json.loads(r.body)
    assert refused["error"] == "temporarily_unavailable"  # RFC 7591 / 6749 error body
    assert "new app registrations" in refused["error_description"]
    assert r.headers["Retry-After"] == "3600"  # when the window turns (00:00 UTC)
    app_clock.advance(3600)
    assert _register(client, 4).status_code == 201


def test_the_authorization_page_says_so_when_a_metadata_client_cannot_be_stored(client, app_clock, monkeypatch):
    from urllib.parse import urlencode

    monkeypatch.setattr(limits, "OAUTH_NEW_CLIENTS", limits.Rate(1, 24 * 3600))
    monkeypatch.setattr(cimd, "fetch_with_lifetime", lambda outbound, url: ({**DOCUMENT, "client_id": url}, 3600))
    assert _register(client, 0).status_code == 201  # the day's one new client
    params = {"client_id": CLIENT, "redirect_uri": "https://client.example/cb", "response_type": "code",
              "code_challenge": "c" * 43, "code_challenge_method": "S256"}
    r = client.http.get("/oauth/authorize?" + urlencode(params))
    assert r.status_code == 503, r.body
    page = r.body.decode()
    assert page.lower().startswith("<!doctype html") and "This app cannot connect" in page
    assert "new app registrations" in page and "temporarily_unavailable" in page
    assert int(r.headers["Retry-After"]) > 0


def test_the_consent_page_says_so_too(client, app_clock, monkeypatch):
    from urllib.parse import urlencode

    from tests.dashboard_client import DashboardClient

    monkeypatch.setattr(limits, "OAUTH_NEW_CLIENTS", limits.Rate(1, 24 * 3600))
    monkeypatch.setattr(cimd, "fetch_with_lifetime", lambda outbound, url: ({**DOCUMENT, "client_id": url}, 3600))
    dash = DashboardClient(client)
    dash.sign_up()
    assert _register(client, 0).status_code == 201
    params = {"client_id": CLIENT, "redirect_uri": "https://client.example/cb", "response_type": "code",
              "code_challenge": "c" * 43, "code_challenge_method": "S256"}
    page = dash.get("/dashboard/oauth/authorize?" + urlencode(params))
    assert page.status == 503 and "new app registrations" in page.text
