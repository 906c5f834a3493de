"""The one outbound HTTP(S) client for addresses a stranger chose (ports/outbound.py):
client metadata documents (services/cimd.py) and webhook targets
(adapters/webhook_sender.py) both go through it, so the SSRF fence is written once.

- The host is resolved once; every address must pass domain/addresses.py (unless the
  target is exempt), and the connection goes to the first one (no second lookup a
  DNS rebinding could change), with TLS verified against the host name.
- No redirect is followed (the status comes back as it is).
- Every network wait is bounded, and a watchdog ends the whole exchange (connect,
  status line, headers, body) at `total_seconds`: a server that trickles its headers
  or body a byte at a time cannot hold a request open.
- At most `max_bytes` + 1 bytes of the body are read.
"""
from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from typing import Mapping, Optional

from chalicelib.domain import addresses
from chalicelib.ports.outbound import OutboundAnswer, OutboundFailed, OutboundRefused, Target, UnresolvedHost

# How long a lookup may take before the host counts as unresolved (the system resolver has
# no timeout of its own: a dead DNS server would hold the caller for tens of seconds).
LOOKUP_SECONDS = 5.0


def _lookup(host: str, port: int, within: float) -> list:
    """getaddrinfo, given up on (its thread left to finish alone) after `within` seconds."""
    result: list = []
    failed: list = []

    def run() -> None:
        try:
            result.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            failed.append(exc)

    worker = threading.Thread(target=run, name="docpub-lookup", daemon=True)
    worker.start()
    worker.join(within)
    if worker.is_alive():
        raise UnresolvedHost(f"the host {host} did not resolve within {within:g} s")
    if failed:
        raise UnresolvedHost(f"the host {host} could not be resolved")
    return result


def resolve_public(host: str, port: int) -> str:
    """Judge the host itself (numeric forms, loopback names: domain/addresses.host_refusal),
    then resolve once; every address must be public; the first is the one to use."""
    why = addresses.host_refusal(host)
    if why is not None:
        raise OutboundRefused(f"the host {host} is a non-public address ({why})")
    infos = _lookup(host, port, LOOKUP_SECONDS)
    found = [str(info[4][0]) for info in infos]
    if not found:
        raise UnresolvedHost(f"the host {host} has no address")
    for address in found:
        why = addresses.refusal(address)
        if why is not None:
            raise OutboundRefused(f"the host {host} resolves to a non-public address ({why})")
    return found[0]


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to an address fixed in advance, TLS verified against the host name."""

    def __init__(self, host: str, port: int, address: str, context: ssl.SSLContext, timeout: float):
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def tls_context(ca_file: Optional[str] = None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(ca_file)
    return context


def connection_for(target: Target, address: Optional[str], wait_seconds: float,
                   ca_file: Optional[str]) -> http.client.HTTPConnection:
    if target.scheme == "https":
        if address is not None:
            return PinnedHTTPSConnection(target.host, target.port, address, tls_context(ca_file), wait_seconds)
        return http.client.HTTPSConnection(target.host, target.port, timeout=wait_seconds,
                                           context=tls_context(ca_file))
    if not target.exempt:
        raise OutboundRefused("only https is allowed")
    return http.client.HTTPConnection(target.host, target.port, timeout=wait_seconds)


def read_within(response: http.client.HTTPResponse, max_bytes: int, deadline: float) -> bytes:
    """At most `max_bytes` + 1 bytes, and no later than `deadline`."""
    body = b""
    while len(body) <= max_bytes:
        if time.monotonic() > deadline:
            raise OutboundFailed("the answer took too long", timed_out=True)
        chunk = response.read1(min(16384, max_bytes + 1 - len(body))) if hasattr(response, "read1") \
            else response.read(max_bytes + 1 - len(body))
        if not chunk:
            break
        body += chunk
    return body


def _abort(connection: http.client.HTTPConnection, aborted: threading.Event) -> None:
    """The whole exchange ran out of time: end the connection under the reading thread."""
    aborted.set()
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class PinnedHttp:
    """ports.outbound.OutboundHttp over the standard library's http.client."""

    def vet(self, target: Target) -> Optional[str]:
        return None if target.exempt else resolve_public(target.host, target.port)

    def request(self, method: str, target: Target, *, headers: Mapping[str, str], body: Optional[bytes] = None,
                wait_seconds: float, total_seconds: float, max_bytes: int,
                ca_file: Optional[str] = None) -> OutboundAnswer:
        address = self.vet(target)
        connection = connection_for(target, address, wait_seconds, ca_file)
        aborted = threading.Event()
        watchdog = threading.Timer(total_seconds, _abort, (connection, aborted))
        watchdog.daemon = True
        started = time.monotonic()
        watchdog.start()
        try:
            host_header = target.host if target.port in (80, 443) else f"{target.host}:{target.port}"
            connection.request(method, target.path, body=body, headers={"Host": host_header, **headers})
            response = connection.getresponse()
            answer_headers = {name.lower(): value for name, value in (response.getheaders() or [])} \
                if hasattr(response, "getheaders") else {}
            content = read_within(response, max_bytes, started + total_seconds)
            status = response.status
        except OutboundFailed:
            raise
        except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
            if aborted.is_set() or isinstance(exc, (TimeoutError, socket.timeout)):
                raise OutboundFailed("no answer in time", timed_out=True) from None
            raise OutboundFailed(f"no answer ({type(exc).__name__})") from None
        finally:
            watchdog.cancel()
            connection.close()
        if aborted.is_set():  # cut short: what was read is not the answer
            raise OutboundFailed("no answer in time", timed_out=True)
        return OutboundAnswer(status, answer_headers, content)
