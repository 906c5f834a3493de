"""Documents, versions, share links and idempotency records.

Every write is one transaction under SQLite's write lock (BEGIN IMMEDIATE): the
conditions are read and the changes made with no other writer in between, so the
document cap is exact, versions are gapless, and the key's rate slot and the
idempotency record commit with the version or not at all. Refusals are checked
in DynamoDB's order: rate slot, idempotency record, then the document/workspace.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable, Mapping, Optional

from chalicelib.adapters.sqlite import cursors
from chalicelib.adapters.sqlite.activity import insert_activity
from chalicelib.adapters.sqlite.db import Database, one, row_dict
from chalicelib.adapters.sqlite.feedback import FeedbackRepository, insert_event
from chalicelib.adapters.sqlite.rates import try_claim
from chalicelib.adapters.sqlite.workspaces import api_key_record, read_workspace
from chalicelib.ports.records import (
    ActivityEntry, ApiKey, Document, DocumentListing, Event, FileRecount, ShareLink, StoredIdempotency, Version, Workspace,
    from_fields,
)
from chalicelib.ports.repositories import DocumentFields
from chalicelib.ports.records import IdempotencyRecord, Quota, RateSlot, Resolution
from chalicelib.ports.errors import DocumentCapReached, GuardFailed, QuotaReached, StaleDocument, WriteRefused

DOCUMENT_FIELDS = ("title", "description", "share_enabled", "share_expires_ms", "latest_content", "share_access",
                   "share_recipients")
VERSION_COLUMNS = "version_id, number, note, created_ms, size_bytes, blob_key, format, files, provenance"
LIVE = "document_id = ? AND workspace_id = ? AND deleting = 0"
MAX_GET_MANY = 100


def check_guards(tx: sqlite3.Connection, slot: Optional[RateSlot], idem: Optional[IdempotencyRecord]) -> None:
    """Raise GuardFailed unless the rate slot and idempotency record can be claimed."""
    if slot is not None:
        key = one(tx, "SELECT writes_seq, revoked_at FROM api_keys WHERE key_id = ?", (slot.key_id,))
        if key is None or key.get("revoked_at") is not None or key["writes_seq"] != slot.expected_seq:
            raise GuardFailed("rate")
    if idem is not None:
        existing = one(tx, "SELECT expires_at FROM idempotency WHERE key_id = ? AND key_digest = ?",
                       (idem.key_id, idem.key_digest))
        if existing is not None and not existing["expires_at"] < idem.now:
            raise GuardFailed("idem")


def claim_guards(tx: sqlite3.Connection, slot: Optional[RateSlot], idem: Optional[IdempotencyRecord]) -> None:
    if slot is not None:
        tx.execute("UPDATE api_keys SET writes = ?, writes_seq = ?, last_used_at = ? WHERE key_id = ?",
                   (json.dumps(slot.new_log), slot.expected_seq + 1, slot.now_ms, slot.key_id))
    if idem is not None:
        tx.execute("INSERT OR REPLACE INTO idempotency (key_id, key_digest, request_hash, response, expires_at) "
                   "VALUES (?, ?, ?, ?, ?)",
                   (idem.key_id, idem.key_digest, idem.request_hash, idem.response_json, idem.expires_at))


def _new_file_bytes(tx: sqlite3.Connection, quota: Quota) -> int:
    """Bytes of the version's files that no live version of the workspace refers to yet."""
    if not quota.files:
        return 0
    wanted = sorted(quota.files)
    marks = ", ".join("?" * len(wanted))
    held = {r["sha256"] for r in tx.execute(
        f"SELECT sha256 FROM workspace_files WHERE workspace_id = ? AND sha256 IN ({marks})",  # noqa: S608
        (quota.workspace_id, *wanted)).fetchall()}
    return sum(size for sha, size in quota.files.items() if sha not in held)


