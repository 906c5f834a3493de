"""Signed versions (contract 7g): the statement a version is signed over, its canonical
bytes, the signing keys' JWKs, and the one verification every reader runs (the share
page's "Verified" line, the tests; the `docpub verify` client keeps a copy of its own,
since the client never imports the service's code).

Pure: no I/O. The statement is signed over its RFC 8785 canonical JSON (`rfc8785`);
ES256 signatures are the raw 64-byte r||s form of JWS (RFC 7518 3.4), not DER.

A verification names the part that failed:
- `signature`: malformed, an unknown key or algorithm, a key retired before the version
  was published, or a signature that does not verify over the statement;
- `statement`: not the statement's shape, or changed after signing (its canonical form no
  longer hashes to the `statement_sha256` recorded beside the signature, a diagnostic that
  tells a changed statement from a changed signature: either way the signature fails);
- `content`: the content (or a bundle's files) does not hash to what the statement says.
"""
from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Optional, Sequence

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

ALGORITHMS = ("ES256", "EdDSA")
PUBLISHER_KINDS = ("key", "member", "oauth_client")
STATEMENT_FIELDS = ("document_id", "workspace_id", "version_number", "content_sha256", "files", "published_at",
                    "publisher")
_HEX64 = re.compile(r"[0-9a-f]{64}")
P256_BYTES = 32


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: Any) -> bytes:
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def statement(document_id: str, workspace_id: str, version_number: int, content_sha256: str,
              files: Sequence[Mapping[str, Any]], published_at: str, publisher: Mapping[str, str]) -> dict[str, Any]:
    """The statement of one version: `files` ({path, sha256}) sorted by path."""
    return {"document_id": document_id, "workspace_id": workspace_id, "version_number": version_number,
            "content_sha256": content_sha256,
            "files": sorted(({"path": str(f["path"]), "sha256": str(f["sha256"])} for f in files),
                            key=lambda f: f["path"]),
            "published_at": published_at,
            "publisher": {"kind": publisher["kind"], "id": publisher["id"], "name": publisher["name"]}}


def canonical(value: Any) -> bytes:
    """RFC 8785 (JCS) canonical JSON: what is signed and what is hashed."""
    return rfc8785.dumps(value)


def der_to_raw(der: bytes) -> bytes:
    """An ECDSA P-256 signature as DER (KMS, `cryptography`) to JWS's raw r||s."""
    r, s = decode_dss_signature(der)
    return r.to_bytes(P256_BYTES, "big") + s.to_bytes(P256_BYTES, "big")


def raw_to_der(raw: bytes) -> bytes:
    if len(raw) != 2 * P256_BYTES:
        raise ValueError("an ES256 signature is 64 bytes")
    return encode_dss_signature(int.from_bytes(raw[:P256_BYTES], "big"), int.from_bytes(raw[P256_BYTES:], "big"))


def public_jwk(key: Any) -> dict[str, str]:
    """The public JWK of a P-256 or Ed25519 key (private or public), with its kid
    (the RFC 7638 thumbprint) and alg."""
    if isinstance(key, (ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)):
        key = key.public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        if not isinstance(key.curve, ec.SECP256R1):
            raise ValueError("ES256 needs a P-256 key")
        numbers = key.public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(P256_BYTES, "big")),
               "y": b64url(numbers.y.to_bytes(P256_BYTES, "big"))}
        alg = "ES256"
    elif isinstance(key, ed25519.Ed25519PublicKey):
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64url(key.public_bytes(Encoding.Raw, PublicFormat.Raw))}
        alg = "EdDSA"
    else:
        raise ValueError("only P-256 (ES256) and Ed25519 (EdDSA) keys sign versions")
    return {**jwk, "kid": thumbprint(jwk), "alg": alg, "use": "sig"}


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638: SHA-256 of the required members in canonical order, base64url."""
    members = ("crv", "kty", "x", "y") if jwk.get("kty") == "EC" else ("crv", "kty", "x")
    return b64url(hashlib.sha256(canonical({m: jwk[m] for m in members})).digest())


def load_public_key(jwk: Mapping[str, Any]) -> Any:
    if jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        x = int.from_bytes(b64url_decode(jwk["x"]), "big")
        y = int.from_bytes(b64url_decode(jwk["y"]), "big")
        return ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
        return ed25519.Ed25519PublicKey.from_public_bytes(b64url_decode(jwk["x"]))
    raise ValueError("an unsupported key type")


def signature_valid(jwk: Mapping[str, Any], alg: str, message: bytes, raw: bytes) -> bool:
    key = load_public_key(jwk)
    try:
        if alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(raw_to_der(raw), message, ec.ECDSA(hashes.SHA256()))
        elif alg == "EdDSA" and isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(raw, message)
        else:
            return False
    except (InvalidSignature, ValueError):
        return False
    return True


def _moment(text: Any) -> Optional[datetime]:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


@dataclass
class Verdict:
    """What a verification found: `failures` as (part, message), none when valid."""
    failures: list[tuple[str, str]] = field(default_factory=list)
    kid: Optional[str] = None

    @property
    def valid(self) -> bool:
        return not self.failures

    def fail(self, part: str, message: str) -> None:
        self.failures.append((part, message))


def statement_problem(value: Any) -> Optional[str]:
    """Why `value` is not a statement's shape (None when it is)."""
    if not isinstance(value, dict) or set(value) != set(STATEMENT_FIELDS):
        return "it does not hold exactly the fields " + ", ".join(STATEMENT_FIELDS)
    if not isinstance(value["version_number"], int) or value["version_number"] < 1:
        return "version_number is not a positive integer"
    if not isinstance(value["content_sha256"], str) or not _HEX64.fullmatch(value["content_sha256"]):
        return "content_sha256 is not a lowercase hex SHA-256"
    files = value["files"]
    if not isinstance(files, list) or not all(
            isinstance(f, dict) and set(f) == {"path", "sha256"} and isinstance(f["path"], str)
            and isinstance(f["sha256"], str) and _HEX64.fullmatch(f["sha256"]) for f in files):
        return "files is not a list of {path, sha256}"
    if _moment(value["published_at"]) is None:
        return "published_at is not an RFC 3339 time"
    publisher = value["publisher"]
    if (not isinstance(publisher, dict) or set(publisher) != {"kind", "id", "name"}
            or publisher.get("kind") not in PUBLISHER_KINDS):
        return "publisher is not {kind: key | member | oauth_client, id, name}"
    if not all(isinstance(value[k], str) for k in ("document_id", "workspace_id")):
        return "document_id and workspace_id must be strings"
    return None


