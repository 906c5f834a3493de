"""Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document).

A client may use an https URL as its `client_id`; Docpub fetches the JSON
document at that URL to learn the client's name and redirect URIs. The fetch is
a request to an address chosen by a stranger, so it is fenced (SSRF):
- https only, default port or an explicit one, no credentials in the URL;
- the host name is resolved once, every address must be public
  (domain/addresses.py: not loopback, private, link-local, multicast, reserved,
  nor an IPv6 form embedding IPv4: mapped, compatible, NAT64, 6to4, Teredo), and the connection goes to that
  vetted address (no second lookup a DNS rebinding could change), with TLS
  verified against the host name;
- no redirects, 5 s per network wait and 5 s for the whole body, at most 64 KiB,
  and FETCH_SECONDS for everything (a server trickling its status line or headers
  a byte at a time cannot hold the request open either);
- the answer is cached (CACHE_SECONDS) by the OAuth service.
`DOCPUB_CIMD_ALLOWED_HOSTS` (comma-separated `host:port`) exempts named hosts
from the public-address rule, so tests can serve a document locally;
`DOCPUB_CIMD_CA_FILE` adds a CA to trust (tests' self-signed certificate).
"""
from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from typing import Optional
from urllib.parse import urlsplit

from chalicelib.ports.records import Record
from chalicelib import config
from chalicelib.domain import addresses as addresses_rule
from chalicelib.domain.clients import MAX_CLIENT_NAME, MAX_REDIRECT_URIS, valid_redirect_uri

CACHE_SECONDS = 3600  # when the answer says nothing about caching
# A document's own caching headers decide how long it is kept, within these bounds
# (no-store still keeps it a minute: a stranger cannot make every page fetch anew).
MIN_CACHE_SECONDS = 60
MAX_CACHE_SECONDS = 24 * 3600
MAX_BYTES = 64 * 1024
TIMEOUT_SECONDS = 5.0
FETCH_SECONDS = 10.0  # connect, status line, headers and body together


class MetadataError(ValueError):
    pass


def _allowed_hosts() -> set[str]:
    return {h.strip().lower() for h in config.cimd_allowed_hosts().split(",") if h.strip()}


def check_url(url: str) -> tuple[str, int, str]:
    """(host, port, path+query) of an acceptable client ID URL."""
    try:
        parts = urlsplit(url)
        port = parts.port or 443
    except ValueError:
        raise MetadataError("the client_id is not a valid URL") from None
    if parts.scheme != "https" or not parts.hostname:
        raise MetadataError("the client_id must be an https URL")
    if parts.username or parts.password or parts.fragment:
        raise MetadataError("the client_id URL must not carry credentials or a fragment")
    if not parts.path or parts.path == "/":
        raise MetadataError("the client_id URL must have a path")
    return parts.hostname.lower(), port, parts.path + (f"?{parts.query}" if parts.query else "")


