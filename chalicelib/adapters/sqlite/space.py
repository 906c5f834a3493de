"""A full disk on the embedded store (API contract section 4): writes answer 507,
reads and deletes keep working, health says degraded.

SQLite needs free space to delete too (the WAL grows before a checkpoint
shrinks anything), so the data folder keeps a reserve: a file of
`DOCPUB_DISK_RESERVE_BYTES` (default 1 MiB) allocated on the disk. A delete
that meets a full disk releases the reserve and tries again; the reserve is
made again once there is room for it twice over. A missing reserve, or less
free space than the reserve, is what health reports as degraded.
"""
from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

from chalicelib import config

RESERVE_FILE = "disk-reserve"
FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def is_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def free_bytes(folder: Path) -> int:
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize


class Reserve:
    def __init__(self, folder: Path):
        self.path = Path(folder) / RESERVE_FILE
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return max(0, config.disk_reserve_bytes())

    def ensure(self) -> bool:
        """Make the reserve if it is missing and the disk has room for it twice over.
        True when the reserve is in place (or none is wanted)."""
        size = self.size
        if size == 0:
            return True
        with self._lock:
            try:
                if self.path.exists() and self.path.stat().st_size >= size:
                    return True
                if free_bytes(self.path.parent) < 2 * size:
                    return False
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
                try:
                    try:
                        os.posix_fallocate(fd, 0, size)  # real blocks, not a sparse file
                    except (AttributeError, OSError) as exc:
                        if is_full(exc):
                            raise
                        os.write(fd, b"\0" * size)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                return True
            except OSError:
                self.path.unlink(missing_ok=True)
                return False

    def release(self) -> bool:
        """Give the reserve's space back (a delete needs it); True if there was one."""
        with self._lock:
            try:
                self.path.unlink()
                return True
            except FileNotFoundError:
                return False

    def healthy(self) -> bool:
        """In place (made now if it can be), and the disk has at least its size free besides."""
        if not self.ensure():
            return False
        return self.size == 0 or free_bytes(self.path.parent) >= self.size
