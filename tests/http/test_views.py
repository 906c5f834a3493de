"""View counting and stats: the beacon, the bot rule, the per-address cap, stats windows."""
from __future__ import annotations

import json

import pytest

from chalicelib.domain import views as rules
from tests.helpers import run_together
from tests.sharing_helpers import FORM, cookie_of, pro, publish, set_passphrase, unlock  # noqa: F401

CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/131.0.0.0 Safari/537.36")
DAY = 24 * 3600


def beacon(api, share_id: str, v: int | None = None, ua: str = CHROME, headers: dict | None = None):
    query = f"?v={v}" if v else ""
    return api.http.post(f"/d/{share_id}/view{query}", headers={"User-Agent": ua, **(headers or {})}, body="")


def stats(api, key: str, document_id: str, days: int | None = None):
    query = f"?days={days}" if days is not None else ""
    return api.http.get(f"/api/v1/documents/{document_id}/stats{query}", headers={"X-Api-Key": key})


def get_doc(api, key, document_id):
    r = api.http.get(f"/api/v1/documents/{document_id}", headers={"X-Api-Key": key})
    assert r.status_code == 200, r.body
    return json.loads(r.body)


# ---------------------------------------------------------------- the rule, pure

@pytest.mark.parametrize("ua", [
    None, "", "Googlebot/2.1 (+http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "facebookexternalhit/1.1", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "curl/8.5.0", "python-requests/2.32.3", "Wget/1.21",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
])
def test_bots_are_recognised(ua):
    assert rules.is_bot(ua)


@pytest.mark.parametrize("ua", [
    CHROME,
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0",
])
def test_browsers_are_not_bots(ua):
    assert not rules.is_bot(ua)


def test_prefetch_headers():
    assert rules.is_prefetch({"sec-purpose": "prefetch;prerender"})
    assert rules.is_prefetch({"purpose": "prefetch"})
    assert rules.is_prefetch({"x-moz": "prefetch"})
    assert not rules.is_prefetch({"sec-fetch-mode": "no-cors"})


def test_window_is_utc_days_oldest_first():
    # 2026-11-22T00:30:00Z
    assert rules.window(1795307400_000, 3) == ["2026-11-20", "2026-11-21", "2026-11-22"]
    assert rules.day_of(1795307400_000 - 3600_000) == "2026-11-21"


# ---------------------------------------------------------------- beacon over HTTP

def test_beacon_counts_views_per_version(api, workspace):
    _, key = workspace
    first = publish(api, key, "Views")
    second = publish(api, key, "Views", "<p>v2</p>", first["document_id"])
    for _ in range(3):
        assert beacon(api, first["share_id"]).status_code == 204   # latest = version 2
    r = beacon(api, first["share_id"], v=1)
    assert r.status_code == 204
    assert r.headers["Cache-Control"] == "no-store"
    assert "Set-Cookie" not in r.headers
    body = json.loads(stats(api, key, first["document_id"]).body)
    assert body["views_total"] == 4
    assert body["versions"] == [{"version_id": first["version_id"], "views": 1},
                                {"version_id": second["version_id"], "views": 3}]
    assert len(body["days"]) == 30 and body["days"][-1]["views"] == 4
    assert sum(d["views"] for d in body["days"]) == 4


