"""What a version holds (contract 7b): its page, the Markdown source it was rendered
from, and the files beside it; how they are stored and read back.

- A Markdown version keeps its source (`documents/<ws>/<doc>/<version>.md`) and
  the page rendered from it (`<version>.html`, what the share link serves). The
  4 MiB limit applies to both.
- Files are stored once per workspace by SHA-256 (`files/<ws>/<sha256>`): a file
  unchanged across versions or documents is one object, written once. A reused
  object is "touched" before the version that refers to it commits, so the sweep
  (which frees objects no version refers to, after a grace period) never removes
  a file a write is about to reference.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, TypeVar

from chalicelib.domain import bundles, limits
from chalicelib.domain.markdown import (PageTooLarge, Rendered, TooComplex, WorkBudget, code_css, html_title,
                                        render_body)
from chalicelib.errors import UnsupportedMediaType, ValidationFailed
from chalicelib.ports import BlobNotFound, file_key, file_prefix, source_key, version_key
from chalicelib.ports.records import Document, Version

if TYPE_CHECKING:
    from chalicelib.services.context import Context

log = logging.getLogger(__name__)

HTML_UPLOADS = (".html", ".htm")
MARKDOWN_UPLOADS = (".md", ".markdown")
ZIP_UPLOADS = (".zip",)
UPLOAD_TYPES = HTML_UPLOADS + MARKDOWN_UPLOADS + ZIP_UPLOADS
# Files no version refers to are freed once untouched this long (a write in flight
# touches what it reuses before it commits).
FILE_GRACE_SECONDS = 15 * 60


@dataclass
class Content:
    """A version's content, checked and ready to store."""
    page: bytes
    format: str = "html"
    source: Optional[bytes] = None
    title: Optional[str] = None  # inferred from the page / the first Markdown heading
    files: list[bundles.BundleFile] = field(default_factory=list)
    # Files already stored (a restored or edited version keeps its files): {path, size_bytes, sha256}
    kept_files: list[dict[str, Any]] = field(default_factory=list)
    index_path: Optional[str] = None  # a bundle's page by its name in the zip (index.html, index.md)

    def file_infos(self) -> Optional[list[dict[str, Any]]]:
        return [*self.kept_files, *(f.info() for f in self.files)] or None


def render_markdown(source: str, title: Optional[str] = None,
                    max_body_bytes: Optional[int] = limits.HTML_BYTES) -> Rendered:
    """The complete page of a Markdown source (templates/content/markdown.html). `title`
    (the document's) names the page; when None the first heading does, and
    Rendered.title reports it (None if there is none). 413 as soon as the page is known to
    pass `max_body_bytes`, and 422 "too complex to render" once it has taken
    limits.MARKDOWN_CPU_SECONDS of CPU (None: render it whole, unbounded, as bench/content.py
    does to time it)."""
    from markupsafe import Markup

    from chalicelib import rendering

    try:
        # Stops as soon as the page is known to pass the limit (a dense source renders to
        # several times its size): the work is bounded by the page, not only by the source;
        # and by CPU time (floods of brackets or marks cost markdown-it-py the most).
        body, heading = render_body(source, max_body_bytes, None if max_body_bytes is None
                                    else WorkBudget(limits.MARKDOWN_CPU_SECONDS))
    except PageTooLarge as exc:
        raise limits.rendered_too_large(exc.size_bytes) from None
    except TooComplex:
        raise limits.too_complex_to_render() from None
    page = rendering.page("content/markdown.html", title=title or heading or "Document", body=Markup(body),
                          code_css=Markup(code_css()))
    return Rendered(page, heading)


