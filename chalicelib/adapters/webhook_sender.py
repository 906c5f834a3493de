"""Sends one webhook delivery over HTTP(S): the only code that calls a webhook target.

The target is a stranger's address, so the request is fenced the way the client
metadata fetch is (domain/addresses.py: the one outbound address check):
`https` only; the host is resolved once, every address must be public, and the
connection goes to that vetted address (no second lookup a DNS rebinding could
change) with TLS verified against the host name; redirects are not followed
(a 3xx is a failed attempt); connect, send and the status line within the
timeout, the body is not read beyond a few KiB. `DOCPUB_WEBHOOKS_ALLOW_PRIVATE=true`
(local development, tests) allows `http` and private or loopback targets.
"""
from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

from chalicelib import config
from chalicelib.domain import addresses

READ_BYTES = 4096


@dataclass(frozen=True)
class SendResult:
    status: Optional[int]  # None: no HTTP answer came
    error: Optional[str] = None  # why it failed (never a secret)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class TargetRefused(ValueError):
    """The URL is not an acceptable webhook target."""


def check_target(url: str, resolve: bool = True) -> tuple[str, str, int, str, Optional[str]]:
    """(scheme, host, port, path, vetted address or None) of an acceptable target;
    TargetRefused with the reason otherwise."""
    allow_private = config.webhooks_allow_private()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TargetRefused("must be a valid URL") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise TargetRefused("must be an https URL" if not allow_private else "must be an http(s) URL")
    if parts.username or parts.password:
        raise TargetRefused("must not carry credentials")
    port = port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname.lower()
    if allow_private:
        return parts.scheme, host, port, path, None
    if not resolve:
        # Without a lookup (an API request never waits for DNS): only a literal address is judged now.
        try:
            ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return parts.scheme, host, port, path, None
    return parts.scheme, host, port, path, _vetted(host, port)


def _vetted(host: str, port: int) -> str:
    """Resolve once; every address must pass the one outbound address check
    (domain/addresses.py); the connection goes to the first (no second lookup)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise TargetRefused(f"must resolve (its host {host} could not be resolved)") from None
    found = [str(info[4][0]) for info in infos]
    if not found:
        raise TargetRefused(f"must resolve (its host {host} has no address)")
    for address in found:
        why = addresses.refusal(address)
        if why is not None:
            raise TargetRefused(f"must resolve to public addresses only ({host} is {why})")
    return found[0]


class _Pinned(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, context: ssl.SSLContext, timeout: float):
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def _tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    if config.webhook_ca_file():
        context.load_verify_locations(config.webhook_ca_file())
    return context


def send(url: str, body: bytes, headers: dict, timeout: float) -> SendResult:
    """POST `body`; the outcome, never an exception."""
    try:
        scheme, host, port, path, address = check_target(url)
    except TargetRefused as exc:
        return SendResult(None, f"target refused: {exc}")
    if scheme == "https":
        connection: http.client.HTTPConnection = (
            _Pinned(host, port, address, _tls(), timeout) if address
            else http.client.HTTPSConnection(host, port, timeout=timeout, context=_tls()))
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    aborted = threading.Event()

    def abort():
        aborted.set()
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(timeout, abort)
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request("POST", path, body=body, headers={
            **headers, "Content-Type": "application/json", "User-Agent": "Docpub-Webhooks/1",
            "Host": host if port in (80, 443) else f"{host}:{port}"})
        response = connection.getresponse()
        response.read(READ_BYTES)
        status = response.status
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        if aborted.is_set() or isinstance(exc, (TimeoutError, socket.timeout)):
            return SendResult(None, f"no answer within {timeout:g} s")
        return SendResult(None, f"no answer ({type(exc).__name__})")
    finally:
        watchdog.cancel()
        connection.close()
    if aborted.is_set():
        return SendResult(None, f"no answer within {timeout:g} s")
    if 300 <= status < 400:
        return SendResult(status, "redirects are not followed")
    return SendResult(status, None if 200 <= status < 300 else f"answered HTTP {status}")
