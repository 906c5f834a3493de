"""The share path as its own function behind a Lambda function URL (issue 23): the
same Chalice app, reached through chalicelib/entrypoints/edge.py, which turns a
function URL event (payload 2.0) into the REST proxy event Chalice routes and the
answer back. Driven with real function URL events against the real app."""
from __future__ import annotations

import base64
import json

import pytest

from chalicelib.entrypoints import edge
from tests.helpers import auth
from tests.sharing_helpers import publish, set_passphrase

CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/131.0.0.0 Safari/537.36")


def url_event(method: str, path: str, query: str = "", headers: dict | None = None, body: bytes | None = None,
              cookies: list[str] | None = None) -> dict:
    """A Lambda function URL request as CloudFront's origin request reaches it."""
    headers = {"user-agent": CHROME, "x-docpub-site": "main", **{k.lower(): v for k, v in (headers or {}).items()}}
    event = {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": headers,
        "requestContext": {"accountId": "anonymous", "apiId": "abc", "domainName": "abc.lambda-url.us-east-1.on.aws",
                           "domainPrefix": "abc", "requestId": "req-1", "routeKey": "$default", "stage": "$default",
                           "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                                    "sourceIp": "130.176.1.1", "userAgent": CHROME},
                           "time": "25/Nov/2026:20:00:00 +0000", "timeEpoch": 1795636800000},
        "isBase64Encoded": body is not None,
    }
    if query:
        event["queryStringParameters"] = dict(p.split("=", 1) for p in query.split("&"))
    if body is not None:
        event["body"] = base64.b64encode(body).decode("ascii")
    if cookies:
        event["cookies"] = cookies
    return event


class _Context:
    aws_request_id = "req-1"
    function_name = "docpub-test-share"
    memory_limit_in_mb = 512

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 29_000


def call(event: dict) -> dict:
    answer = edge.handle(event, _Context())
    assert set(answer) <= {"statusCode", "headers", "body", "isBase64Encoded", "cookies"}, answer
    assert all(isinstance(v, str) for v in answer["headers"].values()), answer["headers"]
    return answer


def body_of(answer: dict) -> bytes:
    raw = answer["body"]
    data = base64.b64decode(raw) if answer["isBase64Encoded"] else raw.encode("utf-8")
    if answer["headers"].get("Content-Encoding") == "gzip":
        import gzip

        data = gzip.decompress(data)
    return data


def test_the_share_function_has_exactly_the_apps_share_routes():
    """The share function's own app (issue 38) registers the same blueprint as app.py's:
    every /d/* route with the same methods, whichever app registered it first."""
    from app import app

    def share_routes(chalice_app) -> dict[str, set[str]]:
        return {path: set(entries) for path, entries in chalice_app.routes.items() if path.startswith("/d/")}

    assert share_routes(edge.app) == share_routes(app)
    assert set(edge.app.routes) == set(share_routes(edge.app))  # nothing else
    view = edge.app.routes["/d/{share_id}/view"]
    real = {m for m, entry in view.items() if not getattr(entry.view_function, "docpub_method_not_allowed", False)}
    assert real == {"POST"}  # the beacon; every other method answers 405


def test_the_share_page_and_its_content_answer_as_through_api_gateway(api, workspace):
    _, key = workspace
    doc = publish(api, key, "Edge", "<p>served at the edge</p>")
    page = call(url_event("GET", f"/d/{doc['share_id']}"))
    direct = api.http.get(f"/d/{doc['share_id']}")
    assert page["statusCode"] == direct.status_code == 200
    assert page["headers"]["Cache-Control"] == direct.headers["Cache-Control"]
    assert page["headers"]["Content-Type"].startswith("text/html")
    assert b"Edge" in body_of(page)
    content = call(url_event("GET", f"/d/{doc['share_id']}/v/{doc['version_id']}"))
    assert content["statusCode"] == 200 and b"served at the edge" in body_of(content)
    assert content["headers"]["ETag"]
    # A version chosen with ?v= (the query string is passed on).
    assert call(url_event("GET", f"/d/{doc['share_id']}", query="v=1"))["statusCode"] == 200
    assert call(url_event("GET", f"/d/{doc['share_id']}", query="v=9"))["statusCode"] == 404


def test_the_view_beacon_counts_through_the_function_url(api, workspace):
    _, key = workspace
    doc = publish(api, key, "Beacon")
    for _ in range(3):
        answer = call(url_event("POST", f"/d/{doc['share_id']}/view", query="v=1", body=b""))
        assert answer["statusCode"] == 204 and answer["headers"]["Cache-Control"] == "no-store"
        assert "cookies" not in answer
    stats = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}/stats", headers=auth(key)).body)
    assert stats["views_total"] == 3
    bot = url_event("POST", f"/d/{doc['share_id']}/view", body=b"", headers={"user-agent": "curl/8.5.0"})
    assert call(bot)["statusCode"] == 204
    stats = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}/stats", headers=auth(key)).body)
    assert stats["views_total"] == 3


