"""Fixtures for the docpub client's tests: the real local stack, a CLI runner, a faulty proxy.

The client is imported from this source tree (never from whatever `docpub` the
virtualenv holds) and the CLI runs as `python -m docpub` from the same tree.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

CLIENT_SRC = Path(__file__).resolve().parent.parent / "src"
PROJECT_DIR = CLIENT_SRC.parent.parent.parent
if str(CLIENT_SRC) not in sys.path:
    sys.path.insert(0, str(CLIENT_SRC))
if str(PROJECT_DIR) not in sys.path:  # `pytest` (not `python -m pytest`) does not add the cwd
    sys.path.append(str(PROJECT_DIR))

from tests.conftest import stack  # noqa: E402,F401  (reuse the project's real local stack fixture)


def cli_env(home: Path, url: str | None, key: str | None, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCPUB_", "AWS_"))}
    env.update({"PYTHONPATH": str(CLIENT_SRC), "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
                "PYTHONUNBUFFERED": "1", "BROWSER": ""})
    if url:
        env["DOCPUB_URL"] = url
    if key:
        env["DOCPUB_API_KEY"] = key
    env.update(extra or {})
    return env


class Cli:
    """Runs `python -m docpub ARGS` in a subprocess with an isolated HOME (no stray config)."""

    def __init__(self, home: Path, url: str | None, key: str | None):
        self.home, self.url, self.key = home, url, key

    def __call__(self, *args: str, input: str | bytes = "", env: dict | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess:
        text = not isinstance(input, bytes)
        return subprocess.run([sys.executable, "-m", "docpub", *args], input=input, capture_output=True,
                              text=text, env=cli_env(self.home, self.url, self.key, env), timeout=timeout)

    def ok(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        result = self(*args, **kwargs)
        assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
        return result

    def json(self, *args: str, **kwargs):
        import json

        return json.loads(self.ok(*args, "--json", **kwargs).stdout)

    def with_key(self, key: str | None) -> "Cli":
        return Cli(self.home, self.url, key)


@pytest.fixture(scope="module")
def pro_key(stack) -> str:
    """A fresh Pro workspace per test module (no document cap)."""
    created = stack.admin("create-workspace", "--name", f"CLI {uuid.uuid4().hex[:6]}", "--plan", "pro")
    return created["api_key"]


@pytest.fixture
def cli(stack, pro_key, tmp_path) -> Cli:
    return Cli(tmp_path, stack.base_url, pro_key)


@pytest.fixture
def api(stack, pro_key):
    """Plain HTTP to check what the server stored (independent of the client under test)."""
    with stack.client(pro_key) as http:
        yield http


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _read_http_message(sock: socket.socket) -> bytes:
    """One HTTP/1.1 message with a Content-Length body (what httpx and chalice local send)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class FaultyProxy:
    """A loopback TCP proxy in front of the stack that misbehaves on purpose, per request.

    ``plan`` lists what to do with the next requests, in order (then "forward"):
    - "forward": pass the request on and the answer back;
    - "drop_after_forward": pass the request on, read the server's whole answer
      (so the server has finished and stored everything), then close the client's
      connection without a byte of it;
    - "503": answer 503 without contacting the server.
    """

    def __init__(self, upstream_port: int, plan: list[str]):
        self.upstream_port = upstream_port
        self.plan = list(plan)
        self.requests: list[bytes] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._closed = False
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            while True:
                request = _read_http_message(conn)
                if not request:
                    return
                with self._lock:
                    self.requests.append(request)
                    action = self.plan.pop(0) if self.plan else "forward"
                if action == "503":
                    body = b'{"error":{"code":"service_unavailable","message":"injected by the test proxy"}}'
                    conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                    continue
                with socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
                    upstream.sendall(request)
                    response = _read_http_message(upstream)
                if action == "drop_after_forward":
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                conn.sendall(response)

    def header_values(self, name: str) -> list[str]:
        values = []
        for request in self.requests:
            for line in request.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
                key, _, value = line.partition(b":")
                if key.strip().lower() == name.lower().encode():
                    values.append(value.strip().decode())
        return values

    def close(self) -> None:
        self._closed = True
        self._server.close()


@pytest.fixture
def faulty_proxy(stack):
    proxies: list[FaultyProxy] = []

    def make(plan: list[str]) -> FaultyProxy:
        proxy = FaultyProxy(stack.port, plan)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()
