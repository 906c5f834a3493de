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
    try:
        with socket.socket() as probe:
            probe.bind((address, 0))
    except OSError:
        pytest.skip(f"{address} is not a loopback address here (Linux routes all of 127/8)")
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


def raw_exchange(stack: LocalStack, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (no client library trims or refuses them); the answer parsed."""
    with socket.create_connection(("127.0.0.1", stack.port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize("path", ["/api/v1/documents", "/d/anything", "/dashboard/documents"])
def test_a_request_line_over_the_limit_is_414_in_the_contract_shape(edge_stack, path):
    request = f"GET {path}?q={'a' * 65 * 1024} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    status, headers, body = raw_exchange(edge_stack, request)
    assert status == 414, body[:300]
    assert headers["content-type"].startswith("application/json")
    assert json.loads(body)["error"]["code"] == "uri_too_long"


@pytest.mark.parametrize("extra", [f"X-Big: {'b' * 70 * 1024}\r\n",
                                   "".join(f"X-H{i}: v\r\n" for i in range(101))])
def test_a_header_block_over_the_limit_is_431_in_the_contract_shape(edge_stack, extra):
    request = f"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()
    status, headers, body = raw_exchange(edge_stack, request)
    assert status == 431, body[:300]
    assert headers["content-type"].startswith("application/json")
    assert json.loads(body)["error"]["code"] == "headers_too_large"



def log_since(stack: LocalStack, offset: int) -> str:
    return stack.log_path.read_bytes()[offset:].decode("utf-8", "replace")


def wait_for_log(stack: LocalStack, offset: int, needle: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_since(stack, offset)
        if needle in text:
            time.sleep(0.3)  # a second copy of the line, if any, comes right after
            return log_since(stack, offset)
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} never logged:\n{log_since(stack, offset)[-3000:]}")


def test_a_webhook_delivery_that_did_not_go_is_one_line_saying_why(edge_stack):
    key = edge_stack.api_key
    with edge_stack.client(key) as http:
        # `.invalid` never resolves (RFC 6761): accepted at creation (DNS may lag), refused per delivery.
        hook = http.post("/api/v1/webhooks", json={"url": "https://receiver.invalid/hook?token=s3cr3t-token",
                                                   "events": ["feedback.created"]})
        assert hook.status_code == 201, hook.text
        offset = edge_stack.log_path.stat().st_size
        delivery_id = http.post(f"/api/v1/webhooks/{hook.json()['webhook_id']}/test").json()["delivery_id"]
    text = wait_for_log(edge_stack, offset, delivery_id)
    lines = [line for line in text.splitlines() if delivery_id in line]
    assert len(lines) == 1, lines
    entry = json.loads(lines[0])
    detail = json.loads(entry["message"])
    assert detail["status"] == "pending" and "could not be resolved" in detail["error"], detail
    assert "s3cr3t-token" not in text and hook.json()["secret"] not in text


def test_a_client_that_drops_its_connection_is_one_line_not_a_traceback(edge_stack):
    offset = edge_stack.log_path.stat().st_size
    for _ in range(3):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # the answer cannot fit anywhere
        sock.connect(("127.0.0.1", edge_stack.port))
        sock.sendall(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.3)  # the server is mid-answer
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
        sock.close()
    text = wait_for_log(edge_stack, offset, "client closed the connection")
    assert "Traceback" not in text and "Exception occurred" not in text, text[-3000:]
    gone = [line for line in text.splitlines() if "client closed the connection" in line]
    assert 1 <= len(gone) <= 3 and all(json.loads(line)["client"] == "127.0.0.1" for line in gone), gone
    assert httpx.get(edge_stack.base_url + "/api/v1/health").status_code == 200


def test_requests_on_a_kept_alive_connection_answer_without_a_nagle_delay(stack):
    """Each answer is written as headers, then body: with Nagle's algorithm on, the body waited
    for the client's delayed ACK (~40 ms on Linux) on every request after a connection's first,
    so a browser or SDK reusing its connection (every one does) saw 40 ms added to each call."""
    with httpx.Client(base_url=stack.base_url, timeout=30) as http:
        http.get("/api/v1/health")  # the connection is open from here on
        seconds = []
        for _ in range(20):
            started = time.perf_counter()
            assert http.get("/api/v1/health").status_code == 200
            seconds.append(time.perf_counter() - started)
    seconds.sort()
    assert seconds[len(seconds) // 2] < 0.02, [round(s * 1000, 1) for s in seconds]
