"""Bundles: a page with files beside it (contract 7b). Pure rules, no I/O.

A bundle arrives as JSON `files` next to the page, or as a `.zip` whose root (or
single top folder) holds `index.html` or `index.md`. Paths are relative,
`/`-separated and at most 255 characters; `..`, absolute paths, backslashes,
symlinks and duplicates are refused naming the path, and two paths that are one
file where case and Unicode form are ignored (macOS, Windows) naming both. A zip is read
entry by entry with a running count of the bytes actually inflated, so a zip bomb
is refused after at most the limit (plus one read chunk) was inflated, whatever
its directory claims, and before anything is stored.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import io
import mimetypes
import posixpath
import re
import stat
import unicodedata
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from chalicelib.domain.limits import BUNDLE_MAX_DEPTH
from chalicelib.errors import BundleTooLarge, ValidationFailed

if TYPE_CHECKING:  # zipfile (and shutil, bz2, lzma) only where an archive is read or written
    import zipfile

MAX_FILES = 200
MAX_BYTES = 32 * 1024 * 1024
MAX_PATH = 255
# Segments deep a file may sit: domain/limits.BUNDLE_MAX_DEPTH (the share routes are made
# from it at import, where this module is not needed).
MAX_DEPTH = BUNDLE_MAX_DEPTH
INDEX_NAMES = ("index.html", "index.md")
READ_CHUNK = 64 * 1024
# A zip's central directory lists at most this many entries before it is refused
# without reading (files + the page + folders + a little slack for __MACOSX noise).
MAX_ZIP_ENTRIES = 4 * MAX_FILES
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Noise archivers add; skipped, never stored.
_JUNK = re.compile(r"(^|/)(__MACOSX/|\.DS_Store$|Thumbs\.db$|desktop\.ini$)")


@dataclass(frozen=True)
class BundleFile:
    path: str
    data: bytes
    sha256: str

    @property
    def size_bytes(self) -> int:
        return len(self.data)

    def info(self) -> dict[str, Any]:
        return {"path": self.path, "size_bytes": len(self.data), "sha256": self.sha256}


def make_file(path: str, data: bytes) -> BundleFile:
    return BundleFile(path, data, hashlib.sha256(data).hexdigest())


def too_large(what: str) -> BundleTooLarge:
    return BundleTooLarge(
        f"{what}; a version holds at most {MAX_FILES} files besides the page and "
        f"{MAX_BYTES // (1024 * 1024)} MiB ({MAX_BYTES:,} bytes) uncompressed.",
        {"limit_files": MAX_FILES, "limit_bytes": MAX_BYTES})


def bad_path(field: str, path: str, why: str) -> ValidationFailed:
    shown = path if len(path) <= 80 else path[:77] + "..."
    return ValidationFailed(f"{field}: {shown!r} {why}",
                            {"fields": [{"field": field, "message": f"{shown!r} {why}"}], "path": shown})


def check_path(path: str, field: str = "files") -> str:
    """The path if it follows the rules, else 422 naming it."""
    if not path:
        raise bad_path(field, path, "is empty")
    if len(path) > MAX_PATH:
        raise bad_path(field, path, f"is longer than {MAX_PATH} characters")
    if "\\" in path:
        raise bad_path(field, path, "contains a backslash; use / between folders")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise bad_path(field, path, "is absolute; give a path relative to the page")
    if _CONTROL.search(path):
        raise bad_path(field, path, "contains a control character")
    parts = path.split("/")
    if any(part in ("..", ".") for part in parts):
        raise bad_path(field, path, "contains '.' or '..'; paths stay inside the bundle")
    if any(part == "" for part in parts):
        raise bad_path(field, path, "has an empty folder name (// or a trailing /)")
    if len(parts) > MAX_DEPTH:
        raise bad_path(field, path, f"is more than {MAX_DEPTH} levels deep")
    if "?" in path or "#" in path:
        raise bad_path(field, path, "contains ? or #, which a relative link cannot reach")
    return path


def fold(path: str) -> str:
    """The path as a case-insensitive, normalising file system sees it (Unicode's compatibility
    caseless match): `A.txt` and `a.txt`, `café` in either spelling, `ﬁle` and `file`, `Ａ` and `a`
    are one name on macOS and Windows, so the downloaded zip could not hold both."""
    once = unicodedata.normalize("NFKC", unicodedata.normalize("NFD", path).casefold())
    return unicodedata.normalize("NFKC", once.casefold())


def _clash(fields: Sequence[str], first: str, second: str, why: str) -> ValidationFailed:
    def shown(path: str) -> str:
        return path if len(path) <= 80 else path[:77] + "..."

    message = f"{shown(first)!r} and {shown(second)!r} {why}"
    return ValidationFailed(f"{fields[0]}: {message}",
                            {"fields": [{"field": fields[0], "message": message},
                                        {"field": fields[1], "message": message}],
                             "path": shown(second), "paths": [shown(first), shown(second)]})


def _no_duplicates(paths: Sequence[str], field: str, fields: Optional[Sequence[str]] = None) -> None:
    """422 naming both paths when two are one file on a case-insensitive system, or one is
    a file where the other needs a folder of that name (no system can extract both)."""
    field_of = (lambda i: fields[i]) if fields is not None else (lambda i: field)
    files: dict[str, int] = {}
    folders: dict[str, int] = {}
    for index, path in enumerate(paths):
        key = fold(path)
        if key in files:
            earlier = paths[files[key]]
            if unicodedata.normalize("NFC", earlier) == unicodedata.normalize("NFC", path):
                raise bad_path(field_of(index), path, "appears more than once")
            raise _clash((field_of(files[key]), field_of(index)), earlier, path,
                         "are the same path where case and Unicode form are ignored (macOS, Windows); "
                         "rename one")
        if key in folders:
            first = folders[key]
            raise _clash((field_of(first), field_of(index)), paths[first], path,
                         "clash: the second is a file where the first needs a folder of that name")
        parts = key.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in files:
                first = files[folder]
                raise _clash((field_of(first), field_of(index)), paths[first], path,
                             "clash: the first is a file where the second needs a folder of that name")
            folders.setdefault(folder, index)
        files[key] = index


def check_limits(files: list[BundleFile]) -> None:
    if len(files) > MAX_FILES:
        raise too_large(f"The bundle has {len(files):,} files")
    total = sum(f.size_bytes for f in files)
    if total > MAX_BYTES:
        raise too_large(f"The bundle's files are {total:,} bytes")


def from_json(entries: Sequence[Any], index_names: Iterable[str] = ()) -> list[BundleFile]:
    """JSON `files` (FileInput models) as BundleFiles, every rule checked."""
    if len(entries) > MAX_FILES:
        raise too_large(f"The request has {len(entries):,} files")
    files: list[BundleFile] = []
    total = 0
    for index, entry in enumerate(entries):
        field = f"files.{index}.path"
        path = check_path(entry.path, field)
        if entry.encoding == "base64":
            try:
                data = base64.b64decode(entry.content, validate=True)
            except (binascii.Error, ValueError):
                raise ValidationFailed.field(f"files.{index}.content", "is not valid base64") from None
        else:
            try:
                data = entry.content.encode("utf-8")
            except UnicodeEncodeError:
                raise ValidationFailed.field(f"files.{index}.content", "is not valid UTF-8 text") from None
        total += len(data)
        if total > MAX_BYTES:
            raise too_large(f"The files add up to more than {MAX_BYTES:,} bytes")
        files.append(make_file(path, data))
    _no_duplicates([f.path for f in files], "files", [f"files.{i}.path" for i in range(len(files))])
    for index, item in enumerate(files):
        if fold(item.path) in INDEX_NAMES:
            raise bad_path(f"files.{index}.path", item.path, "is the page's own name; send the page as `html`")
    return files


@dataclass(frozen=True)
class Archive:
    """A zip's page (`index.html` or `index.md`) and the files beside it."""
    index_name: str
    index: bytes
    files: list[BundleFile]

    @property
    def format(self) -> str:
        return "markdown" if self.index_name.endswith(".md") else "html"


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16)