def _decode(data: bytes, field_name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationFailed.field(field_name, "is not UTF-8 text") from None


def markdown_content(source: bytes, title: Optional[str]) -> Content:
    """Render Markdown source (the callers checked its size: ≤ limits.MARKDOWN_BYTES) into a page
    (≤ 4 MiB, 413 above)."""
    rendered = render_markdown(_decode(source, "html"), title)
    page = limits.encoded_html(rendered.html)
    return Content(page=page, format="markdown", source=source, title=rendered.title)


def html_content(page: bytes, title: Optional[str] = None) -> Content:
    """An HTML page. Its title is looked for only when none is given (`require_title`)."""
    text = _decode(page, "html")
    return Content(page=page, title=None if title else html_title(text))


def build(text: str, fmt: str, title: Optional[str], files: Optional[Sequence[Any]] = None) -> Content:
    """From JSON: `html` (page or Markdown source by `format`) and `files`."""
    data = limits.encoded_html(text)
    content = markdown_content(data, title) if fmt == "markdown" else html_content(data, title)
    if files:
        content.files = bundles.from_json(files)
    return content


def from_upload(filename: str, data: bytes, title: Optional[str]) -> Content:
    """An uploaded file: .html/.htm, .md/.markdown, or a .zip bundle."""
    name = (filename or "").lower()
    if name.endswith(ZIP_UPLOADS):
        archive = bundles.read_zip(data, limits.HTML_BYTES)
        page = limits.checked_size(archive.index)
        content = markdown_content(page, title) if archive.format == "markdown" else html_content(page, title)
        content.files = archive.files
        content.index_path = archive.index_name
        return content
    if name.endswith(UPLOAD_TYPES):
        limits.checked_size(data)
        if name.endswith(MARKDOWN_UPLOADS):
            return markdown_content(data, title)
        return html_content(data, title)
    raise ValidationFailed.field("file", f"must be one of {', '.join(UPLOAD_TYPES)} "
                                         f"(got {filename or 'a file without a name'!r})")


def require_title(given: Optional[str], content: Content) -> str:
    title = given or content.title
    if not title:
        where = ("the Markdown has no heading" if content.format == "markdown" else "the page has no <title> or <h1>")
        raise ValidationFailed.field("title", f"is required: {where} to take it from")
    return title[:500].strip() or title[:500]


def unsupported_type(content_type: str) -> UnsupportedMediaType:
    return UnsupportedMediaType(
        f"Content-Type {content_type or '(none)'} is not accepted here; send application/json, or "
        "multipart/form-data with a `file` part (.html, .htm, .md, .markdown or .zip).")


PARALLEL_BLOBS = 8
T = TypeVar("T")
R = TypeVar("R")


def _each(action: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`action` over `items`, a few at a time; the first failure is raised (after the others end)."""
    if len(items) <= 1:
        return [action(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(PARALLEL_BLOBS, len(items))) as pool:
        return list(pool.map(action, items))


class StoredContent:
    """Objects written for one version: deleted again if its commit is refused."""

    def __init__(self, ctx: Context, workspace_id: str, document_id: str, version_id: str) -> None:
        self.ctx = ctx
        self.workspace_id = workspace_id
        self.page_key = version_key(workspace_id, document_id, version_id)
        self.source_key = source_key(workspace_id, document_id, version_id)
        self.written: list[str] = []

    def put(self, content: Content) -> None:
        blobs = self.ctx.blobs
        if content.source is not None:
            blobs.put_html(self.source_key, content.source)
            self.written.append(self.source_key)
        blobs.put_html(self.page_key, content.page)
        self.written.append(self.page_key)
        self.put_files(content.files)
        self.touch_files(content.kept_files)

    def put_files(self, files: list[bundles.BundleFile]) -> None:
        """Each distinct file once: touched if the workspace has it, else stored. Up to
        PARALLEL_BLOBS at a time (S3 round trips dominate a bundle of many small files)."""
        distinct = list({item.sha256: item for item in files}.values())

        def one(item: bundles.BundleFile) -> Optional[bundles.BundleFile]:
            key = file_key(self.workspace_id, item.sha256)
            if self.ctx.blobs.touch(key):
                return None
            self.ctx.blobs.put_file(key, item.data)
            return item

        for stored in _each(one, distinct):
            if stored is not None:
                self.written.append(file_key(self.workspace_id, stored.sha256))

    def touch_files(self, infos: Sequence[Mapping[str, Any]]) -> None:
        """An edit keeps the version's files: mark them used again before committing."""
        keys = sorted({file_key(self.workspace_id, i["sha256"]) for i in infos})
        _each(self.ctx.blobs.touch, keys)

    def discard(self) -> None:
        for key in self.written:
            try:
                self.ctx.blobs.delete(key)
            except Exception:  # noqa: BLE001 - the sweeps remove what this could not
                log.warning("could not delete unreferenced object", extra={"blob_key": key})
        self.written = []

    def keep(self) -> None:
        self.written = []


def read_source(ctx: Context, doc: Document, version: Version) -> tuple[str, bytes]:
    """(format, source bytes) of a version: Markdown's source, or the HTML itself."""
    fmt = version.format or "html"
    key = (source_key if fmt == "markdown" else version_key)(doc.workspace_id, doc.document_id,
                                                              version.version_id)
    return fmt, ctx.blobs.get_html(key)


def stored_content(ctx: Context, doc: Document, version: Version) -> Content:
    """A stored version's content as it is (page, source, files kept), to publish again."""
    fmt, source = read_source(ctx, doc, version)
    page = source if fmt == "html" else ctx.blobs.get_html(version_key(doc.workspace_id, doc.document_id,
                                                                       version.version_id))
    return Content(page=page, format=fmt, source=source if fmt == "markdown" else None,
                   kept_files=[dict(f) for f in version.files])


def read_file(ctx: Context, workspace_id: str, sha256: str) -> bytes:
    return bytes(ctx.blobs.get_html(file_key(workspace_id, sha256)))


def referenced_files(ctx: Context, workspace_id: str) -> set[str]:
    """SHA-256 of every file some version of a live document refers to."""
    hashes: set[str] = set()
    for doc in ctx.documents.list_all(workspace_id):
        _, versions = ctx.documents.get_with_versions(doc.document_id)
        for version in versions:
            hashes.update(f["sha256"] for f in version.files)
    return hashes


def sweep_files(ctx: Context, workspace_id: str, grace_seconds: int = FILE_GRACE_SECONDS) -> int:
    """Delete the workspace's file objects no version refers to and nothing touched
    within the grace period. Safe to repeat; returns how many went."""
    stored = ctx.blobs.list_keys(file_prefix(workspace_id))
    if not stored:
        return 0
    referenced = referenced_files(ctx, workspace_id)
    now = ctx.clock()
    deleted = 0
    for key, modified in stored:
        if key.rsplit("/", 1)[1] not in referenced and now - modified > grace_seconds:
            try:
                ctx.blobs.delete(key)
                deleted += 1
            except BlobNotFound:
                continue
    return deleted


def delete_older_than(ctx: "Context", root: str, max_age_seconds: float) -> int:
    """Delete the blobs under `root` last written more than `max_age_seconds` ago (the upload
    and download-zip sweeps); returns how many went."""
    now = ctx.clock()
    deleted = 0
    for key, modified in ctx.blobs.list_keys(root):
        if now - modified > max_age_seconds:
            ctx.blobs.delete(key)
            deleted += 1
    return deleted