def _vetted_address(host: str, port: int) -> str:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise MetadataError(f"the host {host} could not be resolved") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise MetadataError(f"the host {host} has no address")
    if f"{host}:{port}" not in _allowed_hosts():
        for address in addresses:
            if addresses_rule.refusal(address) is not None:  # the one outbound address check
                raise MetadataError(f"the host {host} resolves to a non-public address")
    return addresses[0]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to an address fixed in advance, TLS verified against the host name."""

    def __init__(self, host: str, port: int, address: str, context: ssl.SSLContext):
        super().__init__(host, port, timeout=TIMEOUT_SECONDS, context=context)
        self._address = address
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca_file = config.cimd_ca_file()
    if ca_file:
        context.load_verify_locations(ca_file)
    return context


def fetch(url: str) -> Record:
    return fetch_with_lifetime(url)[0]


def cache_lifetime(cache_control: Optional[str], expires: Optional[str], now: Optional[float] = None) -> int:
    """Seconds to keep a document, from its Cache-Control (no-store, no-cache, max-age)
    or Expires header, within [MIN_CACHE_SECONDS, MAX_CACHE_SECONDS]."""
    import email.utils

    seconds: Optional[float] = None
    directives = {}
    for part in (cache_control or "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            directives[name.lower()] = value.strip().strip('"')
    if "no-store" in directives or "no-cache" in directives:
        seconds = 0
    elif "max-age" in directives:
        try:
            seconds = int(directives["max-age"])
        except ValueError:
            seconds = None
    elif expires:
        try:
            when = email.utils.parsedate_to_datetime(expires).timestamp()
            seconds = when - (time.time() if now is None else now)
        except (TypeError, ValueError, OverflowError):
            seconds = 0  # an invalid Expires means "already expired" (RFC 9111)
    if seconds is None:
        seconds = CACHE_SECONDS
    return int(min(MAX_CACHE_SECONDS, max(MIN_CACHE_SECONDS, seconds)))


def fetch_with_lifetime(url: str) -> tuple[dict, int]:
    """(document, seconds to cache it)."""
    host, port, path = check_url(url)
    address = _vetted_address(host, port)
    connection = _PinnedHTTPSConnection(host, port, address, _tls_context())
    aborted = threading.Event()
    watchdog = threading.Timer(FETCH_SECONDS, _abort, (connection, aborted))
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request("GET", path, headers={"Accept": "application/json", "User-Agent": "Docpub"})
        response = connection.getresponse()
        if response.status != 200:
            raise MetadataError(f"fetching it answered HTTP {response.status}")
        header = getattr(response, "getheader", lambda name: None)
        lifetime = cache_lifetime(header("Cache-Control"), header("Expires"))
        body = _read_within(response, time.monotonic() + TIMEOUT_SECONDS)
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        if aborted.is_set():
            raise MetadataError("fetching it took too long") from None
        if isinstance(exc, MetadataError):
            raise
        raise MetadataError(f"it could not be fetched ({type(exc).__name__})") from None
    finally:
        watchdog.cancel()
        connection.close()
    if aborted.is_set():  # cut short: what was read is not the document
        raise MetadataError("fetching it took too long")
    if len(body) > MAX_BYTES:
        raise MetadataError(f"the document is larger than {MAX_BYTES} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        raise MetadataError("the document is not JSON") from None
    if not isinstance(document, dict):
        raise MetadataError("the document is not a JSON object")
    return document, lifetime


def _abort(connection: http.client.HTTPConnection, aborted: threading.Event) -> None:
    """The whole fetch ran out of time: end the connection under the reading thread."""
    aborted.set()
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _read_within(response: http.client.HTTPResponse, deadline: float) -> bytes:
    """At most MAX_BYTES + 1 bytes, and no later than `deadline` (a server that
    trickles bytes cannot hold the request open beyond the time limit)."""
    body = b""
    while len(body) <= MAX_BYTES:
        if time.monotonic() > deadline:
            raise MetadataError("fetching it took too long")
        chunk = response.read1(min(16384, MAX_BYTES + 1 - len(body))) if hasattr(response, "read1") \
            else response.read(MAX_BYTES + 1 - len(body))
        if not chunk:
            break
        body += chunk
    return body


def client_from_document(client_id: str, document: Record) -> Record:
    """The client record a metadata document describes (public client)."""
    if document.get("client_id") != client_id:
        raise MetadataError("its client_id does not equal the URL it was fetched from")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS or not all(
            valid_redirect_uri(u) for u in uris):
        raise MetadataError("redirect_uris must list 1 to 10 https (or loopback http) URIs")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise MetadataError("token_endpoint_auth_method must be none (public client)")
    name: Optional[str] = document.get("client_name")
    name = name.strip()[:MAX_CLIENT_NAME] if isinstance(name, str) and name.strip() else None
    return {"client_id": client_id, "client_name": name or urlsplit(client_id).hostname,
            "redirect_uris": list(uris), "scopes": None,
            "grant_types": ["authorization_code", "refresh_token"]}