def test_bots_and_prefetches_are_not_counted(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    assert beacon(api, doc["share_id"], ua="Googlebot/2.1 (+http://www.google.com/bot.html)").status_code == 204
    assert beacon(api, doc["share_id"], ua="").status_code == 204
    assert beacon(api, doc["share_id"], headers={"Sec-Purpose": "prefetch"}).status_code == 204
    assert get_doc(api, key, doc["document_id"])["views_total"] == 0
    assert beacon(api, doc["share_id"]).status_code == 204
    assert get_doc(api, key, doc["document_id"])["views_total"] == 1


def test_document_shows_views_total_and_last_viewed_at(api, workspace, clock):
    _, key = workspace
    doc = publish(api, key)
    before = get_doc(api, key, doc["document_id"])
    assert before["views_total"] == 0 and before["last_viewed_at"] is None
    beacon(api, doc["share_id"])
    clock.advance(90)
    beacon(api, doc["share_id"])
    after = get_doc(api, key, doc["document_id"])
    assert after["views_total"] == 2
    from chalicelib.services.context import rfc3339
    assert after["last_viewed_at"] == rfc3339(int(clock.now * 1000))


def test_list_and_find_items_carry_views(api, workspace, clock):
    """The contract puts views_total and last_viewed_at on list items too (they were on
    GET one document only)."""
    _, key = workspace
    viewed, quiet = publish(api, key), publish(api, key)
    beacon(api, viewed["share_id"])
    clock.advance(30)
    beacon(api, viewed["share_id"])
    from chalicelib.services.context import rfc3339

    for query in ("", "?query=Doc"):
        listed = api.http.get(f"/api/v1/documents{query}", headers={"X-Api-Key": key})
        assert listed.status_code == 200, listed.body
        items = {d["document_id"]: d for d in json.loads(listed.body)["documents"]}
        assert (items[viewed["document_id"]]["views_total"], items[viewed["document_id"]]["last_viewed_at"]) == (
            2, rfc3339(int(clock.now * 1000)))
        assert (items[quiet["document_id"]]["views_total"], items[quiet["document_id"]]["last_viewed_at"]) == (0, None)


def test_unknown_link_and_cross_site_beacons_count_nothing(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    assert beacon(api, "A" * 22).status_code == 404
    assert beacon(api, doc["share_id"], v=9).status_code == 404
    # Sandboxed document HTML (an opaque origin) or another site cannot count views.
    assert beacon(api, doc["share_id"], headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert get_doc(api, key, doc["document_id"])["views_total"] == 0


def test_protected_document_counts_only_unlocked_viewers(api, pro):
    _, key = pro
    doc = publish(api, key)
    assert set_passphrase(api, key, doc["document_id"], "correct horse battery").status_code == 204
    assert beacon(api, doc["share_id"]).status_code == 401
    cookie = cookie_of(unlock(api, doc["share_id"], "correct horse battery"))
    assert beacon(api, doc["share_id"], headers={"Cookie": cookie}).status_code == 204
    assert get_doc(api, key, doc["document_id"])["views_total"] == 1


def test_flood_from_one_address_is_capped(api, workspace, clock, monkeypatch):
    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "5")
    monkeypatch.setenv("DOCPUB_VIEW_RATE_WINDOW", "600")
    _, key = workspace
    doc = publish(api, key)
    clock.now = 1_795_000_400.0  # 200 s into a 600 s window (epoch-aligned)
    answers = [beacon(api, doc["share_id"]).status_code for _ in range(8)]
    assert answers == [204] * 5 + [429] * 3
    limited = beacon(api, doc["share_id"])
    assert json.loads(limited.body)["error"]["code"] == "rate_limited"
    assert limited.headers["Retry-After"] == "400"
    assert get_doc(api, key, doc["document_id"])["views_total"] == 5
    clock.advance(400)  # the next window
    assert beacon(api, doc["share_id"]).status_code == 204
    assert get_doc(api, key, doc["document_id"])["views_total"] == 6


@pytest.fixture(params=["aws", "sqlite"])
def any_ctx(request, tmp_path, clock):
    """A Context on either adapter (DynamoDB via moto, or SQLite in a temporary folder)."""
    from chalicelib.services.context import Context

    if request.param == "aws":
        request.getfixturevalue("aws")
        from chalicelib.wiring import build_repositories

        return Context(repos=build_repositories("aws"), clock=clock)
    from chalicelib.adapters.sqlite import repositories

    return Context(repos=repositories(tmp_path / "data", shared=False), clock=clock)


def test_fifty_concurrent_beacons_are_counted_exactly(any_ctx, monkeypatch):
    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "1000")
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_headers
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.views import ViewService
    from chalicelib.services.workspaces import WorkspaceService

    _, key = WorkspaceService(any_ctx).create_workspace("Hot", "free")
    who = credentials_from_headers({"x-api-key": key.api_key})
    published = DocumentService(any_ctx).publish(who, PublishRequest(title="Hot", html="<p>x</p>")).response
    share_id = published.share_url.rsplit("/", 1)[1]
    service = ViewService(any_ctx)
    results, failures = run_together([
        (lambda i=i: service.record(share_id, None, None, f"10.0.0.{i}", CHROME, {})) for i in range(50)])
    assert failures == []
    assert all(r.counted for r in results)
    stats_ = service.stats(who, published.document_id, 1)
    assert stats_.views_total == 50
    assert stats_.days[-1].views == 50
    assert stats_.versions[0].views == 50


def test_one_address_flooding_in_parallel_gets_exactly_the_cap(any_ctx, monkeypatch):
    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "20")
    from chalicelib.errors import RateLimited
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_headers
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.views import ViewService
    from chalicelib.services.workspaces import WorkspaceService

    _, key = WorkspaceService(any_ctx).create_workspace("Flood", "free")
    who = credentials_from_headers({"x-api-key": key.api_key})
    published = DocumentService(any_ctx).publish(who, PublishRequest(title="F", html="<p>x</p>")).response
    share_id = published.share_url.rsplit("/", 1)[1]
    service = ViewService(any_ctx)
    results, failures = run_together([
        (lambda: service.record(share_id, None, None, "203.0.113.9", CHROME, {})) for _ in range(50)])
    assert len(results) == 20 and failures == [RateLimited.__name__] * 30
    assert service.stats(who, published.document_id, 1).views_total == 20


