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
    assert service.client(CLIENT)["client_name"] == "Example"
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