def verify(provenance: Any, keys: Any, content: Optional[bytes] = None,
           files: Optional[Mapping[str, str]] = None) -> Verdict:
    """Check a provenance answer (`{statement, signature}`) against a JWKS (`{keys: [...]}`),
    and, when given, the content as downloaded and a bundle's other files ({path: sha256})."""
    verdict = Verdict()
    if not isinstance(provenance, dict):
        verdict.fail("statement", "the provenance is not a JSON object")
        return verdict
    stated = provenance.get("statement")
    given = provenance.get("signature")
    signature: dict[str, Any] = given if isinstance(given, dict) else {}
    problem = statement_problem(stated)
    if problem:
        verdict.fail("statement", f"the statement is malformed: {problem}")
    raw = _signature_bytes(signature, verdict)
    jwk = _key_for(signature, keys, verdict) if raw is not None else None
    if problem is None:
        assert isinstance(stated, dict)
        message = canonical(stated)
        recorded = signature.get("statement_sha256")
        changed = isinstance(recorded, str) and recorded != sha256_hex(message)
        if changed:
            verdict.fail("statement", "the statement was changed after it was signed "
                                      "(its canonical JSON no longer matches the signed one)")
        if jwk is not None and raw is not None:
            if not signature_valid(jwk, signature["alg"], message, raw):
                if not changed:
                    verdict.fail("signature", f"the signature does not verify over the statement with key "
                                              f"{jwk.get('kid')}")
            else:
                _check_key_period(jwk, stated, verdict)
        if content is not None:
            _check_content(stated, content, files, verdict)
    return verdict


def _signature_bytes(signature: Mapping[str, Any], verdict: Verdict) -> Optional[bytes]:
    if signature.get("alg") not in ALGORITHMS:
        verdict.fail("signature", "the signature names no supported algorithm (ES256, EdDSA)")
        return None
    try:
        raw = b64url_decode(signature.get("value"))  # a non-string is refused inside
    except (ValueError, TypeError):
        verdict.fail("signature", "the signature's value is not base64url")
        return None
    if len(raw) != 64:  # ES256 r||s and Ed25519 are both 64 bytes
        verdict.fail("signature", f"the signature is {len(raw)} bytes, not 64")
        return None
    return raw


def _key_for(signature: Mapping[str, Any], keys: Any, verdict: Verdict) -> Optional[Mapping[str, Any]]:
    listed = keys.get("keys") if isinstance(keys, dict) else None
    kid = signature.get("kid")
    verdict.kid = kid if isinstance(kid, str) else None
    jwk = next((k for k in listed or () if isinstance(k, dict) and k.get("kid") == kid), None)
    if jwk is None:
        verdict.fail("signature", f"no key {kid!r} among the signing keys")
        return None
    if jwk.get("alg") not in (None, signature.get("alg")):
        verdict.fail("signature", f"key {kid} is for {jwk.get('alg')}, not {signature.get('alg')}")
        return None
    return jwk


def _check_key_period(jwk: Mapping[str, Any], stated: Mapping[str, Any], verdict: Verdict) -> None:
    """A retired key signs nothing published after its `not_after`."""
    not_after = _moment(jwk.get("not_after")) if jwk.get("not_after") else None
    published = _moment(stated["published_at"])
    if not_after is not None and published is not None and published > not_after:
        verdict.fail("signature", f"key {jwk.get('kid')} was retired at {jwk.get('not_after')}, before "
                                  f"this version was published")


def _check_content(stated: Mapping[str, Any], content: bytes, files: Optional[Mapping[str, str]],
                   verdict: Verdict) -> None:
    if sha256_hex(content) != stated["content_sha256"]:
        verdict.fail("content", "the content's SHA-256 is not the statement's content_sha256")
    expected = {f["path"]: f["sha256"] for f in stated["files"]}
    if files is None:
        if expected:
            verdict.fail("content", "the statement lists files; verify the bundle's .zip")
        return
    for path in sorted(set(expected) | set(files)):
        if path not in files:
            verdict.fail("content", f"{path} is missing")
        elif path not in expected:
            verdict.fail("content", f"{path} is not in the statement")
        elif files[path] != expected[path]:
            verdict.fail("content", f"{path}: its SHA-256 is not the statement's")


class MemorySigner:
    """A P-256 key held in memory only: what a Context built without the composition root
    signs with (tests). Never a deployed or `make run` signer (chalicelib/wiring.py)."""

    holder = "memory"

    def __init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._jwk = public_jwk(self._key)

    def public_jwk(self) -> Mapping[str, str]:
        return self._jwk

    def sign(self, message: bytes) -> bytes:
        return der_to_raw(self._key.sign(message, ec.ECDSA(hashes.SHA256())))


class MemorySigners:
    def __init__(self) -> None:
        self._current = MemorySigner()

    def current(self) -> MemorySigner:
        return self._current

    def rotate(self) -> MemorySigner:
        self._current = MemorySigner()
        return self._current
