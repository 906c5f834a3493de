"""Helpers and fixtures for share link, passphrase and feedback tests."""
from __future__ import annotations

import json

import pytest

from tests.helpers import post_json
from tests import helpers

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def pro(services):
    ws, key = services.workspaces.create_workspace("Pro Co", "pro")
    return ws, key.api_key


def publish(client, key: str, title: str = "Doc", html: str = "<p>hello</p>", document_id: str | None = None) -> dict:
    """tests.helpers.publish with this module's positional title/html."""
    return helpers.publish(client, key, title=title, html=html, **({"document_id": document_id} if document_id else {}))


def set_passphrase(client, key: str, document_id: str, passphrase: str):
    return client.http.put(f"/api/v1/documents/{document_id}/passphrase",
                           headers={"X-Api-Key": key, "Content-Type": "application/json"},
                           body=json.dumps({"passphrase": passphrase}))


def unlock(client, share_id: str, passphrase: str, headers: dict | None = None):
    from urllib.parse import urlencode

    return client.http.post(f"/d/{share_id}/unlock", headers={**FORM, **(headers or {})},
                            body=urlencode({"passphrase": passphrase}))


def cookie_of(response) -> str:
    """`name=value` of a Set-Cookie header."""
    return response.headers["Set-Cookie"].split(";", 1)[0]


def send_feedback(client, share_id: str, body: dict, headers: dict | None = None, query: str = ""):
    return post_json(client, f"/d/{share_id}/feedback{query}", body, headers=headers)


def get_json(client, path: str, key: str):
    r = client.http.get(path, headers={"X-Api-Key": key})
    return r.status_code, json.loads(r.body) if r.body else None
