"""Defects found by driving the running stack like a first user (helper s3-qa), each
reproduced here at the HTTP level before its fix."""
from __future__ import annotations

import json

from tests.helpers import auth, post_json, publish


def _error(r) -> dict:
    return json.loads(r.body)["error"]


def test_a_route_without_a_body_refuses_unknown_fields_like_every_other(client, workspace):
    """Contract section 1: unknown JSON fields are 422, so a typo never silently does
    nothing; MCP's rotate_share_link already refused an extra argument, REST ignored it
    (POST /share/rotate {"x": 1} rotated the link)."""
    _, key = workspace
    doc = publish(client, key)
    rotate = f"/api/v1/documents/{doc['document_id']}/share/rotate"
    r = post_json(client, rotate, {"keep_old_link": True}, key)
    assert r.status_code == 422, r.body
    assert _error(r)["details"]["fields"][0]["field"] == "keep_old_link"
    before = json.loads(client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).body)
    assert before["share_url"] == doc["share_url"]  # nothing changed
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key), body=b'{"force": true}')
    assert r.status_code == 422 and _error(r)["code"] == "validation_error"
    assert client.http.get(f"/api/v1/documents/{doc['document_id']}", headers=auth(key)).status_code == 200
    r = client.http.post(rotate, headers={"X-Api-Key": key, "Content-Type": "application/json"}, body=b"{bad")
    assert r.status_code == 400 and _error(r)["code"] == "invalid_json"
    # No body, an empty body or an empty object: what clients send, still fine.
    assert client.http.post(rotate, headers={"X-Api-Key": key}).status_code == 200
    assert post_json(client, rotate, {}, key).status_code == 200
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key), body=b"")
    assert r.status_code == 204
