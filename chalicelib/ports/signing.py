"""Signing versions (contract 7g): the signer (where a private key signs) and the record
of every key that ever signed (so a rotated key's signatures still verify).

`Signer` has two adapters: a key file in the data folder (adapters/signing.py, made
0600 on first use) and an AWS KMS asymmetric key (adapters/aws/kms.py: the private key
never leaves KMS). `SigningKeyRepository` is kept by both stores.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol

if TYPE_CHECKING:
    from chalicelib.ports.records import SigningKey



class Signer(Protocol):
    @property
    def holder(self) -> str:
        """Where the private key lives: a key file's name, or a KMS key's ARN."""

    def public_jwk(self) -> Mapping[str, str]:
        """The public JWK with `kid` and `alg` (domain/provenance.public_jwk)."""

    def sign(self, message: bytes) -> bytes:
        """The signature of `message`: ES256 as raw r||s (64 bytes), EdDSA as is."""


class SignerFactory(Protocol):
    def current(self) -> Signer:
        """The signer new versions are signed with."""

    def rotate(self) -> Signer:
        """Make a new key the current one (a new key file; KMS: the next configured key),
        and answer its signer. The previous key is retired by the service."""


class SigningKeyRepository(Protocol):
    def list_keys(self) -> list[SigningKey]:
        """Every key that signed, oldest first."""

    def add_key(self, key: SigningKey, retire_others_ms: int) -> bool:
        """Record `key` (with no `not_after_ms`) and, in the same atomic step, give every other
        key still without one `not_after_ms = retire_others_ms`; False (nothing written)
        when `key.kid` is already recorded."""


__all__ = ["Signer", "SignerFactory", "SigningKeyRepository"]
