"""Signed versions (contract 7g, docs/provenance.md).

Every version is signed when it is made, whichever way (publish, upload, bundle, restore,
edit, accepted suggestion, dashboard edit: all go through `DocumentService._publish` or
`_edit`, which call `signed` once the version's number is known): a statement of what was
published (document, workspace, version number, the SHA-256 of the content as downloaded
and of a bundle's files, when, by whom), signed over its RFC 8785 canonical JSON by the
current key (ports/signing.py: a key file locally, AWS KMS deployed), and stored with the
version in the same atomic step. Nothing is ever signed again: a rotated key stays in the
JWKS with its `not_after`, so what it signed still verifies.

Versions made before signing existed have no statement: their publisher was never
recorded, and signing them now would vouch for what the store says today as if it were
known at publish time. Their provenance answers 404 `not_found` with
`details.reason = "provenance_unavailable"`, and their share page shows no "Verified" line.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import provenance as rules
from chalicelib.errors import NotFound, ServiceUnavailable
from chalicelib.models import Provenance, SigningKeySet
from chalicelib.ports import BlobNotFound
from chalicelib.ports.records import Document, SigningKey, Version
from chalicelib.ports.signing import Signer
from chalicelib.services import access
from chalicelib.services.access import Actor, Who, requires
from chalicelib.services.context import Context, rfc3339

if TYPE_CHECKING:
    from chalicelib.services.content import Content

log = logging.getLogger("docpub")

UNAVAILABLE = "provenance_unavailable"

# Keys this process has seen recorded, per signing-key repository (one storage read per
# process and key, not per signature).
_RECORDED: "weakref.WeakKeyDictionary[Any, set[str]]" = weakref.WeakKeyDictionary()
_RECORDED_LOCK = threading.Lock()


def publisher_of(actor: Actor) -> dict[str, str]:
    """Who made a version, as reviews name a reviewer: an OAuth grant's client, a member (a
    dashboard session, or a key acting for one), or an API key; the operator CLI is the member
    "operator"."""
    if actor.client_id:
        return {"kind": "oauth_client", "id": actor.client_id, "name": actor.client or actor.client_id}
    if actor.member:
        return {"kind": "member", "id": actor.member, "name": actor.member}
    if actor.key_item is not None:
        return {"kind": "key", "id": actor.key_item.key_id, "name": actor.key_item.name or actor.key_item.key_id}
    return {"kind": "member", "id": "operator", "name": "operator"}


def downloaded(content: "Content") -> bytes:
    """The content as `?download=1` answers it: the Markdown source, else the page (a bundle's index page)."""
    return content.source if content.format == "markdown" and content.source is not None else content.page


def signed(ctx: Context, actor: Actor, document_id: str, version: Version, content: "Content") -> Version:
    """`version` with its provenance: the statement signed by the current key."""
    stated = rules.statement(document_id, actor.workspace_id, version.number, rules.sha256_hex(downloaded(content)),
                             version.files, rfc3339(version.created_ms), publisher_of(actor))
    message = rules.canonical(stated)
    signer = current_signer(ctx)
    jwk = signer.public_jwk()
    signature = {"alg": jwk["alg"], "kid": jwk["kid"], "value": rules.b64url(signer.sign(message)),
                 "statement_sha256": rules.sha256_hex(message)}
    return dataclasses.replace(version, provenance=json.dumps({"statement": stated, "signature": signature},
                                                              separators=(",", ":"), ensure_ascii=False))


def current_signer(ctx: Context) -> Signer:
    """The current signer, its key recorded (the first signature of a new key records it and
    retires the previous one: `not_after` = now)."""
    signer = ctx.signers.current()
    jwk = signer.public_jwk()
    repo = ctx.signing_keys
    with _RECORDED_LOCK:
        seen = _RECORDED.setdefault(repo, set())
        if jwk["kid"] in seen:
            return signer
    _record(ctx, signer)
    with _RECORDED_LOCK:
        _RECORDED.setdefault(repo, set()).add(jwk["kid"])
    return signer


def _record(ctx: Context, signer: Signer) -> list[str]:
    """Record the signer's key (if new), retiring the others; the kids it retired."""
    jwk = dict(signer.public_jwk())
    keys = ctx.signing_keys.list_keys()
    known = next((k for k in keys if k.kid == jwk["kid"]), None)
    if known is not None:
        if known.not_after_ms is not None:
            log.error("signing key retired", extra={"kid": known.kid})
            raise ServiceUnavailable("The configured signing key was retired; configure the current one.")
        return []
    now = ctx.now_ms()
    ctx.signing_keys.add_key(SigningKey(kid=jwk["kid"], alg=jwk["alg"], public_jwk=jwk, holder=signer.holder,
                                        created_ms=now), retire_others_ms=now)
    return [k.kid for k in keys if k.not_after_ms is None]


def rotate(ctx: Context) -> dict[str, Any]:
    """A new current key (`make admin ARGS=rotate-signing-key`); the previous one is retired
    now and stays listed. What was signed before is never signed again."""
    signer = ctx.signers.rotate()
    retired = _record(ctx, signer)
    with _RECORDED_LOCK:
        _RECORDED.setdefault(ctx.signing_keys, set()).add(signer.public_jwk()["kid"])
    return {"kid": signer.public_jwk()["kid"], "alg": signer.public_jwk()["alg"], "retired": retired}


def key_set(ctx: Context) -> SigningKeySet:
    """The JWKS: every key that signed; a retired one with `not_after` (RFC 3339)."""
    keys = ctx.signing_keys.list_keys()
    if not keys:  # nothing signed yet: list the key that will sign
        current_signer(ctx)
        keys = ctx.signing_keys.list_keys()
    return SigningKeySet(keys=[_jwk(k) for k in keys])


def _jwk(key: SigningKey) -> dict[str, str]:
    jwk = {**key.public_jwk, "kid": key.kid, "alg": key.alg, "use": "sig"}
    if key.not_after_ms is not None:
        jwk["not_after"] = rfc3339(key.not_after_ms)
    return jwk


def provenance_for(ctx: Context, document: Document, version: Version) -> Optional[Provenance]:
    """A version's provenance as stored (None: made before versions were signed). The one
    function other services use (the workspace export puts each version's beside it)."""
    del ctx, document  # the statement is stored with the version; kept for callers that may need more
    if not version.provenance:
        return None
    return Provenance.model_validate_json(version.provenance)


def unavailable(number: int) -> NotFound:
    return NotFound(f"Version {number} was published before versions were signed; it has no provenance.",
                    {"reason": UNAVAILABLE})


def version_number(raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9 or int(raw) < 1:
        raise NotFound(f"No version {raw} of this document.")
    return int(raw)


@dataclass(frozen=True)
class VerifiedLine:
    """The share page's "Verified" line: who published the version and when, whether its
    stored content still matches the signed statement, and the details behind it."""
    valid: bool
    version_number: int
    publisher_kind: str
    publisher_name: str
    published_at: str
    kid: str
    alg: str
    content_sha256: str
    files: int
    failures: tuple[tuple[str, str], ...] = ()


# Versions are immutable: the line of a version (its statement checked against its stored
# content) holds; kept for the last few, by version id.
_LINES: "OrderedDict[str, Optional[VerifiedLine]]" = OrderedDict()
_LINES_MAX = 256


def verified_line(ctx: Context, doc: Document, version: Version) -> Optional[VerifiedLine]:
    """Check a version against its statement: the content as downloaded is hashed again,
    a bundle's files compared by the addresses they are stored under (their SHA-256), the
    signature verified with the recorded key. None for a version without provenance."""
    found = provenance_for(ctx, doc, version)
    if found is None:
        return None
    from chalicelib.services.content import read_source

    try:
        content = read_source(ctx, doc, version)[1]
    except BlobNotFound:
        content = b""
    verdict = rules.verify(json.loads(version.provenance or "{}"), key_set(ctx).model_dump(), content,
                           {str(f["path"]): str(f["sha256"]) for f in version.files})
    stated = found.statement
    return VerifiedLine(valid=verdict.valid, version_number=version.number, publisher_kind=stated.publisher.kind,
                        publisher_name=stated.publisher.name, published_at=stated.published_at,
                        kid=found.signature.kid, alg=found.signature.alg, content_sha256=stated.content_sha256,
                        files=len(stated.files), failures=tuple(verdict.failures))


class ProvenanceService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @requires("get_provenance")
    def get(self, who: Who, document_id: str, number: str) -> Provenance:
        found = access.find_document(self.ctx, who, document_id)
        wanted = version_number(number)
        version = (self.ctx.documents.get_version(found.document.document_id, wanted)
                   if wanted <= found.document.version_count else None)
        if version is None:
            raise NotFound(f"No version {wanted} of document {found.id}.")
        return self._answer(found.document, version)

    def _answer(self, doc: Document, version: Version) -> Provenance:
        answer = provenance_for(self.ctx, doc, version)
        if answer is None:
            raise unavailable(version.number)
        return answer

    def for_share(self, share_id: str, version_number: Optional[int], viewer: Any) -> Provenance:
        """A share link's version's provenance (`docpub verify SHARE_URL`): the same access as viewing it."""
        doc, version = self._shared_version(share_id, version_number, viewer)
        return self._answer(doc, version)

    def share_line(self, share_id: str, version_number: Optional[int], viewer: Any
                   ) -> tuple[Optional[VerifiedLine], bool, int]:
        """The share page's "Verified" line of the shown version (None: no provenance to show),
        whether the link is protected, and how long a shared cache may keep the answer. The
        same access as viewing; a version's line is worked out once per process."""
        from chalicelib.services.sharing import ShareService

        shared = ShareService(self.ctx).access(share_id, viewer, version_number)
        with _RECORDED_LOCK:
            known = shared.version_id in _LINES
            line = _LINES.get(shared.version_id)
        if not known:
            version = self.ctx.documents.get_version(shared.doc.document_id, shared.version_number)
            line = verified_line(self.ctx, shared.doc, version) if version is not None else None
            with _RECORDED_LOCK:
                _LINES[shared.version_id] = line
                while len(_LINES) > _LINES_MAX:
                    _LINES.popitem(last=False)
        return line, shared.protected, shared.cache_seconds

    def _shared_version(self, share_id: str, version_number: Optional[int], viewer: Any) -> tuple[Document, Version]:
        from chalicelib.services.sharing import ShareService

        shared = ShareService(self.ctx).access(share_id, viewer, version_number)
        version = self.ctx.documents.get_version(shared.doc.document_id, shared.version_number)
        if version is None:
            raise NotFound("No such version.")
        return shared.doc, version

    def signing_keys(self) -> SigningKeySet:
        return key_set(self.ctx)


__all__ = ["ProvenanceService", "provenance_for", "signed", "rotate", "key_set", "verified_line", "VerifiedLine"]
