"""The deployed signer (ports/signing.py): an AWS KMS asymmetric key (ECC_NIST_P256,
SIGN_VERIFY). The private key never leaves KMS: the function may only `kms:Sign` (and
`kms:GetPublicKey`) with that one key (infra/resources.yaml). KMS answers an ECDSA
signature in DER; JWS's ES256 wants the raw r||s, converted here."""
from __future__ import annotations

import functools
from typing import Mapping

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.domain import provenance


@storage_errors
class KmsSigner:
    def __init__(self, key_arn: str):
        self.key_arn = key_arn

    @property
    def holder(self) -> str:
        return self.key_arn

    @functools.cached_property
    def _jwk(self) -> dict[str, str]:
        from cryptography.hazmat.primitives.serialization import load_der_public_key

        der = aws.kms().get_public_key(KeyId=self.key_arn)["PublicKey"]
        return provenance.public_jwk(load_der_public_key(der))

    def public_jwk(self) -> Mapping[str, str]:
        return self._jwk

    def sign(self, message: bytes) -> bytes:
        answer = aws.kms().sign(KeyId=self.key_arn, Message=message, MessageType="RAW",
                                SigningAlgorithm="ECDSA_SHA_256")
        return provenance.der_to_raw(answer["Signature"])


class KmsSigners:
    """The key the stack configures (DOCPUB_SIGNING_KMS_KEY). Rotating means a new key: the
    stack's parameter `SigningKeyArn` names it and a deploy hands it to the function
    (docs/provenance.md); its first signature retires the previous one."""

    def current(self) -> KmsSigner:
        arn = config.signing_kms_key()
        if not arn:
            raise RuntimeError("DOCPUB_SIGNING_KMS_KEY is not set: the stack names the KMS key that signs versions")
        return _signer(arn)

    def rotate(self) -> KmsSigner:
        raise RuntimeError("a KMS signing key is rotated by deploying with a new one: create it "
                           "(aws kms create-key --key-spec ECC_NIST_P256 --key-usage SIGN_VERIFY) and deploy "
                           "with make deploy SIGNING_KEY_ARN=<its ARN> (docs/provenance.md)")


@functools.lru_cache(maxsize=4)
def _signer(arn: str) -> KmsSigner:
    return KmsSigner(arn)
