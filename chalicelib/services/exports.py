"""Workspace exports (contract 7g, docs/exports.md): a zip of everything a workspace
published, built in the background.

- `start` (owner): stores a running export, if no other export of the workspace runs
  (the store decides atomically: ports/exports.py), and hands it to the background
  (`Context.run_export`: deployed an SQS message to the worker function, locally a
  thread); 429 `rate_limited` while one runs.
- `build` (the worker): streams the zip to the blob store entry by entry (a version's
  page, source and files at a time, never the workspace), then stores the outcome. A build
  that outlives `limits.EXPORT_RUNNING_SECONDS` stops, and an export whose build died
  counts as failed from that deadline on, so nothing holds the workspace's place forever.
- `status` (owner): running / ready / failed; once ready, a URL that serves the zip
  without credentials until `expires_at` (deployed: a presigned S3 GET; the embedded
  store: `/exports/<id>/download` with a signature, `download`).

The zip's layout (docs/exports.md) is `LAYOUT`'s: one folder per document.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
import zipfile
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Mapping, Optional

from chalicelib import config
from chalicelib.domain import bundles, limits
from chalicelib.errors import NotFound, RateLimited, ServiceUnavailable
from chalicelib.models import ActivityEntry, ExportStarted, ExportStatus
from chalicelib.ports import BlobNotFound, source_key, version_key
from chalicelib.ports.records import Document, Export, Version
from chalicelib.services import access, activity, ratelimits
from chalicelib.services.access import Who, requires
from chalicelib.services.content import delete_older_than, read_file
from chalicelib.services.context import Context, rfc3339

log = logging.getLogger("docpub.exports")

EXPORT_ROOT = "exports/"
FORMAT = "docpub-workspace-export"
FORMAT_VERSION = 1
# What the zip stream hands the blob store at a time (at least; one entry's piece may be larger).
CHUNK_BYTES = 1024 * 1024
# A feedback / review / activity page read at a time.
PAGE = 100
# Records stay a day past their last use (then the store's expiry removes them).
RECORD_SECONDS = 24 * 3600
_EXPORT_ID = re.compile(r"^exp_[A-Za-z0-9_-]{16}$")

LAYOUT = """\
manifest.json                                   what the zip holds (counts, documents, format version)
activity.jsonl                                  the workspace's activity log, one entry a line, newest first
documents/<document_id>/document.json           the document (as GET /api/v1/documents/:id) and its versions
documents/<document_id>/versions/<n>/content.html   version n's page as published (a bundle's index page)
documents/<document_id>/versions/<n>/content.md     version n's Markdown source (Markdown versions only)
documents/<document_id>/versions/<n>/files/<path>   version n's files (bundles only), at their paths
documents/<document_id>/feedback.json           every feedback thread with its replies, newest first
documents/<document_id>/reviews.json            every review, newest first
documents/<document_id>/recipients.json         who the link names and who opened it (as GET .../recipients)
documents/<document_id>/provenance/<n>.json     version n's signed statement (as the provenance route answers)
signing-keys.json                               the public keys that signed them (a JWKS, as /.well-known/...)
"""
# The keys every statement verifies against offline (`docpub verify … --keys signing-keys.json`).
SIGNING_KEYS = "signing-keys.json"


def export_key(workspace_id: str, export_id: str) -> str:
    return f"{EXPORT_ROOT}{workspace_id}/{export_id}.zip"


def new_export_id() -> str:
    return "exp_" + secrets.token_urlsafe(12)


# ------------------------------------------------------------------ provenance

def provenance_of(ctx: Context, doc: Document, version: Version) -> Optional[Mapping[str, Any]]:
    """Version -> its provenance answer ({"statement", "signature"}, contract 7g), or None when
    it was made before versions were signed (services/provenance.provenance_for)."""
    from chalicelib.services.provenance import provenance_for

    found = provenance_for(ctx, doc, version)
    return found.model_dump(mode="json") if found is not None else None


# ------------------------------------------------------------------ the signed local URL

def _signature(export_id: str, until_ms: int) -> str:
    key = hashlib.sha256(b"docpub-export\0" + config.secret_key().encode()).digest()
    mac = hmac.new(key, f"{export_id}\0{until_ms}".encode(), hashlib.sha256).digest()[:18]
    return base64.urlsafe_b64encode(mac).decode()


def local_download_url(export: Export) -> str:
    until = export.available_until_ms or 0
    return (f"{config.base_url()}/exports/{export.export_id}/download"
            f"?until={until}&sig={_signature(export.export_id, until)}")


def zip_name(workspace_name: str, when_ms: int) -> str:
    return f"docpub-{bundles.slug(workspace_name, 40)}-{(rfc3339(when_ms) or '')[:10]}.zip"


# ------------------------------------------------------------------ the zip, streamed

class _Sink:
    """What zipfile writes to: kept until taken (never seekable, so zipfile writes each
    entry's sizes after its data and needs nothing back)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.pending = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.pending += len(data)
        return len(data)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        self.pending = 0
        return out


Entry = tuple[str, Iterable[bytes], int]  # (name in the zip, its bytes a piece at a time, size hint)


def zip_stream(entries: Iterable[Entry], when_ms: int = 0) -> Iterator[bytes]:
    """The zip of `entries`, as chunks of about CHUNK_BYTES: an entry's pieces are
    compressed and handed on as they come, so memory holds one piece and one chunk. Every
    entry is dated `when_ms` (UTC; zip times have no zone)."""
    moment = time.gmtime(when_ms // 1000)[:6] if when_ms >= 315_532_800_000 else (1980, 1, 1, 0, 0, 0)
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, pieces, size_hint in entries:
            info = zipfile.ZipInfo(name, date_time=moment)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=size_hint > 1 << 30) as member:
                for piece in pieces:
                    member.write(piece)
                    if sink.pending >= CHUNK_BYTES:
                        yield sink.take()
            if sink.pending >= CHUNK_BYTES:
                yield sink.take()
    yield sink.take()  # the central directory


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode() + b"\n"


def _json_array(items: Iterable[Any]) -> Iterator[bytes]:
    """A JSON array written an item at a time."""
    first = True
    yield b"["
    for item in items:
        yield (b"\n  " if first else b",\n  ") + json.dumps(item, ensure_ascii=False).encode()
        first = False
    yield b"\n]\n"


class _Build:
    """One export's entries, read from storage as the zip asks for them."""

    def __init__(self, ctx: Context, export: Export):
        self.ctx = ctx
        self.export = export
        self.ws = export.workspace_id
        self.counts = {"documents": 0, "versions": 0, "files": 0, "feedback": 0, "replies": 0, "reviews": 0,
                       "activity": 0, "provenance": 0}
        self.documents: list[dict[str, Any]] = []

    def _in_time(self) -> None:
        if self.ctx.now_ms() >= self.export.deadline_ms:
            raise TimeoutError(f"export still building after {limits.EXPORT_RUNNING_SECONDS} s")

    def entries(self) -> Iterator[Entry]:
        from chalicelib.services.document_shapes import summary_model

        for listing in self.ctx.documents.list_all(self.ws):
            self._in_time()
            doc, versions = self.ctx.documents.get_with_versions(listing.document_id)
            if doc is None or doc.deleting or doc.workspace_id != self.ws:
                continue  # deleted since it was listed
            yield from self._document(doc, versions, summary_model(doc).model_dump(mode="json"))
        yield "activity.jsonl", self._activity(), 0
        yield SIGNING_KEYS, [_json(self._signing_keys())], 0
        yield "manifest.json", [_json(self._manifest())], 0

    def _signing_keys(self) -> dict[str, Any]:
        """The JWKS of /.well-known/docpub-signing-keys.json, read after every statement was
        written: each one verifies offline against the zip alone (`docpub verify … --keys`)."""
        from chalicelib.services.provenance import key_set

        return key_set(self.ctx).model_dump(mode="json")

    def _document(self, doc: Document, versions: list[Version], summary: dict[str, Any]) -> Iterator[Entry]:
        from chalicelib.services.document_shapes import version_model

        folder = f"documents/{doc.document_id}"
        self.counts["documents"] += 1
        listed = []
        for version in versions:
            self._in_time()
            self.counts["versions"] += 1
            base = f"{folder}/versions/{version.number}"
            info = {**version_model(version).model_dump(mode="json"), "format": version.format or "html",
                    "content": f"{base}/content.html"}
            page_key = version_key(doc.workspace_id, doc.document_id, version.version_id)
            yield f"{base}/content.html", [self.ctx.blobs.get_html(page_key)], version.size_bytes
            if version.format == "markdown":
                info["source"] = f"{base}/content.md"
                yield (f"{base}/content.md",
                       [self.ctx.blobs.get_html(source_key(doc.workspace_id, doc.document_id, version.version_id))],
                       0)
            for file in version.files:
                self.counts["files"] += 1
                yield (f"{base}/files/{file['path']}", [read_file(self.ctx, self.ws, str(file["sha256"]))],
                       int(file["size_bytes"]))
            statement = provenance_of(self.ctx, doc, version)
            if statement is not None:
                self.counts["provenance"] += 1
                info["provenance"] = f"{folder}/provenance/{version.number}.json"
                yield info["provenance"], [_json(statement)], 0
            listed.append(info)
        audience = {"passphrase_protected": bool(doc.passphrase_hash), "share_recipients": list(doc.share_recipients)}
        yield f"{folder}/document.json", [_json({**summary, **audience, "versions": listed})], 0
        yield f"{folder}/recipients.json", [_json(self._recipients(doc))], 0
        yield f"{folder}/feedback.json", _json_array(self._feedback(doc.document_id)), 0
        yield f"{folder}/reviews.json", _json_array(self._reviews(doc.document_id)), 0
        self.documents.append({"document_id": doc.document_id, "title": doc.title, "folder": f"{folder}/",
                               "versions": [v.number for v in versions]})

    def _recipients(self, doc: Document) -> dict[str, Any]:
        """Who a `recipients` link names and who opened it, as GET …/recipients answers."""
        from chalicelib.services.recipients import RecipientService

        return {"recipients": [r.model_dump(mode="json") for r in RecipientService(self.ctx).listed(doc)]}

    def _feedback(self, document_id: str) -> Iterator[dict[str, Any]]:
        from chalicelib.services.feedback import feedback_model

        cursor: Optional[str] = None
        while True:
            items, cursor = self.ctx.feedback.page(self.ws, document_id, None, PAGE, cursor)
            replies = self.ctx.feedback.replies([f.feedback_id for f in items]) if items else {}
            for item in items:
                thread = replies.get(item.feedback_id, [])
                self.counts["feedback"] += 1
                self.counts["replies"] += len(thread)
                yield feedback_model(item, thread).model_dump(mode="json")
            if not cursor:
                return

    def _reviews(self, document_id: str) -> Iterator[dict[str, Any]]:
        from chalicelib.services.reviews import review_model

        cursor: Optional[str] = None
        while True:
            items, cursor = self.ctx.reviews.page(document_id, PAGE, cursor)
            for item in items:
                self.counts["reviews"] += 1
                yield review_model(item).model_dump(mode="json")
            if not cursor:
                return

    def _activity(self) -> Iterator[bytes]:
        since = self.ctx.now_ms() - limits.ACTIVITY_DAYS * 86_400_000
        cursor: Optional[str] = None
        while True:
            entries, cursor = self.ctx.people.activity_page(self.ws, since, PAGE, cursor)
            for entry in entries:
                self.counts["activity"] += 1
                line = ActivityEntry.model_validate(activity.entry_view(entry)).model_dump(mode="json")
                yield json.dumps(line, ensure_ascii=False).encode() + b"\n"
            if not cursor:
                return

    def _manifest(self) -> dict[str, Any]:
        workspace = self.ctx.workspaces.get(self.ws)
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "export_id": self.export.export_id,
                "workspace": {"id": self.ws, "name": workspace.name if workspace else None,
                              "plan": workspace.plan if workspace else None},
                "exported_at": rfc3339(self.ctx.now_ms()), "counts": self.counts,
                "provenance": True, "signing_keys": SIGNING_KEYS, "documents": self.documents}


