"""Issue 24: one outbound address check (domain/addresses.py), used by every fetch.

Finding: the client-metadata check accepted NAT64 (`64:ff9b::/96`), 6to4
(`2002::/16`) and IPv4-compatible (`::7f00:1`) addresses."""
from __future__ import annotations

import socket

import pytest

from chalicelib.domain.addresses import is_public, refusal

TABLE = [
    # (address, public?)
    ("93.184.216.34", True),
    ("2606:2800:220:1:248:1893:25c8:1946", True),
    ("1.1.1.1", True),
    ("127.0.0.1", False), ("10.0.0.1", False), ("172.16.0.1", False), ("192.168.1.1", False),
    ("169.254.169.254", False),        # cloud metadata
    ("100.64.0.1", False),             # carrier-grade NAT
    ("0.0.0.0", False), ("255.255.255.255", False), ("224.0.0.1", False), ("198.18.0.1", False),
    ("192.0.2.1", False),              # documentation
    ("::1", False), ("::", False), ("fe80::1", False), ("fe80::1%eth0", False), ("fc00::1", False),
    ("ff02::1", False), ("ff0e::1", False),
    ("::ffff:127.0.0.1", False), ("::ffff:93.184.216.34", False),   # IPv4-mapped
    ("::7f00:1", False), ("::5db8:d822", False),                    # IPv4-compatible
    ("64:ff9b::7f00:1", False), ("64:ff9b::5db8:d822", False),      # NAT64
    ("64:ff9b:1::1", False),
    ("2002:7f00:1::1", False), ("2002:5db8:d822::1", False),        # 6to4
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),                # Teredo
    ("2001:db8::1", False),                                          # documentation
    ("not an address", False), ("", False),
]


@pytest.mark.parametrize("address, public", TABLE)
def test_the_table(address, public):
    assert is_public(address) is public, refusal(address)


def test_client_metadata_fetches_use_the_one_check(monkeypatch):
    from chalicelib.adapters.outbound import PinnedHttp
    from chalicelib.services import cimd

    for address in ("64:ff9b::7f00:1", "2002:7f00:1::1", "::7f00:1"):
        monkeypatch.setattr(socket, "getaddrinfo", lambda *a, _x=address, **k: [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (_x, 443, 0, 0))])
        with pytest.raises(cimd.MetadataError, match="non-public"):
            cimd.fetch(PinnedHttp(), "https://client.example/oauth.json")
