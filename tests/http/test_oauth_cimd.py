"""Client ID metadata documents: the fetch is fenced against SSRF, the document must
describe the URL it came from, and the answer is cached."""
from __future__ import annotations

import pytest

from chalicelib.adapters import outbound
from chalicelib.adapters.outbound import PinnedHttp
from chalicelib.services import cimd

OUTBOUND = PinnedHttp()  # the one fenced outbound client, as wiring builds it


@pytest.mark.parametrize("url, why", [
    ("http://example.com/client.json", "https"),
    ("https://example.com", "path"),
    ("https://example.com/", "path"),
    ("https://user:pw@example.com/c.json", "credentials"),
    ("https://example.com:99999/c.json", "not a valid URL"),
])
def test_unacceptable_urls(url, why):
    with pytest.raises(cimd.MetadataError, match=why):
        cimd.check_url(url)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.5", "192.168.1.1", "169.254.169.254", "::1",
                                     "fc00::1", "0.0.0.0", "100.64.0.1", "::ffff:127.0.0.1"])
def test_non_public_addresses_are_never_fetched(monkeypatch, address):
    monkeypatch.setattr(outbound.socket, "getaddrinfo", lambda *a, **k: [(None, None, None, None, (address, 443))])
    with pytest.raises(cimd.MetadataError, match="non-public"):
        cimd.fetch(OUTBOUND, "https://client.example/oauth.json")


def test_one_private_address_among_public_ones_is_refused(monkeypatch):
    answers = [(None, None, None, None, ("93.184.216.34", 443)), (None, None, None, None, ("10.1.2.3", 443))]
    monkeypatch.setattr(outbound.socket, "getaddrinfo", lambda *a, **k: answers)
    with pytest.raises(cimd.MetadataError, match="non-public"):
        cimd.fetch(OUTBOUND, "https://client.example/oauth.json")


def test_allowlisted_host_may_be_local(monkeypatch):
    monkeypatch.setenv("DOCPUB_CIMD_ALLOWED_HOSTS", "localhost:8443")
    monkeypatch.setattr(outbound.socket, "getaddrinfo", lambda *a, **k: [(None, None, None, None, ("127.0.0.1", 8443))])
    assert cimd.target_of("https://localhost:8443/c.json").exempt
    target = cimd.target_of("https://localhost:9443/c.json")  # the port is part of the allowance
    assert not target.exempt
    with pytest.raises(outbound.OutboundRefused, match="non-public"):
        OUTBOUND.vet(target)


def test_document_must_name_its_own_url():
    url = "https://app.example/client.json"
    good = {"client_id": url, "client_name": "App", "redirect_uris": ["https://app.example/cb"]}
    assert cimd.client_from_document(url, good).client_name == "App"
    with pytest.raises(cimd.MetadataError, match="does not equal"):
        cimd.client_from_document(url, {**good, "client_id": "https://other.example/client.json"})
    with pytest.raises(cimd.MetadataError, match="redirect_uris"):
        cimd.client_from_document(url, {**good, "redirect_uris": ["http://app.example/cb"]})
    with pytest.raises(cimd.MetadataError, match="public client"):
        cimd.client_from_document(url, {**good, "token_endpoint_auth_method": "private_key_jwt"})


def test_documents_are_cached(ctx, clock, monkeypatch):
    from chalicelib.services.oauth import OAuthService

    url = "https://app.example/client.json"
    fetched = []

    def fetch(client_id):
        fetched.append(client_id)
        return {"client_id": url, "client_name": "App", "redirect_uris": ["https://app.example/cb"]}

    service = OAuthService(ctx, fetch_metadata=fetch)
    assert service.client(url).client_name == "App"
    assert service.client(url).client_name == "App"
    assert fetched == [url]
    clock.advance(cimd.CACHE_SECONDS + 1)
    service.client(url)
    assert fetched == [url, url]


def test_oversized_document_is_refused(monkeypatch):
    class Response:
        status = 200

        def read(self, n):
            return b"{" + b" " * n

    class Connection:
        def __init__(self, *args):
            pass

        def request(self, *args, **kwargs):
            pass

        def getresponse(self):
            return Response()

        def close(self):
            pass

    monkeypatch.setattr(outbound, "resolve_public", lambda host, port: "93.184.216.34")
    monkeypatch.setattr(outbound, "PinnedHTTPSConnection", Connection)
    with pytest.raises(cimd.MetadataError, match="larger than"):
        cimd.fetch(OUTBOUND, "https://app.example/client.json")


def test_a_trickling_server_cannot_hold_the_fetch_open(monkeypatch):
    now = [1000.0]

    class Trickle:
        def read1(self, n):
            now[0] += 1.0  # each byte takes a second
            return b" "

    monkeypatch.setattr(outbound.time, "monotonic", lambda: now[0])
    with pytest.raises(outbound.OutboundFailed, match="too long") as failed:
        outbound.read_within(Trickle(), cimd.MAX_BYTES, now[0] + cimd.TIMEOUT_SECONDS)
    assert failed.value.timed_out
    assert now[0] <= 1000.0 + cimd.TIMEOUT_SECONDS + 1


def test_a_server_trickling_its_headers_cannot_hold_the_fetch_open(monkeypatch):
    # Each byte comes well within the per-read timeout, so only a bound on the whole
    # fetch ends it (before: the request was held until the server gave up).
    import http.client
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    stop = threading.Event()

    def trickle():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while not stop.wait(0.05):  # one byte every 50 ms, for up to 20 s
            try:
                conn.sendall(b"a")
            except OSError:
                break
        conn.close()

    server = threading.Thread(target=trickle, daemon=True)
    server.start()
    threading.Timer(20, stop.set).start()

    class Plain(http.client.HTTPConnection):  # the pinned connection, without TLS
        def __init__(self, host, port, address, context, timeout):
            super().__init__(address, listener.getsockname()[1], timeout=timeout)

    monkeypatch.setattr(outbound, "resolve_public", lambda host, port: "127.0.0.1")
    monkeypatch.setattr(outbound, "PinnedHTTPSConnection", Plain)
    monkeypatch.setattr(cimd, "FETCH_SECONDS", 0.5, raising=False)
    started = time.monotonic()
    try:
        with pytest.raises(cimd.MetadataError, match="too long"):
            cimd.fetch(OUTBOUND, "https://app.example/client.json")
        assert time.monotonic() - started < 3
    finally:
        stop.set()
        listener.close()
