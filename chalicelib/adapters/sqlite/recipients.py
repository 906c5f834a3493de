"""Recipients (ports/recipients.py) in SQLite: one row per (document, email) in
`recipients` and `recipient_codes`, and the audience by entry in `audience`. Every
conditional change is one UPDATE/DELETE whose WHERE holds the condition."""
from __future__ import annotations

from typing import Optional, Sequence

from chalicelib.adapters.sqlite.db import Database
from chalicelib.ports.records import AudienceEntry, Recipient, RecipientCode


def _recipient(row: dict) -> Recipient:
    return Recipient(document_id=row["document_id"], workspace_id=row["workspace_id"], email=row["email"],
                     views=row["views"], first_opened_ms=row.get("first_opened_ms"),
                     last_opened_ms=row.get("last_opened_ms"), revoked_ms=row.get("revoked_ms"))


class RecipientRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, document_id: str, email: str) -> Optional[Recipient]:
        row = self.db.one("SELECT * FROM recipients WHERE document_id = ? AND email = ?", (document_id, email))
        return _recipient(row) if row else None

    def list_for_document(self, document_id: str) -> list[Recipient]:
        rows = self.db.all("SELECT * FROM recipients WHERE document_id = ? ORDER BY email", (document_id,))
        return [_recipient(r) for r in rows]

    def record_open(self, document_id: str, workspace_id: str, email: str, now_ms: int, views: int = 1) -> bool:
        with self.db.write() as tx:
            tx.execute("INSERT INTO recipients (document_id, email, workspace_id) VALUES (?, ?, ?) "
                       "ON CONFLICT (document_id, email) DO NOTHING", (document_id, email, workspace_id))
            return bool(tx.execute(
                "UPDATE recipients SET views = views + ?, last_opened_ms = ?, "
                "first_opened_ms = COALESCE(first_opened_ms, ?) "
                "WHERE document_id = ? AND email = ? AND revoked_ms IS NULL",
                (views, now_ms, now_ms, document_id, email)).rowcount)

    def revoke(self, document_id: str, workspace_id: str, email: str, now_ms: int) -> None:
        with self.db.write() as tx:
            tx.execute("INSERT INTO recipients (document_id, email, workspace_id, revoked_ms) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (document_id, email) DO UPDATE SET "
                       "revoked_ms = COALESCE(recipients.revoked_ms, excluded.revoked_ms)",
                       (document_id, email, workspace_id, now_ms))
            tx.execute("DELETE FROM recipient_codes WHERE document_id = ? AND email = ?", (document_id, email))

    def restore(self, document_id: str, email: str) -> None:
        with self.db.write() as tx:
            tx.execute("UPDATE recipients SET revoked_ms = NULL WHERE document_id = ? AND email = ?",
                       (document_id, email))

    def put_code(self, code: RecipientCode) -> None:
        with self.db.write() as tx:
            tx.execute("INSERT INTO recipient_codes (document_id, email, code_hash, expires_ms, tries) "
                       "VALUES (?, ?, ?, ?, 0) ON CONFLICT (document_id, email) DO UPDATE SET "
                       "code_hash = excluded.code_hash, expires_ms = excluded.expires_ms, tries = 0",
                       (code.document_id, code.email, code.code_hash, code.expires_ms))

    def get_code(self, document_id: str, email: str) -> Optional[RecipientCode]:
        row = self.db.one("SELECT * FROM recipient_codes WHERE document_id = ? AND email = ?", (document_id, email))
        if row is None:
            return None
        return RecipientCode(document_id=row["document_id"], email=row["email"], code_hash=row["code_hash"],
                             expires_ms=row["expires_ms"], tries=row["tries"])

    def spend_try(self, code: RecipientCode) -> bool:
        with self.db.write() as tx:
            return bool(tx.execute(
                "UPDATE recipient_codes SET tries = tries + 1 "
                "WHERE document_id = ? AND email = ? AND code_hash = ? AND tries = ?",
                (code.document_id, code.email, code.code_hash, code.tries)).rowcount)

    def use_code(self, code: RecipientCode) -> bool:
        with self.db.write() as tx:
            return bool(tx.execute(
                "DELETE FROM recipient_codes WHERE document_id = ? AND email = ? AND code_hash = ? AND tries = ?",
                (code.document_id, code.email, code.code_hash, code.tries)).rowcount)

    def index_audience(self, document_id: str, workspace_id: str, entries: Sequence[str],
                       dropped: Sequence[str], now_ms: int) -> None:
        with self.db.write() as tx:
            for entry in dropped:
                tx.execute("DELETE FROM audience WHERE entry = ? AND document_id = ?", (entry, document_id))
            for entry in entries:
                tx.execute("INSERT INTO audience (entry, document_id, workspace_id, added_ms) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (entry, document_id) DO NOTHING", (entry, document_id, workspace_id, now_ms))

    def delete_for_document(self, document_id: str, entries: Sequence[str]) -> None:
        with self.db.write() as tx:
            for table in ("recipients", "recipient_codes", "audience"):
                tx.execute(f"DELETE FROM {table} WHERE document_id = ?", (document_id,))  # noqa: S608

    def shared_with(self, entries: Sequence[str]) -> list[AudienceEntry]:
        if not entries:
            return []
        marks = ", ".join("?" * len(entries))
        rows = self.db.all(f"SELECT * FROM audience WHERE entry IN ({marks}) "  # noqa: S608 - placeholders only
                           "ORDER BY added_ms DESC, document_id, entry", tuple(entries))
        return [AudienceEntry(entry=r["entry"], document_id=r["document_id"], workspace_id=r["workspace_id"],
                              added_ms=r["added_ms"]) for r in rows]
