"""The embedded adapter: SQLite (`<data dir>/docpub.sqlite3`) for records and the
filesystem (`<data dir>/blobs/`) for version HTML. Used by `make run` and the
admin CLI; several processes may open the same folder (SQLite's locking)."""
from __future__ import annotations

import functools
from pathlib import Path

from chalicelib.adapters.sqlite.layout import BLOBS_FOLDER, DATABASE_FILE


class SqliteHealth:
    def __init__(self, db, blobs):
        self.db, self.blobs = db, blobs

    def check(self) -> None:
        """StorageUnavailable (or any error) when the store cannot be used; StorageFull
        when it can be read but the disk is full (writes would be refused)."""
        from chalicelib.ports.errors import StorageFull

        self.db.one("SELECT COUNT(*) AS n FROM workspaces")
        if not self.blobs.root.is_dir():
            raise OSError("blob folder missing")
        if not self.db.reserve.healthy():
            raise StorageFull("disk full")


def open_storage(data_dir: str | Path):
    """(Database, FileBlobStore) in data_dir, created or migrated as needed; a
    data folder in the old snapshot format is imported first (once)."""
    from chalicelib.adapters.sqlite.blobs import FileBlobStore
    from chalicelib.adapters.sqlite.db import Database
    from chalicelib.adapters.sqlite.importer import import_snapshot

    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    import_snapshot(folder)
    return Database(folder / DATABASE_FILE), FileBlobStore(folder / BLOBS_FOLDER)


_SHARED_OPENED: list = []


@functools.lru_cache(maxsize=None)
def _shared(data_dir: str):
    opened = open_storage(data_dir)
    _SHARED_OPENED.append(opened)
    return opened


def close_shared() -> None:
    """Close the shared databases' connections of this thread and forget them (tests)."""
    if _shared.cache_info().currsize:
        for db, _blobs in list(_SHARED_OPENED):
            db.close()
    _SHARED_OPENED.clear()
    _shared.cache_clear()


def repositories(data_dir: str | Path, shared: bool = True):
    """One of each repository over the database and blobs in `data_dir` (opened now: a
    broken folder fails here), each built (its module imported) when first used; `shared`:
    opened once per process and folder (else anew: tests)."""
    from chalicelib.adapters import repository_factories
    from chalicelib.ports.repositories import lazy_repositories

    db, blobs = _shared(str(Path(data_dir).resolve())) if shared else open_storage(data_dir)
    return lazy_repositories("sqlite", {**repository_factories(__name__, db), "blobs": lambda: blobs,
                                        "health": lambda: SqliteHealth(db, blobs)})