def _root(names: list[str]) -> str:
    """"" when an index page is at the root, "<top>/" when the single top folder has it."""
    if any(name in INDEX_NAMES for name in names):
        return ""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1:
        top = tops.pop() + "/"
        if any(name[len(top):] in INDEX_NAMES for name in names if name.startswith(top)):
            return top
    raise ValidationFailed.field("file", "the archive has no index.html or index.md at its root or in "
                                         "its single top folder")


def read_zip(data: bytes, html_limit: int, field: str = "file") -> Archive:
    """Check and inflate an archive. Everything is refused before it is stored:
    413 past the limits (counting inflated bytes as they come, whatever the
    directory declares), 422 naming the entry for unsafe paths, symlinks,
    duplicates, encryption, an entry that inflates past its declared size or fails
    its CRC, and for an archive with no index page."""
    import zipfile

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, NotImplementedError):
        raise ValidationFailed.field(field, "is not a readable .zip archive") from None
    if len(infos) > MAX_ZIP_ENTRIES:
        raise too_large(f"The archive lists {len(infos):,} entries")
    entries = []
    for info in infos:
        name = info.filename
        if _is_symlink(info):
            raise bad_path(field, name, "is a symbolic link; put the file itself in the archive")
        if info.is_dir() or _JUNK.search(name):
            continue
        if info.flag_bits & 0x1:
            raise bad_path(field, name, "is encrypted; send an archive without a password")
        check_path(name, field)
        entries.append(info)
    names = [i.filename for i in entries]
    _no_duplicates(names, field)
    root = _root(names)
    # Files besides the page: counted up front by the directory (cheap), then by what inflates.
    if len(entries) - 1 > MAX_FILES:
        raise too_large(f"The archive has {len(entries) - 1:,} files besides the page")
    budget = MAX_BYTES + html_limit
    index_name: Optional[str] = None
    index: Optional[bytes] = None
    files: list[BundleFile] = []
    inflated = 0
    for info in entries:
        if root and not info.filename.startswith(root):
            continue
        path = info.filename[len(root):]
        chunks = []
        size = 0
        try:
            with archive.open(info) as stream:
                while True:
                    chunk = stream.read(READ_CHUNK)
                    if not chunk:
                        break
                    size += len(chunk)
                    inflated += len(chunk)
                    if size > info.file_size:
                        raise bad_path(field, info.filename, "inflates past the size the archive declares "
                                                             f"({info.file_size:,} bytes)")
                    if inflated > budget:
                        raise too_large("The archive inflates past the limit")
                    chunks.append(chunk)
        except zipfile.BadZipFile as exc:
            # zipfile stops inflating at the declared size, so an entry that would inflate
            # past it ends with a CRC mismatch, like a damaged one.
            if "CRC" in str(exc):
                raise bad_path(field, info.filename, "fails its CRC check: it is damaged or inflates past "
                                                     "the size the archive declares") from None
            raise bad_path(field, info.filename, "cannot be read (the archive is damaged)") from None
        except (zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError):
            raise bad_path(field, info.filename, "cannot be read (damaged or an unsupported compression)") from None
        if size != info.file_size:
            raise bad_path(field, info.filename, "is shorter than the size the archive declares")
        content = b"".join(chunks)
        if path in INDEX_NAMES and index is None and (path == "index.html" or "index.html" not in
                                                       [n[len(root):] for n in names]):
            index_name, index = path, content
            continue
        files.append(make_file(path, content))
    if index is None or index_name is None:  # pragma: no cover - _root found one
        raise ValidationFailed.field(field, "the archive has no index.html or index.md")
    check_limits(files)
    return Archive(index_name, index, files)


