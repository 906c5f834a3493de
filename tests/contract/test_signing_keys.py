"""Signing keys (ports/signing.py) on both stores: a key is recorded once; recording a new
one retires every other current key at that moment, in the same atomic step; retired keys
stay listed (what they signed still verifies)."""
from __future__ import annotations

import pytest

from chalicelib.ports.records import SigningKey

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def _key(kid: str, created_ms: int) -> SigningKey:
    return SigningKey(kid=kid, alg="ES256", public_jwk={"kty": "EC", "crv": "P-256", "x": kid, "y": "y"},
                      holder=f"file:{kid}", created_ms=created_ms)


@BOTH
def test_a_new_key_retires_the_current_one_and_both_stay_listed(ctx, storage):
    keys = ctx.signing_keys
    assert keys.list_keys() == []
    assert keys.add_key(_key("k1", 1000), retire_others_ms=1000)
    assert not keys.add_key(_key("k1", 1500), retire_others_ms=1500)  # recorded already: nothing changes
    assert keys.list_keys() == [_key("k1", 1000)]
    assert keys.add_key(_key("k2", 2000), retire_others_ms=2000)
    assert keys.add_key(_key("k3", 3000), retire_others_ms=3000)
    listed = keys.list_keys()
    assert [(k.kid, k.not_after_ms) for k in listed] == [("k1", 2000), ("k2", 3000), ("k3", None)]
    assert listed[2] == _key("k3", 3000) and dict(listed[0].public_jwk) == {"kty": "EC", "crv": "P-256",
                                                                           "x": "k1", "y": "y"}
