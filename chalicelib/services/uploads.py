"""Large uploads (contract 7b): a file over the 6 MiB request cap is sent first,
then published by `upload_id`.

`create` checks the declared name and size against the content limits before any
byte moves, and answers where to PUT exactly `size_bytes` bytes without credentials
(the URL is the credential): a presigned S3 URL when deployed (Lambda never carries
the bytes), a signed route of the local server on the embedded store. An upload
belongs to its workspace (another workspace's id is an unknown one), is single use
(claimed with a conditional write), refused until exactly the declared bytes have
arrived, and swept an hour after it was created (maintenance.sweep_orphans).

Bounds (API contract 4, "Bounds, second pass"): at most
`limits.PENDING_UPLOADS_PER_WORKSPACE` uploads of a workspace are pending (created,
neither published nor expired) at once, the next is 429; each holds a lease
(ports/leases.py, scope `uploads#<workspace>`) weighing its declared size until it is
published or expires, and those sizes count against the storage quota: a creation
that would pass it is 403 `plan_limit_reached`, and so is a publish or edit that would
(`pending_uploads`, read by DocumentService._quota). A refused creation stores nothing.
The local server's PUT is streamed to the blob store (`receive`: at most `PUT_CHUNK_BYTES`
in memory, written to a temporary file, fsynced, renamed); deployed, the PUT goes to
S3 with the size signed into its URL and never passes through the service.

Storage: `uploads/<workspace>/<upload_id>.json` (name, size, expiry) and
`uploads/<workspace>/<upload_id>.bin` (the bytes).
"""
from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING, Any, Iterator

from chalicelib import config
from chalicelib.domain import bundles, limits
from chalicelib.domain import plans
from chalicelib.errors import BundleTooLarge, NotFound, PlanLimitReached, RateLimited, ValidationFailed
from chalicelib.models import UploadTicket as Ticket
from chalicelib.ports import BlobNotFound
from chalicelib.ports.errors import StorageError
from chalicelib.ports.records import Lease
from chalicelib.services import access, ratelimits
from chalicelib.services.content import MARKDOWN_UPLOADS, HTML_UPLOADS, UPLOAD_TYPES, ZIP_UPLOADS, delete_older_than
from chalicelib.services.context import Context, rfc3339
from chalicelib.services.pending_uploads import pending_uploads, upload_scope
from chalicelib.services.access import requires

if TYPE_CHECKING:
    from typing import BinaryIO

    from itsdangerous import URLSafeTimedSerializer

    from chalicelib.services.access import Who