def write_zip(index_name: str, index: bytes, files: list[tuple[str, bytes]]) -> bytes:
    """A download: the page and the files at their paths, at the archive's root."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        archive.writestr(index_name, index)
        for path, data in files:
            archive.writestr(path, data)
    return out.getvalue()


# ------------------------------------------------------------------ serving

_EXTRA_TYPES = {
    ".md": "text/markdown; charset=utf-8", ".markdown": "text/markdown; charset=utf-8",
    ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
    ".svg": "image/svg+xml", ".json": "application/json", ".txt": "text/plain; charset=utf-8",
    ".csv": "text/csv; charset=utf-8", ".woff2": "font/woff2", ".woff": "font/woff", ".webp": "image/webp",
    ".wasm": "application/wasm", ".ico": "image/x-icon", ".xml": "application/xml",
}


def content_type(path: str) -> str:
    """Typed by extension (served with nosniff); unknown: application/octet-stream."""
    ext = posixpath.splitext(path)[1].lower()
    if ext in _EXTRA_TYPES:
        return _EXTRA_TYPES[ext]
    guessed, _ = mimetypes.guess_type("x" + ext)
    return guessed or "application/octet-stream"


def compressible(path: str) -> bool:
    kind = content_type(path)
    return kind.startswith("text/") or kind in ("image/svg+xml", "application/json", "application/xml",
                                                "application/wasm")


def slug(title: str, limit: int = 80) -> str:
    """Download file name: lowercase ASCII letters, digits and hyphens, at most 80; `document` if empty."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    text = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")[:limit].strip("-")
    return text or "document"