# ---------------------------------------------------------------- stats windows

def test_stats_windows_follow_the_clock(api, workspace, clock):
    _, key = workspace
    doc = publish(api, key)
    clock.now = 1_795_000_000.0
    day0 = rules.day_of(int(clock.now * 1000))
    beacon(api, doc["share_id"])
    clock.advance(DAY)
    beacon(api, doc["share_id"])
    beacon(api, doc["share_id"])
    clock.advance(2 * DAY)
    beacon(api, doc["share_id"])

    week = json.loads(stats(api, key, doc["document_id"], 7).body)
    assert len(week["days"]) == 7
    assert [d["views"] for d in week["days"]][-4:] == [1, 2, 0, 1]
    assert week["days"][-4]["date"] == day0
    assert week["views_total"] == 4

    today = json.loads(stats(api, key, doc["document_id"], 1).body)
    assert today["days"] == [{"date": rules.day_of(int(clock.now * 1000)), "views": 1}]
    assert today["views_total"] == 4  # all time, whatever the window

    clock.advance(90 * DAY)  # everything is now outside the longest window
    old = json.loads(stats(api, key, doc["document_id"], 90).body)
    assert len(old["days"]) == 90 and all(d["views"] == 0 for d in old["days"])
    assert old["views_total"] == 4 and old["versions"][0]["views"] == 4
    assert len(json.loads(stats(api, key, doc["document_id"]).body)["days"]) == 30


def test_stats_window_edges_are_utc_midnights(api, workspace, clock):
    from datetime import datetime, timezone

    _, key = workspace
    doc = publish(api, key)
    midnight = datetime(2026, 11, 15, tzinfo=timezone.utc).timestamp()
    clock.now = midnight - 1  # 2026-11-14T23:59:59Z
    beacon(api, doc["share_id"])
    clock.now = midnight  # 2026-11-15T00:00:00Z
    beacon(api, doc["share_id"])
    beacon(api, doc["share_id"])
    clock.now = midnight + 6 * DAY + 3600  # 2026-11-21T01:00Z: a 7-day window starts on the 15th
    week = json.loads(stats(api, key, doc["document_id"], 7).body)["days"]
    assert week[0] == {"date": "2026-11-15", "views": 2}
    assert week[-1]["date"] == "2026-11-21"
    eight = json.loads(stats(api, key, doc["document_id"], 8).body)["days"]
    assert eight[:2] == [{"date": "2026-11-14", "views": 1}, {"date": "2026-11-15", "views": 2}]