def release_files(tx: sqlite3.Connection, workspace_id: str, versions: Iterable[Version]) -> int:
    """The versions leave the workspace: their files lose a reference each (once per
    version); a file no version refers to any more is freed. Returns the bytes freed."""
    counts: dict[str, int] = {}
    for version in versions:
        for sha in {f["sha256"] for f in version.files}:
            counts[sha] = counts.get(sha, 0) + 1
    freed = 0
    for sha, n in counts.items():
        row = one(tx, "SELECT size_bytes, refs FROM workspace_files WHERE workspace_id = ? AND sha256 = ?",
                  (workspace_id, sha))
        if row is None:
            continue  # not counted (never, or already freed)
        if row["refs"] <= n:
            tx.execute("DELETE FROM workspace_files WHERE workspace_id = ? AND sha256 = ?", (workspace_id, sha))
            freed += row["size_bytes"]
        else:
            tx.execute("UPDATE workspace_files SET refs = refs - ? WHERE workspace_id = ? AND sha256 = ?",
                       (n, workspace_id, sha))
    return freed


def check_quota(tx: sqlite3.Connection, quota: Optional[Quota]) -> int:
    """QuotaReached unless the workspace has room for the version and a write; returns
    the bytes of the version's files new to the workspace (counted by claim_quota)."""
    if quota is None:
        return 0
    new_bytes = _new_file_bytes(tx, quota)
    row = one(tx, "SELECT plan, storage_bytes FROM workspaces WHERE id = ?", (quota.workspace_id,))
    if row is not None:
        refused = quota.refusal(row["plan"], row["storage_bytes"], new_bytes)
        if refused is not None:
            raise QuotaReached(refused, row["storage_bytes"], row["plan"], adding=quota.add_bytes + new_bytes)
    claim = quota.rate_claim
    if claim is not None:
        log = one(tx, "SELECT seq FROM rate_logs WHERE scope = ?", (claim.scope,))
        if (log["seq"] if log else 0) != claim.expected_seq:
            raise GuardFailed("workspace-rate")  # another write took a slot since the log was read
    return new_bytes


def claim_quota(tx: sqlite3.Connection, quota: Optional[Quota], new_file_bytes: int = 0) -> None:
    if quota is None:
        return
    tx.execute("UPDATE workspaces SET storage_bytes = storage_bytes + ?, version_total = version_total + 1 "
               "WHERE id = ?", (quota.add_bytes + new_file_bytes, quota.workspace_id))
    for sha, size in quota.files.items():
        tx.execute("INSERT INTO workspace_files (workspace_id, sha256, size_bytes, refs) VALUES (?, ?, ?, 1) "
                   "ON CONFLICT (workspace_id, sha256) DO UPDATE SET refs = refs + 1",
                   (quota.workspace_id, sha, size))
    if quota.rate_claim is not None and not try_claim(tx, quota.rate_claim):
        raise GuardFailed("workspace-rate")  # checked above under the same write lock: never here


def _document(tx: sqlite3.Connection, document_id: str) -> Optional[Document]:
    return document_record(one(tx, "SELECT * FROM documents WHERE document_id = ?", (document_id,)))


def document_record(row: Optional[Mapping[str, Any]]) -> Optional[Document]:
    """A documents row (row_dict) as the port's record."""
    if row is None:
        return None
    requested = row.get("review_requested")
    audience = row.get("share_recipients")
    return from_fields(Document, {**row, "review_requested": tuple(requested) if requested else (),
                                  "share_recipients": tuple(audience) if audience else ()})


def version_record(row: Optional[Mapping[str, Any]]) -> Optional[Version]:
    """A versions row (row_dict) as the port's record."""
    if row is None:
        return None
    files = row.get("files")
    return from_fields(Version, {**row, "files": tuple(files) if files else ()})


def _share(row: Optional[Mapping[str, Any]]) -> Optional[ShareLink]:
    return from_fields(ShareLink, row) if row is not None else None


def _idempotency(row: Optional[Mapping[str, Any]]) -> Optional[StoredIdempotency]:
    if row is None:
        return None
    return from_fields(StoredIdempotency, {**row, "response_json": row["response"]})