UPLOAD_ROOT = "uploads/"
UPLOAD_SECONDS = 3600
UPLOAD_SALT = "docpub-upload"
_UPLOAD_ID = re.compile(r"^up_[A-Za-z0-9_-]{22}$")
# A .zip may hold the page and 32 MiB of files: its compressed size cannot usefully be larger.
MAX_ZIP_BYTES = bundles.MAX_BYTES + limits.HTML_BYTES
# The local server's PUT reads the body this much at a time (contract: at most 1 MiB of
# a PUT in the server's memory).
PUT_CHUNK_BYTES = 1024 * 1024


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
        now_ms = self.ctx.now_ms()
        expires_ms = now_ms + UPLOAD_SECONDS * 1000
        self._hold(actor.workspace_id, Lease(upload_scope(actor.workspace_id), upload_id, expires_ms, size_bytes),
                   now_ms)
        record = {"filename": filename, "size_bytes": size_bytes, "expires_ms": expires_ms,
                  "workspace_id": actor.workspace_id}
        try:
            self.ctx.blobs.put_file(record_key(actor.workspace_id, upload_id), json.dumps(record).encode())
        except BaseException:
            self._let_go(actor.workspace_id, upload_id)
            raise
        url = self.ctx.blobs.upload_url(data_key(actor.workspace_id, upload_id), size_bytes, UPLOAD_SECONDS)
        if url is None:  # embedded store: the local server receives it
            token = _serializer().dumps({"w": actor.workspace_id, "u": upload_id})
            url = f"{config.base_url()}/uploads/{upload_id}?token={token}"
        return Ticket(upload_id=upload_id, upload_url=url, expires_at=rfc3339(expires_ms) or "")

    def _hold(self, workspace_id: str, lease: Lease, now_ms: int) -> None:
        """The new upload's place among the workspace's pending ones, its declared size
        counted against the quota; or 429 (too many pending), 403 (over the quota)."""
        workspace = self.ctx.workspaces.get(workspace_id)
        plan = workspace.plan if workspace else "free"
        cap = plans.entitlements(plan).max_storage_bytes
        stored = max(0, workspace.storage_bytes) if workspace else 0
        room = None if cap is None else cap - stored
        if self.ctx.leases.acquire(lease, limits.PENDING_UPLOADS_PER_WORKSPACE, now_ms, room):
            return
        held = pending_uploads(self.ctx, workspace_id, now_ms)
        if len(held) >= limits.PENDING_UPLOADS_PER_WORKSPACE:
            first = min(x.expires_ms for x in held)
            raise RateLimited(-(-(first - now_ms) // 1000), (
                f"This workspace has {limits.PENDING_UPLOADS_PER_WORKSPACE} uploads pending, the most at once: "
                "publish them (or let them expire, an hour after creation) before creating another."))
        pending = sum(x.weight for x in held)
        if room is None or pending + lease.weight <= room:  # room after all: lost races for the place
            raise RateLimited(1, "Uploads of this workspace are being created at once; retry in 1 s.")
        upgrade, extra = "", dict[str, str]()
        if plan != "pro":
            from chalicelib.services.workspaces import upgrade_offer

            upgrade, extra = upgrade_offer(workspace_id)
        raise PlanLimitReached(
            f"The {plan} plan stores at most {limits.bytes_text(cap)}; this workspace holds "
            f"{limits.bytes_text(stored + pending)} (with {limits.bytes_text(pending)} of pending uploads) and "
            f"this upload declares {limits.bytes_text(lease.weight)}. Delete old versions or documents"
            f"{', or ' + upgrade if upgrade else ''}.",
            {"entitlement": "max_storage_bytes", "limit": cap, "current": stored + pending, **extra})

    def _let_go(self, workspace_id: str, upload_id: str) -> None:
        try:
            self.ctx.leases.release(upload_scope(workspace_id), upload_id)
        except StorageError:  # it lapses with the upload, an hour after creation
            pass

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

    def receive(self, upload_id: str, token: str, body: "BinaryIO", length: int) -> None:
        """The local server's PUT of `length` bytes read from `body`: the signed token is
        the credential. Streamed to the blob store `PUT_CHUNK_BYTES` at a time; a body of
        any other length than declared is refused before a byte is read (and one that
        ends early leaves nothing behind)."""
        from itsdangerous import BadSignature

        try:
            grant = _serializer().loads(token or "", max_age=UPLOAD_SECONDS)
        except BadSignature:
            raise NotFound("No such upload.") from None
        if not isinstance(grant, dict) or grant.get("u") != upload_id:
            raise NotFound("No such upload.")
        record = self._record(grant["w"], upload_id)
        declared = record["size_bytes"]
        if length != declared:
            raise ValidationFailed.field("body", f"must be exactly the declared {declared:,} bytes "
                                                 f"(got {length:,})")

        def chunks() -> Iterator[bytes]:
            left = length
            while left > 0:
                chunk = body.read(min(left, PUT_CHUNK_BYTES))
                if not chunk:
                    raise ValidationFailed.field("body", f"ended after {length - left:,} of the declared "
                                                         f"{declared:,} bytes")
                left -= len(chunk)
                yield chunk

        self.ctx.blobs.put_stream(data_key(grant["w"], upload_id), chunks())

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
        """A published upload: its bytes go, and it is no longer pending."""
        self._let_go(workspace_id, upload_id)
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
