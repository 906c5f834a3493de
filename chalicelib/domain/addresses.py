"""The one check for every outbound fetch (client metadata documents now,
webhooks next): may Docpub connect to this address on a stranger's behalf?

Resolve the host yourself, call `refusal()` on every address it resolves to,
and connect to a vetted address (never a second lookup: DNS rebinding).
Refused: everything `ipaddress` does not call global, multicast, and the IPv6
forms that embed or route to an IPv4 address which the global test would not
see: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
(`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4 (`2002::/16`) and Teredo (`2001::/32`).

`host_refusal()` judges a URL's host before any lookup: the numeric IPv4 forms a
resolver accepts (`2130706433`, `0x7f000001`, `127.1`, `0177.0.0.1`), IPv6
literals, and `localhost` names (RFC 6761: always loopback) are refused there,
whatever the resolver of the day would make of them.
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


_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def numeric_ipv4(host: str) -> Optional[str]:
    """The dotted quad a resolver reads in a numeric host, or None when it is not one:
    1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last part fills the
    bytes left (`127.1` is 127.0.0.1, `2130706433` is 127.0.0.1), as inet_aton reads it."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        text = part.lower()
        try:
            if text.startswith("0x"):
                value = int(text[2:] or "0", 16)  # "0x" alone is 0 to inet_aton
            elif len(text) > 1 and text.startswith("0"):
                value = int(text[1:], 8)
            else:
                value = int(text, 10)
        except ValueError:
            return None
        if not text.isascii() or value < 0:
            return None
        values.append(value)
    *leading, last = values
    if any(v > 255 for v in leading) or last >= 256 ** (4 - len(leading)):
        return None
    number = 0
    for value in leading:
        number = number * 256 + value
    number = number * 256 ** (4 - len(leading)) + last
    return str(ipaddress.IPv4Address(number))


def host_refusal(host: str) -> Optional[str]:
    """Why a URL's host (as urlsplit gives it: no brackets) is not public by itself, before
    any lookup: a loopback name, or an address literal in any form that `refusal()` refuses.
    None for a public literal or a name (then resolve it and judge every address)."""
    name = host.strip().rstrip(".").lower()
    if not name:
        return "an empty host"
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return "a loopback name"
    try:
        literal = str(ipaddress.ip_address(name.strip("[]").split("%", 1)[0]))
    except ValueError:
        literal = numeric_ipv4(name) or ""
    if literal:
        why = refusal(literal)
        return f"{literal}: {why}" if why is not None and literal != name else why
    return None


def is_public(address: str) -> bool:
    return refusal(address) is None


def limit_key(address: str) -> str:
    """What per-address limits count by: an IPv4 address as is, an IPv6 one by its /64 (the
    block one subscriber usually holds; an IPv4-mapped one as IPv4), anything else as given.
    The function's client_ip and the log counter (services/view_logs.py) both key by it."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if parsed.version == 6:
        if parsed.ipv4_mapped:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)
