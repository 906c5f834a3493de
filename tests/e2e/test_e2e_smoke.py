import pytest

pytestmark = pytest.mark.e2e


def test_stack_serves_publish_and_read(stack):
    with stack.client() as http:
        r = http.post("/api/v1/publish", json={"title": "E2E", "html": "<p>e2e</p>"})
        assert r.status_code == 200, r.text
        doc = r.json()
        r = http.get(f"/api/v1/documents/{doc['document_id']}", params={"include_html": "true"})
        assert r.json()["html"] == "<p>e2e</p>"


def test_unknown_route_is_contract_404(stack):
    r = stack.client().get("/api/v1/nope")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_non_json_content_type_is_415(stack):
    r = stack.client().post("/api/v1/publish", content=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert r.json()["error"]["code"] == "unsupported_media_type"


def test_head_options_and_allow_headers(stack):
    with stack.client() as http:
        head = http.head("/api/v1/me")
        assert head.status_code == 200 and head.content == b""
        assert http.get("/api/v1/me").status_code == 200  # the connection is still sound
        options = http.options("/api/v1/me")
        assert options.status_code == 405 and options.headers["allow"] == "GET, HEAD"
        put = http.put("/mcp")
        assert put.status_code == 405 and put.headers["allow"] == "POST"
        no_get = http.head("/api/v1/publish")
        assert no_get.status_code == 405 and no_get.content == b""
        assert http.get("/api/v1/health").json() == {"status": "ok"}
