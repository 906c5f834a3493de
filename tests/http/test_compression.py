"""Bytes per view (issue 38): behind CloudFront the API, MCP, OAuth and dashboard
behaviours are not cached, and a caching-disabled behaviour cannot compress
(tests/e2e/test_infra.py), so the origin gzips every text answer of 1 KiB or more
for a client that asks. One answer of each surface here; the share pages have
their own (tests/http/test_share_pages.py)."""
from __future__ import annotations

import gzip
import json

import pytest

from chalicelib.entrypoints.http import GZIP_MIN_BYTES
from tests.helpers import auth

GZIP = {"Accept-Encoding": "gzip, deflate, br"}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _text(r) -> bytes:
    return gzip.decompress(r.body) if r.headers.get("Content-Encoding") == "gzip" else r.body


@pytest.mark.parametrize("method,path,body,extra", [
    ("GET", "/", None, {}),
    ("GET", "/docs", None, {}),
    ("GET", "/api/v1/openapi.json", None, {}),
    ("GET", "/dashboard/sign-in", None, {}),
    ("GET", "/.well-known/oauth-authorization-server", None, {}),
    ("GET", "/oauth/authorize?client_id=nobody&response_type=code", None, {}),  # the OAuth error page
    ("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), MCP_HEADERS),
])
def test_every_surfaces_text_answers_are_gzip_when_asked(client, key, method, path, body, extra):
    headers = {**GZIP, **extra, **(auth(key) if path == "/mcp" else {})}
    r = client.http.request(method, path, headers=headers, body=body or b"")
    text = _text(r)
    assert r.headers["Content-Type"].startswith(("text/", "application/json")), path
    if len(text) >= GZIP_MIN_BYTES:
        assert r.headers.get("Content-Encoding") == "gzip", (path, len(text))
        assert "Accept-Encoding" in r.headers.get("Vary", ""), path
    plain = client.http.request(method, path, headers={k: v for k, v in headers.items() if k != "Accept-Encoding"},
                                body=body or b"")
    assert "Content-Encoding" not in plain.headers, path
