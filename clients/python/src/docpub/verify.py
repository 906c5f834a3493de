"""`docpub verify`: check a version's provenance (contract 7g, docs/provenance.md).

Three parts are checked, and each failure names its part:
- ``content``: the file (the content as downloaded, or a bundle's .zip: its index file
  and its other files) hashes to what the statement says;
- ``statement``: the statement is well-formed and was not changed after signing;
- ``signature``: a supported algorithm, a listed key valid when the version was
  published, and a signature that verifies over the statement's RFC 8785 canonical JSON.

The client never imports the service's code, so this is its own copy of the rules
(chalicelib/domain/provenance.py on the service side; the tests run both on the same
answers).
"""
from __future__ import annotations

import base64
import hashlib
import io
import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Optional
from urllib.parse import parse_qs, urlsplit

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

EXIT_INVALID = 7
FIELDS = ("document_id", "workspace_id", "version_number", "content_sha256", "files", "published_at", "publisher")
INDEX_NAMES = ("index.html", "index.md")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass
class Result:
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.failures

    def fail(self, part: str, message: str) -> None:
        self.failures.append((part, message))


def _b64url(text: Any) -> bytes:
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _moment(text: Any) -> Optional[datetime]:
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def content_of(data: bytes, name: str = "") -> tuple[bytes, Optional[dict[str, str]]]:
    """(content, {path: sha256} of the other files or None): a .zip is a bundle as downloaded."""
    if not (name.lower().endswith(".zip") or data[:4] == b"PK\x03\x04"):
        return data, None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [n for n in archive.namelist() if not n.endswith("/")]
            index = next((n for n in INDEX_NAMES if n in names), None)
            if index is None:
                raise ValueError("the .zip holds no index.html or index.md")
            return archive.read(index), {n: hashlib.sha256(archive.read(n)).hexdigest() for n in names if n != index}
    except zipfile.BadZipFile as exc:
        raise ValueError(f"not a readable .zip: {exc}") from None


def _statement_problem(stated: Any) -> Optional[str]:
    if not isinstance(stated, dict) or set(stated) != set(FIELDS):
        return "it does not hold exactly the fields " + ", ".join(FIELDS)
    if not isinstance(stated["version_number"], int) or stated["version_number"] < 1:
        return "version_number is not a positive integer"
    if not isinstance(stated["content_sha256"], str) or not _HEX64.fullmatch(stated["content_sha256"]):
        return "content_sha256 is not a lowercase hex SHA-256"
    if not isinstance(stated["files"], list) or not all(
            isinstance(f, dict) and set(f) == {"path", "sha256"} and isinstance(f["sha256"], str)
            and _HEX64.fullmatch(f["sha256"]) for f in stated["files"]):
        return "files is not a list of {path, sha256}"
    if _moment(stated["published_at"]) is None:
        return "published_at is not an RFC 3339 time"
    publisher = stated["publisher"]
    if not isinstance(publisher, dict) or set(publisher) != {"kind", "id", "name"} or publisher.get("kind") not in (
            "key", "member", "oauth_client"):
        return "publisher is not {kind, id, name}"
    return None


def _public_key(jwk: Mapping[str, Any]) -> Any:
    if jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        return ec.EllipticCurvePublicNumbers(int.from_bytes(_b64url(jwk["x"]), "big"),
                                             int.from_bytes(_b64url(jwk["y"]), "big"), ec.SECP256R1()).public_key()
    if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
        return ed25519.Ed25519PublicKey.from_public_bytes(_b64url(jwk["x"]))
    raise ValueError("unsupported key type")


def _signature_ok(jwk: Mapping[str, Any], alg: str, message: bytes, raw: bytes) -> bool:
    try:
        key = _public_key(jwk)
        if alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey):
            der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            key.verify(der, message, ec.ECDSA(hashes.SHA256()))
            return True
        if alg == "EdDSA" and isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(raw, message)
            return True
    except (InvalidSignature, ValueError, KeyError):
        return False
    return False