@pytest.mark.parametrize("days", ["0", "91", "abc", "-1"])
def test_stats_days_out_of_range_is_422(api, workspace, days):
    _, key = workspace
    doc = publish(api, key)
    r = api.http.get(f"/api/v1/documents/{doc['document_id']}/stats?days={days}", headers={"X-Api-Key": key})
    assert r.status_code == 422
    assert json.loads(r.body)["error"]["code"] == "validation_error"


def test_stats_of_another_workspace_or_unknown_document_is_404(api, workspace, services):
    _, key = workspace
    _, other_key = services.workspaces.create_workspace("Other", "free")
    doc = publish(api, key)
    assert stats(api, other_key.api_key, doc["document_id"]).status_code == 404
    assert stats(api, key, "00000000-0000-4000-8000-000000000000").status_code == 404
    assert stats(api, "", doc["document_id"]).status_code == 401


def test_delete_forgets_views(api, workspace, ctx):
    _, key = workspace
    doc = publish(api, key)
    beacon(api, doc["share_id"])
    assert ctx.views.counts(doc["document_id"], "2000-01-01", "2100-01-01").total == 1
    r = api.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key})
    assert r.status_code == 204
    assert ctx.views.counts(doc["document_id"], "2000-01-01", "2100-01-01").total == 0


# ---------------------------------------------------------------- MCP

def test_mcp_get_document_stats_mirrors_rest(client):
    from chalicelib import wiring
    from tests.http.test_mcp import call

    _, created = wiring.workspaces().create_workspace("MCP views", "free")
    key = created.api_key
    doc = publish(client, key, "Stats over MCP")
    assert beacon(client, doc["share_id"]).status_code == 204
    result = call(client, key, "get_document_stats", {"document_id": doc["document_id"], "days": 7})
    assert result["isError"] is False
    rest = json.loads(stats(client, key, doc["document_id"], 7).body)
    assert result["structuredContent"] == rest
    assert rest["views_total"] == 1 and len(rest["days"]) == 7
    bad = call(client, key, "get_document_stats", {"document_id": doc["document_id"], "days": 91})
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("validation_error")
    missing = call(client, key, "get_document_stats", {"document_id": "00000000-0000-4000-8000-000000000000"})
    assert missing["isError"] is True and missing["content"][0]["text"].startswith("not_found")


def test_beacon_and_stats_over_http_on_sqlite(tmp_path, monkeypatch, clock):
    """The same HTTP path on the embedded adapter (what `make run` uses)."""
    from chalice.test import Client

    from app import app
    from chalicelib.adapters.sqlite import repositories
    from chalicelib import wiring
    from chalicelib.services.context import Context

    context = Context(repos=repositories(tmp_path / "data", shared=False), clock=clock)
    wiring.reset()
    monkeypatch.setattr(wiring, "default_context", lambda: context)
    try:
        _, created = wiring.workspaces().create_workspace("Embedded", "free")
        key = created.api_key
        with Client(app) as http:
            doc = publish(http, key, "On SQLite")
            assert beacon(http, doc["share_id"]).status_code == 204
            assert beacon(http, doc["share_id"], ua="curl/8.5.0").status_code == 204
            clock.advance(DAY)
            assert beacon(http, doc["share_id"], v=1).status_code == 204
            body = json.loads(stats(http, key, doc["document_id"], 2).body)
            assert body["views_total"] == 2
            assert [d["views"] for d in body["days"]] == [1, 1]
            assert body["versions"] == [{"version_id": doc["version_id"], "views": 2}]
            assert get_doc(http, key, doc["document_id"])["views_total"] == 2
            assert http.http.delete(f"/api/v1/documents/{doc['document_id']}",
                                    headers={"X-Api-Key": key}).status_code == 204
            assert context.views.counts(doc["document_id"], "2000-01-01", "2100-01-01").total == 0
    finally:
        wiring.reset()
