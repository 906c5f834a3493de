import json

from tests.helpers import post_json


def test_publish_then_get(client, workspace):
    _, key = workspace
    r = post_json(client, "/api/v1/publish", {"title": "Hello", "html": "<p>hi</p>"}, key)
    assert r.status_code == 200, r.body
    body = json.loads(r.body)
    r2 = client.http.get(f"/api/v1/documents/{body['document_id']}?include_html=true", headers={"X-Api-Key": key})
    assert r2.status_code == 200, r2.body
    assert json.loads(r2.body)["html"] == "<p>hi</p>"
