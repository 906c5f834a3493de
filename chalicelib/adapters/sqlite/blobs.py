"""Version HTML as files under `<data dir>/blobs/<key>`.

A put is durable before it returns, and so before the metadata commit that refers
to it: write a temporary file in the target folder, fsync it, rename it into
place, fsync the folder (and any folder it had to create). Orphans (a put whose
commit never happened) are found through list_keys and removed with delete, as on
S3 (chalicelib/services/maintenance.py)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Optional

from chalicelib.adapters.sqlite.space import is_full
from chalicelib.ports.errors import BlobNotFound, StorageFull

TEMP_PREFIX = ".tmp-"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileBlobStore:
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root not in path.parents or path.name.startswith(TEMP_PREFIX):
            raise ValueError(f"not a blob key: {key!r}")
        return path

    def _make_dirs(self, folder: Path) -> None:
        """Create folder (and parents), fsyncing each new entry's parent."""
        missing = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for new in reversed(missing):
            try:
                new.mkdir()
            except FileExistsError:
                continue
            _fsync_dir(new.parent)

    def put_html(self, key: str, data: bytes, sha256_b64: Optional[str] = None) -> None:
        self._write(key, data)

    def _write(self, key: str, data: bytes) -> None:
        self.put_stream(key, iter((data,)))

    def put_stream(self, key: str, chunks: Iterable[bytes]) -> None:
        """Each chunk written as it comes (never the whole object in memory) to a
        temporary file that becomes the object only once every chunk arrived: a stream
        that fails half-way (the iterator raises) leaves nothing behind."""
        path = self._path(key)
        try:
            self._make_dirs(path.parent)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX)
        except OSError as exc:
            if is_full(exc):
                raise StorageFull("ENOSPC") from exc
            raise
        try:
            with os.fdopen(fd, "wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)  # nothing half-written is left behind
            if is_full(exc):
                raise StorageFull("ENOSPC") from exc
            raise
        _fsync_dir(path.parent)

    def put_file(self, key: str, data: bytes) -> None:
        self._write(key, data)

    def upload_url(self, key: str, size_bytes: int, expires_seconds: int) -> None:
        return None  # the local server's own upload route receives the bytes

    def download_url(self, key: str, content_type: str, expires_seconds: int,
                     filename: Optional[str] = None) -> None:
        return None  # the local server answers any size itself

    def touch(self, key: str) -> bool:
        try:
            os.utime(self._path(key))
        except FileNotFoundError:
            return False
        return True

    def get_html(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as exc:
            raise BlobNotFound("NoSuchKey") from exc

    def read_stream(self, key: str, chunk_bytes: int = 1 << 20) -> Iterator[bytes]:
        try:
            handle = self._path(key).open("rb")
        except FileNotFoundError as exc:
            raise BlobNotFound("NoSuchKey") from exc
        return self._chunks(handle, chunk_bytes)

    @staticmethod
    def _chunks(handle, chunk_bytes: int) -> Iterator[bytes]:
        with handle:
            while chunk := handle.read(chunk_bytes):
                yield chunk

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def list_keys(self, prefix: str) -> list[tuple[str, float]]:
        return sorted(self.iter_keys(prefix))

    def iter_keys(self, prefix: str):
        """(key, mtime) under prefix, one folder at a time (a document's versions together)."""
        # Walk from the deepest folder the prefix names, then filter by the full prefix.
        start = (self.root / prefix).parent if not prefix.endswith("/") else self.root / prefix
        if not start.resolve().is_relative_to(self.root):
            return
        for folder, dirs, files in os.walk(start):
            dirs.sort()
            for name in sorted(files):
                if name.startswith(TEMP_PREFIX):
                    continue
                path = Path(folder) / name
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    try:
                        yield key, path.stat().st_mtime
                    except FileNotFoundError:
                        continue  # deleted meanwhile

    def delete_prefix(self, prefix: str) -> int:
        keys = [key for key, _ in self.list_keys(prefix)]
        for key in keys:
            self.delete(key)
        folder = self.root / prefix
        if prefix.endswith("/") and folder.is_dir():
            for sub, _dirs, _files in sorted(os.walk(folder), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(sub)  # only empty folders go
                except OSError:
                    pass
        return len(keys)
