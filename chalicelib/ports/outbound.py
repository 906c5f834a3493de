"""Outbound HTTP to an address a stranger chose (client metadata documents, webhook
targets): what the services need, whatever opens the connection.

The adapter (chalicelib/adapters/outbound.py) resolves the host once, refuses any
non-public address (domain/addresses.py, the one outbound address check) unless the
caller exempts it, connects to that vetted address (no second lookup a DNS rebinding
could change) with TLS verified against the host name, follows no redirect, and
bounds every wait, the whole exchange and the bytes it reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Protocol


class OutboundRefused(ValueError):
    """The target is not acceptable (it does not resolve, or to a non-public address);
    the message says why, in words a user may read."""


class UnresolvedHost(OutboundRefused):
    """The host has no address now (no such name, or the resolver did not answer in time):
    refused for this request, though a later lookup may find one (a webhook created before
    its receiver's DNS record exists is accepted and checked again at every delivery)."""


class OutboundFailed(Exception):
    """No complete answer: `timed_out` when a time bound ran out, else a network or
    protocol failure (the message names its kind, never anything secret)."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class Target:
    """Where a request goes: `exempt` skips the public-address rule (a host:port the
    operator allowed, or local development)."""
    scheme: str  # "https", or "http" for an exempt target only
    host: str
    port: int
    path: str  # path and query
    exempt: bool = False


@dataclass(frozen=True)
class OutboundAnswer:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""  # at most `max_bytes` + 1 bytes: one more than allowed means "too large"


class OutboundHttp(Protocol):
    def vet(self, target: Target) -> Optional[str]:
        """The address a request to `target` would use (None for an exempt target, which
        connects by name); OutboundRefused when the host does not resolve or any of its
        addresses is not public."""

    def request(self, method: str, target: Target, *, headers: Mapping[str, str], body: Optional[bytes] = None,
                wait_seconds: float, total_seconds: float, max_bytes: int,
                ca_file: Optional[str] = None) -> OutboundAnswer:
        """One request, no redirect followed: every network wait within `wait_seconds`,
        connect to the end of the body within `total_seconds` (OutboundFailed with
        `timed_out` otherwise), at most `max_bytes` + 1 bytes of body read.
        OutboundRefused as `vet`."""
