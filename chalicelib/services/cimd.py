"""Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document).

A client may use an https URL as its `client_id`; Docpub fetches the JSON
document at that URL to learn the client's name and redirect URIs. The fetch is
a request to an address chosen by a stranger, so it is fenced (SSRF):
- https only, default port or an explicit one, no credentials in the URL (here);
- the rest is the one outbound client's (ports/outbound.py, adapters/outbound.py):
  the host name is resolved once, every address must be public
  (domain/addresses.py: not loopback, private, link-local, multicast, reserved,
  nor an IPv6 form embedding IPv4: mapped, compatible, NAT64, 6to4, Teredo), and the
  connection goes to that vetted address (no second lookup a DNS rebinding could
  change), with TLS verified against the host name;
- no redirects, 5 s per network wait, at most 64 KiB, and FETCH_SECONDS for
  everything (a server trickling its status line, headers or body a byte at a
  time cannot hold the request open);
- the answer is cached (CACHE_SECONDS) by the OAuth service.
`DOCPUB_CIMD_ALLOWED_HOSTS` (comma-separated `host:port`) exempts named hosts
from the public-address rule, so tests can serve a document locally;
`DOCPUB_CIMD_CA_FILE` adds a CA to trust (tests' self-signed certificate).
"""
from __future__ import annotations

import json
import time
from typing import Any, Optional
from urllib.parse import urlsplit

from chalicelib import config
from chalicelib.ports.outbound import OutboundFailed, OutboundHttp, OutboundRefused, Target
from chalicelib.ports.records import OAuthClient
from chalicelib.domain.clients import MAX_CLIENT_NAME, MAX_REDIRECT_URIS, valid_redirect_uri

CACHE_SECONDS = 3600  # when the answer says nothing about caching
# A document's own caching headers decide how long it is kept, within these bounds
# (no-store still keeps it a minute: a stranger cannot make every page fetch anew).
MIN_CACHE_SECONDS = 60
MAX_CACHE_SECONDS = 24 * 3600
MAX_BYTES = 64 * 1024
TIMEOUT_SECONDS = 5.0
FETCH_SECONDS = 10.0  # connect, status line, headers and body together

Document = dict[str, Any]  # a client ID metadata document: a JSON object


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


def target_of(url: str) -> Target:
    """Where the document is fetched from; exempt from the public-address rule only for
    a host:port named in DOCPUB_CIMD_ALLOWED_HOSTS."""
    host, port, path = check_url(url)
    return Target("https", host, port, path, exempt=f"{host}:{port}" in _allowed_hosts())


def fetch(outbound: OutboundHttp, url: str) -> Document:
    return fetch_with_lifetime(outbound, url)[0]


def cache_lifetime(cache_control: Optional[str], expires: Optional[str], now: Optional[float] = None) -> int:
    """Seconds to keep a document, from its Cache-Control (no-store, no-cache, max-age)
    or Expires header, within [MIN_CACHE_SECONDS, MAX_CACHE_SECONDS]."""
    import email.utils

    seconds: Optional[float] = None
    directives: dict[str, str] = {}
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


def fetch_with_lifetime(outbound: OutboundHttp, url: str) -> tuple[Document, int]:
    """(document, seconds to cache it), fetched through the one outbound client."""
    target = target_of(url)
    try:
        answer = outbound.request("GET", target, headers={"Accept": "application/json", "User-Agent": "Docpub"},
                                  wait_seconds=TIMEOUT_SECONDS, total_seconds=FETCH_SECONDS, max_bytes=MAX_BYTES,
                                  ca_file=config.cimd_ca_file() or None)
    except OutboundRefused as exc:
        raise MetadataError(str(exc)) from None
    except OutboundFailed as exc:
        if exc.timed_out:
            raise MetadataError("fetching it took too long") from None
        raise MetadataError(f"it could not be fetched: {exc}") from None
    if answer.status != 200:
        raise MetadataError(f"fetching it answered HTTP {answer.status}")
    if len(answer.body) > MAX_BYTES:
        raise MetadataError(f"the document is larger than {MAX_BYTES} bytes")
    lifetime = cache_lifetime(answer.headers.get("cache-control"), answer.headers.get("expires"))
    try:
        document = json.loads(answer.body)
    except ValueError:
        raise MetadataError("the document is not JSON") from None
    if not isinstance(document, dict):
        raise MetadataError("the document is not a JSON object")
    return document, lifetime


def client_from_document(client_id: str, document: Document) -> OAuthClient:
    """The client a metadata document describes (a public client; the caller sets how
    long the copy is kept: `created_ms`, `expires_ms`)."""
    if document.get("client_id") != client_id:
        raise MetadataError("its client_id does not equal the URL it was fetched from")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS or not all(
            valid_redirect_uri(u) for u in uris):
        raise MetadataError("redirect_uris must list 1 to 10 https (or loopback http) URIs")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise MetadataError("token_endpoint_auth_method must be none (public client)")
    given = document.get("client_name")
    name = given.strip()[:MAX_CLIENT_NAME] if isinstance(given, str) and given.strip() else None
    return OAuthClient(client_id=client_id, kind="metadata", client_name=name or urlsplit(client_id).hostname,
                       redirect_uris=tuple(uris), scopes=None)
