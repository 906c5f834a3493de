"""One-time import of a data folder in the old local-stack snapshot format
(scripts/snapshot.py before issue 14: `dynamodb-items.json` holding every table
item in DynamoDB JSON, plus `s3/<key>` files) into SQLite + blob files.

Blobs are copied first (fsync'd), then every record is inserted in one
transaction; only after the commit are the old files renamed (to
`*.imported`), never deleted. A re-run after a crash in between inserts nothing
twice (INSERT OR IGNORE) and finishes the renames."""
from __future__ import annotations

import fcntl
import json
import logging
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional

log = logging.getLogger(__name__)

ITEMS_FILE = "dynamodb-items.json"
OBJECTS_FOLDER = "s3"
IMPORTED_SUFFIX = ".imported"


def _value(attr: dict) -> Any:
    (kind, raw), = attr.items()
    if kind == "S" or kind == "B":
        return raw
    if kind == "N":
        number = Decimal(raw)
        return int(number) if number == number.to_integral_value() else float(number)
    if kind == "BOOL":
        return bool(raw)
    if kind == "NULL":
        return None
    if kind == "L":
        return [_value(v) for v in raw]
    if kind == "M":
        return {k: _value(v) for k, v in raw.items()}
    if kind in ("SS", "BS"):
        return list(raw)
    if kind == "NS":
        return [_value({"N": v}) for v in raw]
    raise ValueError(f"unknown DynamoDB type {kind}")


def _item(raw: dict) -> dict:
    return {k: _value(v) for k, v in raw.items()}


# (table, columns, PK prefix, SK or SK prefix) in foreign-key order
_TABLES = [
    ("workspaces", ("id", "name", "plan", "created_ms", "document_count", "key_count", "brand_name",
                    "brand_tagline"), "WS#", "WS"),
    ("api_keys", ("key_id", "workspace_id", "key_hash", "name", "prefix", "created_ms", "revoked_at",
                  "last_used_at", "writes", "writes_seq"), "KEY#", "KEY"),
    ("documents", ("document_id", "workspace_id", "title", "description", "share_id", "created_ms", "updated_ms",
                   "version_count", "latest_version_id", "latest_size", "open_feedback_count", "passphrase_hash",
                   "passphrase_epoch", "deleting"), "DOC#", "META"),
    ("versions", ("document_id", "number", "version_id", "note", "created_ms", "size_bytes", "blob_key"),
     "DOC#", "V#"),
    ("share_links", ("share_id", "document_id", "workspace_id"), "SHARE#", "SHARE"),
    ("idempotency", ("key_id", "key_digest", "request_hash", "response", "expires_at"), "IDEM#", "IDEM"),
    ("rate_logs", ("scope", "hits", "seq", "expires_at"), "RATE#", "RATE"),
    ("feedback", ("feedback_id", "document_id", "workspace_id", "version_id", "version_number", "message", "name",
                  "quote", "status", "created_ms", "resolved_ms"), "FB#", "FB"),
    ("users", ("email", "password_hash", "workspace_id", "role", "created_ms", "password_changed_ms"),
     "USER#", "USER"),
    ("sessions", ("session_hash", "email", "workspace_id", "created_ms", "expires_ms", "expires_at"),
     "SESSION#", "SESSION"),
]
_DEFAULTS = {"document_count": 0, "key_count": 0, "writes": [], "writes_seq": 0, "description": "",
             "open_feedback_count": 0, "passphrase_epoch": 0, "deleting": 0}


def _row(table: str, item: dict) -> dict:
    pk = item["PK"]
    row = dict(item)
    if table == "versions":
        row["document_id"] = pk[len("DOC#"):]
        row["blob_key"] = item.get("s3_key")
    elif table == "share_links":
        row["share_id"] = pk[len("SHARE#"):]
    elif table == "idempotency":
        key_id, _, digest = pk[len("IDEM#"):].partition("#")
        row.update(key_id=key_id, key_digest=digest, response=item.get("response"))
    elif table == "rate_logs":
        row["scope"] = pk[len("RATE#"):]
    elif table == "documents":
        row["deleting"] = 1 if item.get("deleting") else 0
    return row


def _table_of(item: dict) -> Optional[str]:
    for table, _columns, pk_prefix, sk in _TABLES:
        if item["PK"].startswith(pk_prefix) and (item["SK"] == sk or (sk.endswith("#") and item["SK"].startswith(sk))):
            if table == "workspaces" and item["PK"].count("#") != 1:
                continue
            return table
    return None


def import_snapshot(data_dir: str | Path) -> Optional[dict]:
    """Import the snapshot in data_dir if there is one; counts per table, or None."""
    folder = Path(data_dir)
    items_file, objects = folder / ITEMS_FILE, folder / OBJECTS_FOLDER
    if not items_file.exists() and not objects.is_dir():
        return None
    # Two processes opening the folder at once (server and admin CLI): one imports.
    with open(folder / ".import.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not items_file.exists() and not objects.is_dir():
            return None
        return _import(folder, items_file, objects)


def _import(folder: Path, items_file: Path, objects: Path) -> dict:
    from chalicelib.adapters.sqlite.layout import BLOBS_FOLDER, DATABASE_FILE
    from chalicelib.adapters.sqlite.blobs import FileBlobStore
    from chalicelib.adapters.sqlite.db import Database

    blobs = FileBlobStore(folder / BLOBS_FOLDER)
    copied = 0
    if objects.is_dir():
        for path in sorted(objects.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                blobs.put_html(path.relative_to(objects).as_posix(), path.read_bytes())
                copied += 1
    counts: dict[str, int] = {"objects": copied}
    if items_file.exists():
        raw_items = json.loads(items_file.read_text("utf-8")).get("items", [])
        by_table: dict[str, list[dict]] = {}
        for raw in raw_items:
            item = _item(raw)
            table = _table_of(item)
            if table is None:
                log.warning("snapshot item of unknown kind skipped", extra={"pk_prefix": item["PK"].split("#")[0]})
                continue
            by_table.setdefault(table, []).append(item)
        db = Database(folder / DATABASE_FILE)
        try:
            with db.write() as tx:
                for table, columns, _pk, _sk in _TABLES:
                    inserted = 0
                    for item in by_table.get(table, []):
                        row = _row(table, item)
                        values = tuple(json.dumps(row.get(c, _DEFAULTS.get(c))) if c in ("writes", "hits")
                                       else row.get(c, _DEFAULTS.get(c)) for c in columns)
                        try:
                            inserted += tx.execute(
                                f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "  # noqa: S608 - fixed names
                                f"VALUES ({', '.join('?' * len(columns))})", values).rowcount
                        except sqlite3.IntegrityError:
                            log.warning("snapshot row skipped (its parent is missing)", extra={"table": table})
                    counts[table] = inserted
                # Accounts from before people existed: confirmed, and owners of their workspace
                # (what migration 5 does for accounts that were already in SQLite).
                tx.execute("UPDATE users SET email_verified_ms = created_ms WHERE email_verified_ms IS NULL")
                tx.execute("INSERT OR IGNORE INTO members (workspace_id, email, role, created_ms) "
                           "SELECT u.workspace_id, u.email, 'owner', u.created_ms FROM users u "
                           "WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = u.workspace_id)")
        finally:
            db.close()
        items_file.rename(items_file.with_name(ITEMS_FILE + IMPORTED_SUFFIX))
    if objects.is_dir():
        objects.rename(objects.with_name(OBJECTS_FOLDER + IMPORTED_SUFFIX))
    log.info("imported the old snapshot format", extra={"counts": counts})
    return counts