def test_unlock_cookies_go_out_as_cookies_and_come_back_in(api, services, monkeypatch):
    from urllib.parse import urlencode

    _, key = services.workspaces.create_workspace("Pro", "pro")
    key = key.api_key
    doc = publish(api, key, "Secret", "<p>behind a passphrase</p>")
    assert set_passphrase(api, key, doc["document_id"], "correct horse battery").status_code == 204
    locked = call(url_event("GET", f"/d/{doc['share_id']}"))
    assert locked["statusCode"] == 200 and f'action="/d/{doc["share_id"]}/unlock'.encode() in body_of(locked)
    content = f"/d/{doc['share_id']}/v/{doc['version_id']}"
    assert call(url_event("GET", content))["statusCode"] == 401
    unlocked = call(url_event("POST", f"/d/{doc['share_id']}/unlock",
                              headers={"content-type": "application/x-www-form-urlencoded"},
                              body=urlencode({"passphrase": "correct horse battery"}).encode()))
    assert unlocked["statusCode"] == 303
    [cookie] = unlocked["cookies"]
    assert "Set-Cookie" not in unlocked["headers"] and cookie.startswith("dp_unlock")
    opened = call(url_event("GET", content, cookies=[cookie.split(";", 1)[0]]))
    assert opened["statusCode"] == 200 and b"behind a passphrase" in body_of(opened)
    assert opened["headers"]["Cache-Control"] == "private, no-store"


def test_feedback_posts_with_a_json_body(api, services):
    _, key = services.workspaces.create_workspace("Pro", "pro")
    doc = publish(api, key.api_key, "Review me")
    answer = call(url_event("POST", f"/d/{doc['share_id']}/feedback", headers={"content-type": "application/json"},
                            body=json.dumps({"message": "Looks good", "name": "Ann"}).encode()))
    assert answer["statusCode"] == 201, answer
    assert json.loads(body_of(answer))["feedback_id"].startswith("fb_")


@pytest.mark.parametrize("path", ["/api/v1/me", "/dashboard", "/mcp", "/", "/d", "/d/", "/d/x/nope/y/z/w"])
def test_only_share_paths_are_served_here(api, path):
    answer = call(url_event("GET", path))
    assert answer["statusCode"] == 404
    assert json.loads(answer["body"])["error"]["code"] == "not_found"


def test_the_function_url_cannot_bypass_cloudfront(api, workspace, monkeypatch):
    """AuthType NONE is safe because the app refuses requests without CloudFront's secret."""
    _, key = workspace
    doc = publish(api, key, "Guarded")
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "s" * 40)
    assert call(url_event("GET", f"/d/{doc['share_id']}"))["statusCode"] == 403
    assert call(url_event("POST", f"/d/{doc['share_id']}/view", body=b""))["statusCode"] == 403
    ok = call(url_event("GET", f"/d/{doc['share_id']}", headers={"X-Docpub-Origin-Secret": "s" * 40}))
    assert ok["statusCode"] == 200


def test_route_matching_prefers_literal_segments():
    assert edge.match("/d/abc/view") == ("/d/{share_id}/view", {"share_id": "abc"})
    assert edge.match("/d/abc/v/v_1") == ("/d/{share_id}/v/{version_id}", {"share_id": "abc", "version_id": "v_1"})
    assert edge.match("/d/abc/v/v_1/img/a%20b.png") == (
        "/d/{share_id}/v/{version_id}/{p1}/{p2}", {"share_id": "abc", "version_id": "v_1", "p1": "img", "p2": "a b.png"})
    assert edge.match("/d/abc/feedback/fb_1/replies")[0] == "/d/{share_id}/feedback/{feedback_id}/replies"
    assert edge.match("/d/abc/nothing") is None


def test_each_viewer_behind_one_edge_has_its_own_view_cap(api, workspace, monkeypatch):
    """Through CloudFront every request comes from an edge's address; the beacon's origin
    request policy forwards CloudFront-Viewer-Address, and with the origin secret the app
    caps views per viewer, not per edge (infra: BeaconOriginRequestPolicy)."""
    _, key = workspace
    doc = publish(api, key, "Capped")
    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "2")
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "s" * 40)
    answers = {}
    for viewer in ("203.0.113.7:50123", "198.51.100.4:443"):
        headers = {"X-Docpub-Origin-Secret": "s" * 40, "CloudFront-Viewer-Address": viewer}
        answers[viewer] = [call(url_event("POST", f"/d/{doc['share_id']}/view", headers=headers, body=b""))["statusCode"]
                           for _ in range(3)]
    assert answers == {"203.0.113.7:50123": [204, 204, 429], "198.51.100.4:443": [204, 204, 429]}
    monkeypatch.delenv("DOCPUB_ORIGIN_SECRET")  # the test client calls the API without CloudFront
    stats = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}/stats", headers=auth(key)).body)
    assert stats["views_total"] == 4