class DocumentRepository:
    def __init__(self, db: Database):
        self.db = db

    # ---------------------------------------------------------------- reads

    def get(self, document_id: str) -> Optional[Document]:
        return document_record(self.db.one("SELECT * FROM documents WHERE document_id = ?", (document_id,)))

    def get_with_key(self, key_id: str, document_id: Optional[str] = None,
                     idempotency_digest: Optional[str] = None
                     ) -> tuple[Optional[ApiKey], Optional[Document], Optional[StoredIdempotency]]:
        with self.db.snapshot() as conn:
            key_item = api_key_record(one(conn, "SELECT * FROM api_keys WHERE key_id = ?", (key_id,)))
            doc = _document(conn, document_id) if document_id else None
            idem = _idempotency(one(conn, "SELECT * FROM idempotency WHERE key_id = ? AND key_digest = ?",
                                    (key_id, idempotency_digest))) if idempotency_digest else None
        return key_item, doc, idem

    def get_many(self, document_ids: Iterable[str]) -> dict[str, Document]:
        wanted = sorted(set(document_ids))[:MAX_GET_MANY]
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        return {doc.document_id: doc
                for row in self.db.all(f"SELECT * FROM documents WHERE document_id IN ({marks})", tuple(wanted))
                if (doc := document_record(row)) is not None}

    def get_with_versions(self, document_id: str) -> tuple[Optional[Document], list[Version]]:
        with self.db.snapshot() as conn:
            doc = _document(conn, document_id)
            versions = [v for r in conn.execute(
                f"SELECT {VERSION_COLUMNS} FROM versions WHERE document_id = ? ORDER BY number",
                (document_id,)).fetchall() if (v := version_record(row_dict(r))) is not None]
        return doc, versions

    def get_version(self, document_id: str, number: int) -> Optional[Version]:
        return version_record(self.db.one(f"SELECT {VERSION_COLUMNS} FROM versions WHERE document_id = ? AND number = ?",
                                          (document_id, number)))

    def get_share(self, share_id: str) -> Optional[ShareLink]:
        return _share(self.db.one("SELECT * FROM share_links WHERE share_id = ?", (share_id,)))

    def get_for_share(self, share_id: str, version_number: Optional[int] = None, consistent: bool = True
                      ) -> tuple[Optional[ShareLink], Optional[Document], Optional[Workspace], Optional[Version]]:
        with self.db.snapshot() as conn:
            share = _share(one(conn, "SELECT * FROM share_links WHERE share_id = ?", (share_id,)))
            if share is None:
                return None, None, None, None
            doc = _document(conn, share.document_id)
            workspace = read_workspace(conn, share.workspace_id)
            version = version_record(one(conn, f"SELECT {VERSION_COLUMNS} FROM versions "
                                               "WHERE document_id = ? AND number = ?",
                                         (share.document_id, version_number))) if version_number is not None else None
        return share, doc, workspace, version

    def list_page(self, workspace_id: str, limit: int, cursor: Optional[str]
                  ) -> tuple[list[DocumentListing], Optional[str]]:
        listing = f"documents:{workspace_id}"
        position = cursors.decode(cursor, listing, (int, str))
        sql = "SELECT * FROM documents WHERE workspace_id = ? AND deleting = 0"
        params: tuple = (workspace_id,)
        if position is not None:
            sql += " AND (updated_ms < ? OR (updated_ms = ? AND document_id < ?))"
            params += (position[0], position[0], position[1])
        rows = [from_fields(DocumentListing, row) for row in
                self.db.all(sql + " ORDER BY updated_ms DESC, document_id DESC LIMIT ?", params + (limit + 1,))]
        if len(rows) <= limit:
            return rows, None
        rows = rows[:limit]
        return rows, cursors.encode(listing, [rows[-1].updated_ms, rows[-1].document_id])

    def list_all(self, workspace_id: str) -> list[DocumentListing]:
        return [from_fields(DocumentListing, row) for row in
                self.db.all("SELECT * FROM documents WHERE workspace_id = ? AND deleting = 0 "
                            "ORDER BY updated_ms DESC, document_id DESC", (workspace_id,))]

    def get_idempotency(self, key_id: str, key_digest: str) -> Optional[StoredIdempotency]:
        return _idempotency(self.db.one("SELECT * FROM idempotency WHERE key_id = ? AND key_digest = ?",
                                        (key_id, key_digest)))

    # ---------------------------------------------------------------- writes

    def create(self, doc: Document, version: Version, max_documents: int, uncapped_plans: Iterable[str],
               slot: Optional[RateSlot], idem: Optional[IdempotencyRecord], quota: Optional[Quota] = None,
               activity: Optional[ActivityEntry] = None,
               event: Optional[Event] = None) -> None:
        with self.db.write() as tx:
            check_guards(tx, slot, idem)
            new_file_bytes = check_quota(tx, quota)
            workspace = read_workspace(tx, doc.workspace_id)
            if workspace is None or (workspace.plan not in set(uncapped_plans)
                                     and workspace.document_count >= max_documents):
                raise DocumentCapReached(workspace)
            if (_document(tx, doc.document_id) is not None
                    or one(tx, "SELECT 1 AS x FROM share_links WHERE share_id = ?", (doc.share_id,))):
                raise WriteRefused("exists")
            tx.execute("UPDATE workspaces SET document_count = document_count + 1 WHERE id = ?",
                       (doc.workspace_id,))
            tx.execute("INSERT INTO documents (document_id, workspace_id, title, description, share_id, created_ms, "
                       "updated_ms, version_count, latest_version_id, latest_size, open_feedback_count, "
                       "share_enabled, share_expires_ms, latest_content, share_access, share_recipients) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (doc.document_id, doc.workspace_id, doc.title, doc.description or "",
                        doc.share_id, doc.created_ms, doc.updated_ms, doc.version_count,
                        doc.latest_version_id, doc.latest_size, doc.open_feedback_count,
                        1 if doc.share_enabled else 0, doc.share_expires_ms,
                        doc.latest_content, doc.share_access or "public",
                        json.dumps(list(doc.share_recipients)) if doc.share_recipients else None))
            self._insert_version(tx, doc.document_id, version)
            tx.execute("INSERT INTO share_links (share_id, document_id, workspace_id) VALUES (?, ?, ?)",
                       (doc.share_id, doc.document_id, doc.workspace_id))
            claim_guards(tx, slot, idem)
            claim_quota(tx, quota, new_file_bytes)
            if activity is not None:
                insert_activity(tx, activity)
            insert_event(tx, event)

    @staticmethod
    def _insert_version(tx: sqlite3.Connection, document_id: str, version: Version) -> None:
        files = [dict(f) for f in version.files]
        tx.execute("INSERT INTO versions (document_id, number, version_id, note, created_ms, size_bytes, blob_key, "
                   "format, files, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (document_id, version.number, version.version_id, version.note,
                    version.created_ms, version.size_bytes, version.blob_key, version.format,
                    json.dumps(files, separators=(",", ":")) if files else None, version.provenance))

    def append_version(self, doc: Document, version: Version, changes: DocumentFields,
                       slot: Optional[RateSlot], idem: Optional[IdempotencyRecord],
                       quota: Optional[Quota] = None, activity: Optional[ActivityEntry] = None,
                       event: Optional[Event] = None, resolves: Optional[Resolution] = None) -> None:
        _check_fields(changes)
        with self.db.write() as tx:
            check_guards(tx, slot, idem)
            current = _document(tx, doc.document_id)
            if (current is None or current.workspace_id != doc.workspace_id or current.deleting
                    or current.version_count != doc.version_count
                    or version.number != doc.version_count + 1):
                raise StaleDocument(current)
            new_file_bytes = check_quota(tx, quota)
            sets: dict[str, Any] = {"version_count": version.number, "latest_version_id": version.version_id,
                                    "latest_size": version.size_bytes, "updated_ms": version.created_ms,
                                    **_bound(changes)}
            tx.execute(f"UPDATE documents SET {', '.join(f'{k} = ?' for k in sets)} WHERE document_id = ?",  # noqa: S608
                       (*sets.values(), doc.document_id))
            self._insert_version(tx, doc.document_id, version)
            claim_guards(tx, slot, idem)
            claim_quota(tx, quota, new_file_bytes)
            if activity is not None:
                insert_activity(tx, activity)
            insert_event(tx, event)
            if resolves is not None:
                FeedbackRepository.accept_in(tx, resolves, version.number, version.created_ms)

    def delete_version(self, doc: Document, version: Version) -> None:
        def work() -> None:
            with self.db.write() as tx:
                current = _document(tx, doc.document_id)
                if (current is None or current.deleting or current.workspace_id != doc.workspace_id
                        or current.latest_version_id == version.version_id):
                    raise StaleDocument(current)
                gone = tx.execute("DELETE FROM versions WHERE document_id = ? AND version_id = ?",
                                  (doc.document_id, version.version_id)).rowcount
                if not gone:
                    raise StaleDocument(current)
                tx.execute("UPDATE documents SET versions_deleted = versions_deleted + 1 WHERE document_id = ?",
                           (doc.document_id,))
                freed = release_files(tx, doc.workspace_id, [version])
                tx.execute("UPDATE workspaces SET storage_bytes = MAX(0, storage_bytes - ?), "
                           "version_total = MAX(0, version_total - 1) WHERE id = ?",
                           (version.size_bytes + freed, doc.workspace_id))

        self.db.deleting(work)

    def update_fields(self, doc: Document, fields: DocumentFields,
                      activity: Optional[ActivityEntry] = None) -> Document:
        _check_fields(fields)
        with self.db.write() as tx:
            changed = tx.execute(
                f"UPDATE documents SET {', '.join(f'{k} = ?' for k in fields)} WHERE {LIVE}",  # noqa: S608
                (*_bound(fields).values(), doc.document_id, doc.workspace_id)).rowcount
            if not changed:
                raise StaleDocument(None)
            if activity is not None:
                insert_activity(tx, activity)
            current = _document(tx, doc.document_id)
        if current is None:  # it was just changed under the write lock
            raise StaleDocument(None)
        return current

    def set_passphrase(self, doc: Document, passphrase_hash: Optional[str]) -> Document:
        with self.db.write() as tx:
            changed = tx.execute(
                f"UPDATE documents SET passphrase_hash = ?, passphrase_epoch = passphrase_epoch + 1 WHERE {LIVE}",
                (passphrase_hash, doc.document_id, doc.workspace_id)).rowcount
            if not changed:
                raise StaleDocument(None)
            current = _document(tx, doc.document_id)
        if current is None:  # it was just changed under the write lock
            raise StaleDocument(None)
        return current

    def rotate_share(self, doc: Document, new_share_id: str) -> None:
        with self.db.write() as tx:
            changed = tx.execute(f"UPDATE documents SET share_id = ? WHERE {LIVE} AND share_id = ?",  # noqa: S608
                                 (new_share_id, doc.document_id, doc.workspace_id, doc.share_id)).rowcount
            if not changed or one(tx, "SELECT 1 AS x FROM share_links WHERE share_id = ?", (new_share_id,)):
                raise StaleDocument(None)  # rolled back: nothing changed
            tx.execute("DELETE FROM share_links WHERE share_id = ?", (doc.share_id,))
            tx.execute("INSERT INTO share_links (share_id, document_id, workspace_id) VALUES (?, ?, ?)",
                       (new_share_id, doc.document_id, doc.workspace_id))

    def begin_delete(self, doc: Document, activity: Optional[ActivityEntry] = None,
                     event: Optional[Event] = None) -> None:
        def work() -> None:
            with self.db.write() as tx:
                current = _document(tx, doc.document_id)
                workspace = one(tx, "SELECT document_count FROM workspaces WHERE id = ?", (doc.workspace_id,))
                if (current is None or current.deleting or workspace is None
                        or workspace["document_count"] <= 0):
                    raise StaleDocument(None)
                tx.execute("UPDATE documents SET deleting = 1 WHERE document_id = ?", (doc.document_id,))
                tx.execute("DELETE FROM share_links WHERE share_id = ?", (doc.share_id,))
                used = one(tx, "SELECT COALESCE(SUM(size_bytes), 0) AS bytes, COUNT(*) AS n FROM versions "
                               "WHERE document_id = ?", (doc.document_id,)) or {"bytes": 0, "n": 0}
                with_files = [v for r in tx.execute(f"SELECT {VERSION_COLUMNS} FROM versions WHERE document_id = ? "  # noqa: S608
                                                    "AND files IS NOT NULL", (doc.document_id,)).fetchall()
                              if (v := version_record(row_dict(r))) is not None]
                freed = release_files(tx, doc.workspace_id, with_files)
                tx.execute("UPDATE workspaces SET document_count = document_count - 1, "
                           "storage_bytes = MAX(0, storage_bytes - ?), version_total = MAX(0, version_total - ?) "
                           "WHERE id = ?", (used["bytes"] + freed, used["n"], doc.workspace_id))
                insert_event(tx, event)  # the webhook outbox: with the change, never apart

        self.db.deleting(work)  # works on a full disk too (spends the reserve)
        if activity is not None:
            # Logged after the delete, apart: a delete must work on a full disk, a log line need not.
            try:
                with self.db.write() as tx:
                    insert_activity(tx, activity)
            except Exception:  # noqa: BLE001 - the delete was made; the log must not undo its answer
                pass

    def recount_files(self, workspace_id: str) -> FileRecount:
        """The counts migration 9 made, made again from the live versions in one write
        transaction (nothing moves meanwhile): a missing count is added with its bytes,
        a wrong one set right, one no version refers to removed with its bytes."""
        with self.db.write() as tx:
            versions = [v for r in tx.execute(
                f"SELECT {VERSION_COLUMNS} FROM versions WHERE files IS NOT NULL AND document_id IN "  # noqa: S608
                "(SELECT document_id FROM documents WHERE workspace_id = ? AND deleting = 0)",
                (workspace_id,)).fetchall() if (v := version_record(row_dict(r))) is not None]
            counts: dict[str, int] = {}
            sizes: dict[str, int] = {}
            for version in versions:
                for file in version.files:
                    sizes[file["sha256"]] = int(file["size_bytes"])
                for sha in {f["sha256"] for f in version.files}:
                    counts[sha] = counts.get(sha, 0) + 1
            held = {r["sha256"]: (r["refs"], r["size_bytes"]) for r in tx.execute(
                "SELECT sha256, refs, size_bytes FROM workspace_files WHERE workspace_id = ?", (workspace_id,))}
            changed = delta = 0
            for sha in sorted(set(counts) | set(held)):
                want, was = counts.get(sha, 0), held.get(sha)
                if (was[0] if was else 0) == want:
                    continue
                changed += 1
                if want == 0:
                    tx.execute("DELETE FROM workspace_files WHERE workspace_id = ? AND sha256 = ?", (workspace_id, sha))
                    delta -= was[1] if was else 0
                elif was is None:
                    tx.execute("INSERT INTO workspace_files (workspace_id, sha256, size_bytes, refs) VALUES (?, ?, ?, ?)",
                               (workspace_id, sha, sizes[sha], want))
                    delta += sizes[sha]
                else:
                    tx.execute("UPDATE workspace_files SET refs = ? WHERE workspace_id = ? AND sha256 = ?",
                               (want, workspace_id, sha))
            if delta:
                tx.execute("UPDATE workspaces SET storage_bytes = MAX(0, storage_bytes + ?) WHERE id = ?",
                           (delta, workspace_id))
        return FileRecount(workspace_id, len(counts), changed, delta)

    def purge(self, document_id: str) -> None:
        def work() -> None:
            with self.db.write() as tx:
                tx.execute("DELETE FROM versions WHERE document_id = ?", (document_id,))
                tx.execute("DELETE FROM share_links WHERE document_id = ?", (document_id,))
                tx.execute("DELETE FROM documents WHERE document_id = ?", (document_id,))

        self.db.deleting(work)


def _bound(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Document fields as columns take them (the audience as JSON)."""
    out = dict(fields)
    if "share_recipients" in out:
        out["share_recipients"] = json.dumps(list(out["share_recipients"])) if out["share_recipients"] else None
    return out


def _check_fields(fields: Mapping[str, Any]) -> None:
    unknown = set(fields) - set(DOCUMENT_FIELDS)
    if unknown:
        raise ValueError(f"not document fields: {sorted(unknown)}")


def _drop_none(row: sqlite3.Row) -> dict:
    return {k: row[k] for k in row.keys() if row[k] is not None}
