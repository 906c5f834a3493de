"""Large uploads (contract 7b): a file over the 6 MiB request cap is sent first,
then published by `upload_id`.

`create` checks the declared name and size against the content limits before any
byte moves, and answers where to PUT exactly `size_bytes` bytes without credentials
(the URL is the credential): a presigned S3 URL when deployed (Lambda never carries
the bytes), a signed route of the local server on the embedded store. An upload
belongs to its workspace (another workspace's id is an unknown one), is single use
(claimed with a conditional write), refused until exactly the declared bytes have
arrived, and swept an hour after it was created (maintenance.sweep_orphans).

Storage: `uploads/<workspace>/<upload_id>.json` (name, size, expiry) and
`uploads/<workspace>/<upload_id>.bin` (the bytes).
"""
from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING, Any

from chalicelib import config
from chalicelib.domain import bundles, limits
from chalicelib.errors import BundleTooLarge, NotFound, ValidationFailed
from chalicelib.models import UploadTicket as Ticket
from chalicelib.ports import BlobNotFound
from chalicelib.services import access, ratelimits
from chalicelib.services.content import MARKDOWN_UPLOADS, HTML_UPLOADS, UPLOAD_TYPES, ZIP_UPLOADS, delete_older_than
from chalicelib.services.context import Context, rfc3339
from chalicelib.services.access import requires

if TYPE_CHECKING:
    from itsdangerous import URLSafeTimedSerializer

    from chalicelib.services.access import Who

UPLOAD_ROOT = "uploads/"
UPLOAD_SECONDS = 3600
UPLOAD_SALT = "docpub-upload"
_UPLOAD_ID = re.compile(r"^up_[A-Za-z0-9_-]{22}$")
# A .zip may hold the page and 32 MiB of files: its compressed size cannot usefully be larger.
MAX_ZIP_BYTES = bundles.MAX_BYTES + limits.HTML_BYTES


def record_key(workspace_id: str, upload_id: str) -> str:
    return f"{UPLOAD_ROOT}{workspace_id}/{upload_id}.json"


def data_key(workspace_id: str, upload_id: str) -> str:
    return f"{UPLOAD_ROOT}{workspace_id}/{upload_id}.bin"


def _serializer() -> "URLSafeTimedSerializer":
    from itsdangerous import URLSafeTimedSerializer

    return URLSafeTimedSerializer(config.secret_key(), salt=UPLOAD_SALT)


def check_declared(filename: str, size_bytes: int) -> None:
    """The contract's limits, applied to a declared name and size (before any byte)."""
    name = (filename or "").lower()
    if not name.endswith(UPLOAD_TYPES) or "/" in filename or "\\" in filename:
        raise ValidationFailed.field("filename", f"must be a file name ending in {', '.join(UPLOAD_TYPES)}")
    if name.endswith(ZIP_UPLOADS):
        if size_bytes > MAX_ZIP_BYTES:
            raise bundles.too_large(f"The archive is {size_bytes:,} bytes")
    elif size_bytes > limits.HTML_BYTES:  # a Markdown source too (its limit is the same)
        raise limits.too_large(size_bytes)