class _Counted:
    def __init__(self, chunks: Iterable[bytes]):
        self.chunks = chunks
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.size += len(chunk)
            yield chunk


# ------------------------------------------------------------------ the service

def _not_found(export_id: str) -> NotFound:
    shown = export_id if _EXPORT_ID.match(export_id or "") else "with that id"
    return NotFound(f"No export {shown} in this workspace (an export answers for an hour once ready).")


class ExportService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @requires("start_export")
    def start(self, who: Who) -> ExportStarted:
        """Start an export of the caller's workspace; 429 while another one runs."""
        actor = access.actor(self.ctx, who)
        now_ms = self.ctx.now_ms()
        kind, actor_id, _surface = activity.actor_of(actor)
        export = Export(export_id=new_export_id(), workspace_id=actor.workspace_id, status="running",
                        created_ms=now_ms, deadline_ms=now_ms + limits.EXPORT_RUNNING_SECONDS * 1000,
                        expires_at=now_ms // 1000 + limits.EXPORT_RUNNING_SECONDS + RECORD_SECONDS,
                        requested_by=f"{kind}:{actor_id}")
        budget = ratelimits.scope_key("exports", actor.workspace_id)
        ratelimits.check(self.ctx, budget, limits.EXPORTS_PER_WORKSPACE, limits.REFUSALS["exports"])
        running = self.ctx.exports.start(export, now_ms)
        if running is None:  # started: counted (a start refused because one runs is not)
            ratelimits.record(self.ctx, budget, limits.EXPORTS_PER_WORKSPACE, limits.REFUSALS["exports"])
        else:
            left = -(-(running.deadline_ms - now_ms) // 1000)
            raise RateLimited(min(limits.EXPORT_RETRY_SECONDS, max(1, left)), (
                f"An export of this workspace is running ({running.export_id}); one runs at a time. Follow it "
                f"with GET /api/v1/exports/{running.export_id}, or retry once it has finished."))
        try:
            self.ctx.run_export(export.export_id)
        except Exception as exc:  # noqa: BLE001 - nobody will build it: it fails now, not at its deadline
            log.error("export %s not handed to the worker: %s", export.export_id, type(exc).__name__)
            self.ctx.exports.finish(replace(export, status="failed", finished_ms=now_ms, error="not_started"))
            raise ServiceUnavailable("The export could not be started; retry shortly.") from None
        activity.record(self.ctx, actor, actor.workspace_id, "workspace.export", export.export_id)
        return ExportStarted(export_id=export.export_id)

    @requires("get_export")
    def status(self, who: Who, export_id: str) -> ExportStatus:
        actor = access.actor(self.ctx, who)
        export = self._find(actor.workspace_id, export_id)
        now_ms = self.ctx.now_ms()
        if export.status == "running":
            return ExportStatus(status="running" if export.running_at(now_ms) else "failed")
        if export.status == "failed" or export.blob_key is None:
            return ExportStatus(status="failed")
        until = export.available_until_ms or 0
        if until <= now_ms:
            raise _not_found(export_id)
        workspace = self.ctx.workspaces.get(export.workspace_id)
        filename = zip_name(workspace.name if workspace else "workspace", export.finished_ms or now_ms)
        url = self.ctx.blobs.download_url(export.blob_key, "application/zip", max(1, (until - now_ms) // 1000),
                                          filename=filename)
        return ExportStatus(status="ready", download_url=url or local_download_url(export),
                            expires_at=rfc3339(until))

    def _find(self, workspace_id: str, export_id: str) -> Export:
        if not isinstance(export_id, str) or not _EXPORT_ID.match(export_id):
            raise _not_found(export_id)  # never a storage call for a malformed id
        export = self.ctx.exports.get(export_id)
        if export is None or export.workspace_id != workspace_id:
            raise _not_found(export_id)
        return export

    # ---------------------------------------------------------------- the background side

    def build(self, export_id: str) -> Optional[Export]:
        """Build a started export (the worker's job; safe to repeat: an export that is no
        longer running is left as it is). The export as it ends, or None if unknown."""
        export = self.ctx.exports.get(export_id)
        if export is None or not export.running_at(self.ctx.now_ms()):
            return export
        key = export_key(export.workspace_id, export.export_id)
        stream = _Counted(zip_stream(_Build(self.ctx, export).entries(), self.ctx.now_ms()))
        try:
            self.ctx.blobs.put_stream(key, stream)
        except Exception as exc:  # noqa: BLE001 - any failure is the export's outcome, logged
            log.error("export %s failed: %s", export_id, type(exc).__name__, exc_info=True)
            finished = replace(export, status="failed", finished_ms=self.ctx.now_ms(), error=type(exc).__name__)
        else:
            now_ms = self.ctx.now_ms()
            finished = replace(export, status="ready", finished_ms=now_ms, blob_key=key, size_bytes=stream.size,
                               available_until_ms=now_ms + limits.EXPORT_AVAILABLE_SECONDS * 1000,
                               expires_at=now_ms // 1000 + limits.EXPORT_AVAILABLE_SECONDS + RECORD_SECONDS)
        if not self.ctx.exports.finish(finished):
            return self.ctx.exports.get(export_id)
        self._sweep(export.workspace_id)
        return finished

    def _sweep(self, workspace_id: str) -> None:
        """The workspace's zips past their hour go (deployed, the bucket's lifecycle rule
        also removes any left behind)."""
        try:
            delete_older_than(self.ctx, f"{EXPORT_ROOT}{workspace_id}/", limits.EXPORT_AVAILABLE_SECONDS + 60)
        except Exception:  # noqa: BLE001 - best effort: the export itself is done
            log.warning("old export zips not swept", exc_info=True)

    def download(self, export_id: str, until: str, signature: str) -> ExportFile:
        """The embedded store's download URL: the zip of a ready export whose signed URL is
        still valid; 404 for anything else (a bad or old signature too)."""
        try:
            until_ms = int(until)
        except (TypeError, ValueError):
            raise _not_found(export_id) from None
        if (not _EXPORT_ID.match(export_id or "") or not signature
                or not hmac.compare_digest(signature.encode(), _signature(export_id, until_ms).encode())):
            raise _not_found(export_id)
        export = self.ctx.exports.get(export_id)
        now_ms = self.ctx.now_ms()
        if (export is None or export.status != "ready" or export.blob_key is None
                or export.available_until_ms != until_ms or until_ms <= now_ms):
            raise _not_found(export_id)
        workspace = self.ctx.workspaces.get(export.workspace_id)
        return ExportFile(zip_name(workspace.name if workspace else "workspace", export.finished_ms or now_ms),
                          export.blob_key, export.size_bytes or 0)

    def read(self, file: ExportFile) -> bytes:
        """The zip whole (the in-process app's route; `make run` streams it: `chunks`)."""
        return b"".join(self.chunks(file))

    def chunks(self, file: ExportFile) -> Iterator[bytes]:
        try:
            return self.ctx.blobs.read_stream(file.key)
        except BlobNotFound:
            raise NotFound("This export's zip is gone; start a new export.") from None


@dataclass(frozen=True)
class ExportFile:
    """A ready export's zip, as the embedded store's download route serves it."""
    filename: str
    key: str
    size_bytes: int


__all__ = ["ExportService", "ExportFile", "LAYOUT", "export_key", "zip_stream", "EXPORT_ROOT"]
