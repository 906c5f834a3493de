"""Rules about OAuth clients' self-declared metadata (pure, no I/O): shared by
dynamic registration (services/oauth.py) and client ID metadata documents
(services/cimd.py)."""
from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

# A DNS name (the consent page names the host and allows it as a form target in
# its CSP, so nothing else may pass for one: no `*`, `;` or quotes).
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$")

MAX_REDIRECT_URIS = 10
MAX_CLIENT_NAME = 100
MAX_PARAM = 2048  # any URL or parameter of an authorization request


def valid_redirect_uri(uri: str) -> bool:
    """https anywhere, or http on a loopback address (desktop clients); no fragment,
    no userinfo (`https://trusted@evil.example/` reads as "trusted" to a person)."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_PARAM:
        return False
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return False
    if parts.fragment or not parts.hostname or any(c.isspace() for c in uri):
        return False
    if "@" in parts.netloc or not _valid_host(parts.hostname):
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme == "http":
        host = parts.hostname
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return False


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOST_NAME.match(host))
