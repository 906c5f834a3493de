"""Issue 33 on `make run`'s server (scripts/serve_local.py):

- Finding 7: every client shared chalice local's fixed 127.0.0.1, so one address's
  sign-ups, unlock attempts and feedback posts used up everyone's. The contract: the
  client address of every per-address limit is the connection's peer address under
  `make run`. Clients here bind 127.0.0.2, 127.0.0.3 ... (all loopback on Linux).
- Finding 8: a request line or header block over the server's limits got http.server's
  HTML error page; now 414 `uri_too_long` / 431 `headers_too_large` in section 3's shape.
- Logs: one line per event (each was printed twice, plain and as JSON); a client that
  drops its connection is one line, not a traceback.
"""
from __future__ import annotations

import json
import re
import socket
import time

import httpx
import pytest

from tests.stack import LocalStack

pytestmark = pytest.mark.e2e

PASSPHRASE = "correct horse battery staple"


@pytest.fixture(scope="module")
def edge_stack(tmp_path_factory):
    stack = LocalStack(tmp_path_factory.mktemp("edges") / "data", env={
        "DOCPUB_SIGN_UP_PER_HOUR": "2", "DOCPUB_VIEWER_RATE_LIMIT": "2", "DOCPUB_SECRET_KEY": "k" * 40}).start()
    yield stack
    stack.stop()


def from_address(stack: LocalStack, address: str, **kwargs) -> httpx.Client:
    """A client whose connections leave from `address` (a loopback address of its own)."""
    return httpx.Client(base_url=stack.base_url, transport=httpx.HTTPTransport(local_address=address),
                        timeout=30, **kwargs)


def sign_up(stack: LocalStack, address: str, n: int) -> int:
    with from_address(stack, address) as http:
        form = http.get("/dashboard/sign-up")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
        return http.post("/dashboard/sign-up", data={
            "csrf_token": csrf, "email": f"peer{address.replace('.', '-')}-{n}@example.com",
            "password": "correct horse battery", "workspace_name": f"W{n}"}).status_code


def test_sign_ups_count_per_peer_address(edge_stack):
    assert [sign_up(edge_stack, "127.0.0.2", n) for n in range(3)] == [200, 200, 429]
    assert [sign_up(edge_stack, "127.0.0.3", n) for n in range(3)] == [200, 200, 429]


@pytest.fixture(scope="module")
def pro_doc(edge_stack):
    key = edge_stack.admin("create-workspace", "--name", "Peers", "--plan", "pro")["api_key"]
    with edge_stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "Peers", "html": "<h1>Peers</h1><p>text</p>"}).json()
        share = doc["share_url"].rsplit("/d/", 1)[1]
        locked = http.post("/api/v1/publish", json={"title": "Locked", "html": "<h1>Locked</h1>"}).json()
        assert http.put(f"/api/v1/documents/{locked['document_id']}/passphrase",
                        json={"passphrase": PASSPHRASE}).status_code == 204
    return share, locked["share_url"].rsplit("/d/", 1)[1]


def test_unlock_attempts_count_per_peer_address(edge_stack, pro_doc):
    _, locked = pro_doc

    def wrong(address: str) -> int:
        with from_address(edge_stack, address) as http:
            return http.post(f"/d/{locked}/unlock", data={"passphrase": "not the passphrase"}).status_code

    assert [wrong("127.0.0.4") for _ in range(3)][-1] == 429
    assert wrong("127.0.0.5") != 429  # another viewer has a budget of its own
    with from_address(edge_stack, "127.0.0.6") as http:
        assert http.post(f"/d/{locked}/unlock", data={"passphrase": PASSPHRASE}).status_code in (200, 303)


def test_feedback_counts_per_peer_address(edge_stack, pro_doc):
    share, _ = pro_doc

    def post(address: str) -> int:
        with from_address(edge_stack, address) as http:
            return http.post(f"/d/{share}/feedback", json={"message": "hello"}).status_code

    assert [post("127.0.0.7") for _ in range(3)] == [201, 201, 429]
    assert [post("127.0.0.8") for _ in range(2)] == [201, 201]
