"""The one check for every outbound fetch (client metadata documents now,
webhooks next): may Docpub connect to this address on a stranger's behalf?

Resolve the host yourself, call `refusal()` on every address it resolves to,
and connect to a vetted address (never a second lookup: DNS rebinding).
Refused: everything `ipaddress` does not call global, multicast, and the IPv6
forms that embed or route to an IPv4 address which the global test would not
see: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
(`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4 (`2002::/16`) and Teredo (`2001::/32`).
"""
from __future__ import annotations

import ipaddress
from typing import Optional

_EMBEDDING_NETWORKS = (
    (ipaddress.ip_network("64:ff9b::/96"), "a NAT64 address"),
    (ipaddress.ip_network("64:ff9b:1::/48"), "a local-use NAT64 address"),
    (ipaddress.ip_network("2002::/16"), "a 6to4 address"),
    (ipaddress.ip_network("2001::/32"), "a Teredo address"),
)
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def refusal(address: str) -> Optional[str]:
    """Why `address` must not be fetched (a short phrase), or None when it is public."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0].strip("[]"))
    except ValueError:
        return "not an IP address"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return "an IPv4-mapped address"
        if ip in _IPV4_COMPATIBLE:
            return "an IPv4-compatible address" if int(ip) > 1 else "an unspecified or loopback address"
        for network, what in _EMBEDDING_NETWORKS:
            if ip in network:
                return what
    if ip.is_multicast:
        return "a multicast address"
    if not ip.is_global:
        return "not a public address"
    return None


def is_public(address: str) -> bool:
    return refusal(address) is None
