"""Viewer feedback. The document's `open_feedback_count` changes in the same
transaction as the feedback (and the poster's rate log), so it never drifts."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.sqlite import cursors
from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.adapters.sqlite.rates import try_claim
from chalicelib.ports.records import FeedbackGone, GuardFailed, RateClaim, StaleDocument, WriteRefused

COLUMNS = ("feedback_id", "document_id", "workspace_id", "version_id", "version_number", "message", "name",
           "quote", "status", "created_ms", "resolved_ms")


class FeedbackRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, feedback_id: str) -> Optional[dict]:
        return self.db.one("SELECT * FROM feedback WHERE feedback_id = ?", (feedback_id,))

    def create(self, feedback: dict, rate: Optional[RateClaim]) -> None:
        with self.db.write() as tx:
            doc = one(tx, "SELECT workspace_id, deleting FROM documents WHERE document_id = ?",
                      (feedback["document_id"],))
            if rate is not None and not try_claim(tx, rate):
                raise GuardFailed("rate")
            if doc is None or doc.get("deleting") or doc["workspace_id"] != feedback["workspace_id"]:
                raise StaleDocument(None)
            if one(tx, "SELECT 1 AS x FROM feedback WHERE feedback_id = ?", (feedback["feedback_id"],)):
                raise WriteRefused("exists")
            tx.execute(f"INSERT INTO feedback ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                       tuple(feedback.get(c) for c in COLUMNS))
            tx.execute("UPDATE documents SET open_feedback_count = open_feedback_count + 1 WHERE document_id = ?",
                       (feedback["document_id"],))

    def set_status(self, feedback: dict, resolved: bool, now_ms: int) -> None:
        old, new = ("open", "resolved") if resolved else ("resolved", "open")
        with self.db.write() as tx:
            doc = one(tx, "SELECT deleting, open_feedback_count FROM documents WHERE document_id = ?",
                      (feedback["document_id"],))
            current = one(tx, "SELECT status FROM feedback WHERE feedback_id = ?", (feedback["feedback_id"],))
            if (current is None or current["status"] != old or doc is None or doc.get("deleting")
                    or (resolved and doc["open_feedback_count"] <= 0)):
                raise FeedbackGone()
            tx.execute("UPDATE feedback SET status = ?, resolved_ms = ? WHERE feedback_id = ?",
                       (new, now_ms if resolved else None, feedback["feedback_id"]))
            tx.execute("UPDATE documents SET open_feedback_count = open_feedback_count + ? WHERE document_id = ?",
                       (-1 if resolved else 1, feedback["document_id"]))

    def page(self, workspace_id: str, document_id: Optional[str], status: Optional[str], limit: int,
             cursor: Optional[str]) -> tuple[list[dict], Optional[str]]:
        listing = f"feedback:doc:{document_id}" if document_id else f"feedback:ws:{workspace_id}"
        position = cursors.decode(cursor, listing, (int, str))
        sql, params = "SELECT * FROM feedback WHERE workspace_id = ?", [workspace_id]
        if document_id:
            sql += " AND document_id = ?"
            params.append(document_id)
        if status:
            sql += " AND status = ?"
            params.append(status)
        if position is not None:
            sql += " AND (created_ms < ? OR (created_ms = ? AND feedback_id < ?))"
            params += [position[0], position[0], position[1]]
        rows = self.db.all(sql + " ORDER BY created_ms DESC, feedback_id DESC LIMIT ?", tuple(params) + (limit + 1,))
        if len(rows) <= limit:
            return rows, None
        rows = rows[:limit]
        return rows, cursors.encode(listing, [rows[-1]["created_ms"], rows[-1]["feedback_id"]])

    def delete_for_document(self, document_id: str) -> int:
        def work():
            with self.db.write() as tx:
                return tx.execute("DELETE FROM feedback WHERE document_id = ?", (document_id,)).rowcount

        return self.db.deleting(work)