class UploadService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @requires("create_upload")
    def create(self, who: Who, filename: str, size_bytes: int) -> Ticket:
        actor = access.actor(self.ctx, who)
        check_declared(filename, size_bytes)
        upload_id = "up_" + secrets.token_urlsafe(16)
        expires_ms = self.ctx.now_ms() + UPLOAD_SECONDS * 1000
        record = {"filename": filename, "size_bytes": size_bytes, "expires_ms": expires_ms,
                  "workspace_id": actor.workspace_id}
        self.ctx.blobs.put_file(record_key(actor.workspace_id, upload_id), json.dumps(record).encode())
        url = self.ctx.blobs.upload_url(data_key(actor.workspace_id, upload_id), size_bytes, UPLOAD_SECONDS)
        if url is None:  # embedded store: the local server receives it
            token = _serializer().dumps({"w": actor.workspace_id, "u": upload_id})
            url = f"{config.base_url()}/uploads/{upload_id}?token={token}"
        return Ticket(upload_id=upload_id, upload_url=url, expires_at=rfc3339(expires_ms) or "")

    def put_origin(self) -> str:
        """The origin (scheme://host[:port]) every upload_url points to: a page whose script
        PUTs there allows it (Content-Security-Policy connect-src). A presigned URL is made
        without a storage call; the embedded store's is this server's base URL."""
        from urllib.parse import urlsplit

        url = self.ctx.blobs.upload_url(data_key("origin", "up_origin"), 1, 60) or config.base_url()
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    def _record(self, workspace_id: str, upload_id: str) -> dict[str, Any]:
        if not _UPLOAD_ID.match(upload_id or ""):
            raise NotFound("No such upload.")
        try:
            record: dict[str, Any] = json.loads(self.ctx.blobs.get_html(record_key(workspace_id, upload_id)))
        except BlobNotFound:
            raise NotFound("No such upload.") from None
        if record["expires_ms"] < self.ctx.now_ms():
            raise NotFound("This upload expired (an upload must be published within an hour).")
        return record

    def receive(self, upload_id: str, token: str, data: bytes) -> None:
        """The local server's PUT: the signed token is the credential."""
        from itsdangerous import BadSignature

        try:
            grant = _serializer().loads(token or "", max_age=UPLOAD_SECONDS)
        except BadSignature:
            raise NotFound("No such upload.") from None
        if not isinstance(grant, dict) or grant.get("u") != upload_id:
            raise NotFound("No such upload.")
        record = self._record(grant["w"], upload_id)
        if len(data) != record["size_bytes"]:
            raise ValidationFailed.field("body", f"must be exactly the declared {record['size_bytes']:,} bytes "
                                                 f"(got {len(data):,})")
        self.ctx.blobs.put_file(data_key(grant["w"], upload_id), data)

    def take(self, workspace_id: str, upload_id: str) -> tuple[str, bytes]:
        """(filename, bytes) of a complete upload of this workspace, used up by this call."""
        record = self._record(workspace_id, upload_id)
        try:
            data = self.ctx.blobs.get_html(data_key(workspace_id, upload_id))
        except BlobNotFound:
            data = None
        if data is None or len(data) != record["size_bytes"]:
            raise ValidationFailed.field("upload_id", f"has not received its {record['size_bytes']:,} bytes yet: "
                                                      "PUT them to upload_url first")
        # Held by one publish at a time: a log of one entry while a publish holds it (or after it
        # published), emptied again by `release` when that publish was refused.
        now_ms = self.ctx.now_ms()
        scope = ratelimits.scope_key("upload-used", upload_id)
        held = self.ctx.rates.get(scope)
        if (held is not None and held.hits) or not self.ctx.rates.claim(
                scope, held.seq if held else 0, [now_ms], now_ms // 1000 + 2 * UPLOAD_SECONDS):
            raise NotFound("No such upload (an upload is used once).")
        return record["filename"], data

    def release(self, upload_id: str) -> None:
        """Give back an upload `take` handed to a publish that was then refused (a refused
        request changes nothing): it can be published again, until it expires."""
        scope = ratelimits.scope_key("upload-used", upload_id)
        held = self.ctx.rates.get(scope)
        if held is not None and held.hits:
            self.ctx.rates.claim(scope, held.seq, [], held.expires_at or self.ctx.now_ms() // 1000 + 2 * UPLOAD_SECONDS)

    def discard(self, workspace_id: str, upload_id: str) -> None:
        for key in (data_key(workspace_id, upload_id), record_key(workspace_id, upload_id)):
            try:
                self.ctx.blobs.delete(key)
            except Exception:  # noqa: BLE001 - swept after an hour anyway
                pass


def sweep_uploads(ctx: Context) -> int:
    """Delete uploads older than an hour (used or not)."""
    return delete_older_than(ctx, UPLOAD_ROOT, UPLOAD_SECONDS)


__all__ = ["UploadService", "Ticket", "check_declared", "sweep_uploads", "HTML_UPLOADS", "MARKDOWN_UPLOADS",
           "BundleTooLarge"]
