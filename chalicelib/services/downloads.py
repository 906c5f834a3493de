"""Downloads (contract 7b): a version as one file to save, `.html`, `.md` or, for a
bundle, a `.zip` of the index page and the files at their paths.

A Lambda response carries at most 6 MB, and a binary answer goes out base64-encoded
(4/3 larger), so a file over `limits.INLINE_RESPONSE_BYTES` cannot be answered by the
function when deployed. The store decides (`BlobStore.download_url`): S3 answers a
short-lived presigned GET that names the file (`Content-Disposition: attachment`) and
its type, and the surface redirects to it (302); the embedded store answers None and
the local server sends the bytes itself, whatever their size.

A bundle's zip is assembled on the fly. When it is too large to answer inline and the
store serves URLs, it is built once into `downloads/<workspace>/<sha256 of what it
holds>.zip` (the same version, or another version with the same page and files, reuses
it), touched on every download, and swept an hour after its last use
(`sweep_downloads`, run by maintenance.sweep_orphans).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import bundles, limits
from chalicelib.ports import source_key, version_key
from chalicelib.ports.records import Document, Version
from chalicelib.services.content import delete_older_than, read_file, read_source

if TYPE_CHECKING:
    from chalicelib.services.context import Context

DOWNLOAD_ROOT = "downloads/"
# How long a redirect's presigned URL stays valid: only long enough to follow it.
REDIRECT_SECONDS = 60
# A cached zip no download used for this long is deleted.
CACHE_SECONDS = 3600


@dataclass(frozen=True)
class Download:
    """A file to save: its bytes, or (`url`) where storage serves it directly."""
    filename: str
    content_type: str
    data: bytes = b""
    url: Optional[str] = None


def zip_key(workspace_id: str, digest: str) -> str:
    return f"{DOWNLOAD_ROOT}{workspace_id}/{digest}.zip"


def _elsewhere(ctx: Context, key: str, filename: str, content_type: str) -> Optional[str]:
    return ctx.blobs.download_url(key, content_type, REDIRECT_SECONDS, filename=filename)


def package(ctx: Context, doc: Document, version: Version) -> Download:
    """A version as one file: the page (.html), the Markdown source (.md), or for a
    bundle a .zip of the index page (index.html or index.md) and the files at their
    paths; redirected to storage when too large for a Lambda response (see above)."""
    fmt, source = read_source(ctx, doc, version)
    name = bundles.slug(doc.title)
    files = version.files
    if not files:
        filename, content_type = ((f"{name}.md", "text/markdown; charset=utf-8") if fmt == "markdown"
                                  else (f"{name}.html", "text/html; charset=utf-8"))
        if len(source) > limits.INLINE_RESPONSE_BYTES:
            key = (source_key if fmt == "markdown" else version_key)(doc.workspace_id, doc.document_id,
                                                                      version.version_id)
            url = _elsewhere(ctx, key, filename, content_type)
            if url is not None:
                return Download(filename, content_type, url=url)
        return Download(filename, content_type, source)
    index_name = "index.md" if fmt == "markdown" else "index.html"
    filename = f"{name}.zip"

    def build() -> bytes:
        contents = [(f["path"], read_file(ctx, doc.workspace_id, f["sha256"])) for f in files]
        return bundles.write_zip(index_name, source, contents)

    if len(source) + sum(int(f["size_bytes"]) for f in files) > limits.INLINE_RESPONSE_BYTES:
        # What the archive holds, by content: equal manifests make equal archives.
        manifest = json.dumps([index_name, hashlib.sha256(source).hexdigest(),
                               [[f["path"], f["sha256"]] for f in files]], separators=(",", ":"))
        key = zip_key(doc.workspace_id, hashlib.sha256(manifest.encode()).hexdigest())
        url = _elsewhere(ctx, key, filename, "application/zip")
        if url is not None:
            if not ctx.blobs.touch(key):  # built before: just marked used again
                ctx.blobs.put_file(key, build())
            return Download(filename, "application/zip", url=url)
    return Download(filename, "application/zip", build())


def sweep_downloads(ctx: Context, max_age_seconds: int = CACHE_SECONDS) -> int:
    """Delete cached zips no download used for `max_age_seconds`; returns how many went."""
    return delete_older_than(ctx, DOWNLOAD_ROOT, max_age_seconds)


__all__ = ["Download", "package", "sweep_downloads", "zip_key", "DOWNLOAD_ROOT"]
