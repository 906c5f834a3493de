"""Sends one webhook delivery over HTTP(S): the only code that calls a webhook target.

The target is a stranger's address, so the request goes through the one fenced
outbound client (adapters/outbound.py, shared with the client metadata fetch):
`https` only (checked here); the host is resolved once, every address must be
public (domain/addresses.py), and the connection goes to that vetted address (no
second lookup a DNS rebinding could change) with TLS verified against the host
name; redirects are not followed (a 3xx is a failed attempt); a refused target
is `refused` (the service fails the delivery at once: retrying cannot help); the whole exchange
within the timeout, the body is not read beyond a few KiB. `DOCPUB_WEBHOOKS_ALLOW_PRIVATE=true`
(local development, tests) allows `http` and private or loopback targets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

from chalicelib import config
from chalicelib.adapters.outbound import PinnedHttp
from chalicelib.ports.outbound import OutboundFailed, OutboundRefused, Target, UnresolvedHost

READ_BYTES = 4096
_OUTBOUND = PinnedHttp()  # the one fenced outbound client (adapters/outbound.py)


@dataclass(frozen=True)
class SendResult:
    status: Optional[int]  # None: no HTTP answer came
    error: Optional[str] = None  # why it failed (never a secret)
    refused: bool = False  # not sent: the target itself is refused (retrying cannot help)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class TargetRefused(ValueError):
    """The URL is not an acceptable webhook target."""


def check_target(url: str) -> tuple[str, str, int, str, Optional[str]]:
    """(scheme, host, port, path, vetted address or None) of an acceptable target;
    TargetRefused with the reason otherwise. The host is judged as a delivery judges it
    (adapters/outbound.resolve_public): a literal or loopback name that is not public, or a
    name resolving to any non-public address, is refused. A name that does not resolve
    (yet) passes with no address: every delivery resolves it again."""
    target = _target(url)
    if target.exempt:
        return target.scheme, target.host, target.port, target.path, None
    try:
        address = _OUTBOUND.vet(target)
    except UnresolvedHost:
        return target.scheme, target.host, target.port, target.path, None
    except OutboundRefused as exc:
        raise TargetRefused(f"must resolve to public addresses only ({exc})") from None
    return target.scheme, target.host, target.port, target.path, address


def _target(url: str) -> Target:
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
    return Target(parts.scheme, parts.hostname.lower(), port, path, exempt=allow_private)


def send(url: str, body: bytes, headers: dict[str, str], timeout: float) -> SendResult:
    """POST `body`; the outcome, never an exception."""
    try:
        target = _target(url)
        answer = _OUTBOUND.request("POST", target, body=body, headers={
            **headers, "Content-Type": "application/json", "User-Agent": "Docpub-Webhooks/1"},
            wait_seconds=timeout, total_seconds=timeout, max_bytes=READ_BYTES,
            ca_file=config.webhook_ca_file() or None)
    except TargetRefused as exc:
        return SendResult(None, f"target refused: {exc}", refused=True)
    except UnresolvedHost as exc:  # perhaps for now only: retried like a receiver that is down
        return SendResult(None, str(exc))
    except OutboundRefused as exc:
        return SendResult(None, f"target refused: must resolve to public addresses only ({exc})", refused=True)
    except OutboundFailed as exc:
        if exc.timed_out:
            return SendResult(None, f"no answer within {timeout:g} s")
        return SendResult(None, str(exc))
    status = answer.status
    if 300 <= status < 400:
        return SendResult(status, "redirects are not followed")
    return SendResult(status, None if 200 <= status < 300 else f"answered HTTP {status}")