def verify(provenance: Any, keys: Any, content: bytes, files: Optional[Mapping[str, str]]) -> Result:
    result = Result()
    if not isinstance(provenance, dict):
        result.fail("statement", "the provenance is not a JSON object {statement, signature}")
        return result
    stated = provenance.get("statement")
    signature = provenance.get("signature") if isinstance(provenance.get("signature"), dict) else {}
    problem = _statement_problem(stated)
    if problem:
        result.fail("statement", f"the statement is malformed: {problem}")
    raw: Optional[bytes] = None
    jwk: Optional[Mapping[str, Any]] = None
    if signature.get("alg") not in ("ES256", "EdDSA"):
        result.fail("signature", "the signature names no supported algorithm (ES256, EdDSA)")
    else:
        try:
            raw = _b64url(signature.get("value"))
        except (ValueError, TypeError):
            result.fail("signature", "the signature's value is not base64url")
        if raw is not None and len(raw) != 64:
            result.fail("signature", f"the signature is {len(raw)} bytes, not 64")
            raw = None
        listed = keys.get("keys") if isinstance(keys, dict) else None
        jwk = next((k for k in listed or () if isinstance(k, dict) and k.get("kid") == signature.get("kid")), None)
        if raw is not None and jwk is None:
            result.fail("signature", f"no key {signature.get('kid')!r} among the signing keys")
    if problem is not None:
        return result
    assert isinstance(stated, dict)
    message = rfc8785.dumps(stated)
    recorded = signature.get("statement_sha256")
    changed = isinstance(recorded, str) and recorded != hashlib.sha256(message).hexdigest()
    if changed:
        result.fail("statement", "the statement was changed after it was signed")
    if raw is not None and jwk is not None:
        if not _signature_ok(jwk, signature["alg"], message, raw):
            if not changed:
                result.fail("signature", f"the signature does not verify over the statement with key {jwk['kid']}")
        elif _retired_before(jwk, stated["published_at"]):
            result.fail("signature", f"key {jwk['kid']} was retired at {jwk['not_after']}, before this version "
                                     "was published")
    if hashlib.sha256(content).hexdigest() != stated["content_sha256"]:
        result.fail("content", "the content's SHA-256 is not the statement's content_sha256")
    expected = {f["path"]: f["sha256"] for f in stated["files"]}
    if files is None and expected:
        result.fail("content", "the statement lists files: verify the bundle's .zip")
    for path in sorted(set(expected) | set(files or {})) if files is not None else ():
        if path not in files:
            result.fail("content", f"{path} is missing")
        elif path not in expected:
            result.fail("content", f"{path} is not in the statement")
        elif files[path] != expected[path]:
            result.fail("content", f"{path}: its SHA-256 is not the statement's")
    return result


def _retired_before(jwk: Mapping[str, Any], published_at: str) -> bool:
    """A retired key signs nothing published after its `not_after`."""
    not_after = _moment(jwk.get("not_after")) if jwk.get("not_after") else None
    published = _moment(published_at)
    return not_after is not None and published is not None and published > not_after


@dataclass(frozen=True)
class ShareAddress:
    """Where a share URL's content, statement and keys are."""
    page: str
    version: Optional[str]
    base: str

    @property
    def download(self) -> str:
        return self.page + "?download=1" + (f"&v={self.version}" if self.version else "")

    @property
    def provenance(self) -> str:
        return self.page + "/provenance" + (f"?v={self.version}" if self.version else "")

    @property
    def keys(self) -> str:
        return self.base + "/.well-known/docpub-signing-keys.json"


def share_address(url: str) -> Optional[ShareAddress]:
    parts = urlsplit(url)
    match = re.fullmatch(r"(.*)/d/([A-Za-z0-9_-]+)/?", parts.path)
    if parts.scheme not in ("http", "https") or not match:
        return None
    query = parse_qs(parts.query)
    version = (query.get("v") or query.get("version") or [None])[0]
    base = f"{parts.scheme}://{parts.netloc}{match.group(1)}"
    return ShareAddress(f"{base}/d/{match.group(2)}", version, base)
