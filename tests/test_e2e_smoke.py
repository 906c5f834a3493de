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
