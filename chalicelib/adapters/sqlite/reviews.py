"""Reviews and the review state each document keeps (contract 7e). A review, the
document's new state (only if its `review_seq` and `version_count` are still those it
was computed from) and the event reporting it are one transaction."""
from __future__ import annotations

import json
import sqlite3
from typing import Optional

from chalicelib.adapters.sqlite import cursors
from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.adapters.sqlite.feedback import insert_event
from chalicelib.ports.records import Document, Event, Review, ReviewStatus, fields_of, from_fields
from chalicelib.ports.errors import GuardFailed, StaleDocument, WriteRefused

COLUMNS = ("review_id", "document_id", "workspace_id", "version_number", "decision", "message", "reviewer_kind",
           "reviewer_id", "reviewer_name", "reviewer_email", "created_ms")


def _live(tx: sqlite3.Connection, expected: Document) -> dict:
    current = one(tx, "SELECT workspace_id, deleting, version_count, review_seq FROM documents "
                      "WHERE document_id = ?", (expected.document_id,))
    if current is None or current.get("deleting") or current["workspace_id"] != expected.workspace_id:
        raise StaleDocument(None)
    return current


def _set_status(tx: sqlite3.Connection, expected: Document, current: dict, status: ReviewStatus) -> None:
    if current["review_seq"] != expected.review_seq or current["version_count"] != expected.version_count:
        raise StaleDocument(None)
    tx.execute("UPDATE documents SET review_state = ?, review_version = ?, review_decisions = ?, "
               "review_requested = ?, review_seq = review_seq + 1 WHERE document_id = ?",
               (status.state, status.version,
                json.dumps(dict(status.decisions), ensure_ascii=False) if status.decisions else None,
                json.dumps(list(status.requested), ensure_ascii=False) if status.requested else None,
                expected.document_id))


class ReviewRepository:
    def __init__(self, db: Database):
        self.db = db

    def add(self, review: Review, expected: Document, status: Optional[ReviewStatus],
            event: Optional[Event] = None) -> None:
        with self.db.write() as tx:
            current = _live(tx, expected)
            if one(tx, "SELECT 1 AS x FROM versions WHERE document_id = ? AND number = ?",
                   (review.document_id, review.version_number)) is None:
                raise GuardFailed("version")
            if status is not None:
                _set_status(tx, expected, current, status)
            if one(tx, "SELECT 1 AS x FROM reviews WHERE review_id = ?", (review.review_id,)):
                raise WriteRefused("exists")
            values = fields_of(review)
            tx.execute(f"INSERT INTO reviews ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                       tuple(values[c] for c in COLUMNS))
            insert_event(tx, event)

    def set_status(self, expected: Document, status: ReviewStatus, event: Optional[Event] = None) -> None:
        with self.db.write() as tx:
            _set_status(tx, expected, _live(tx, expected), status)
            insert_event(tx, event)

    def page(self, document_id: str, limit: int, cursor: Optional[str]) -> tuple[list[Review], Optional[str]]:
        listing = f"reviews:{document_id}"
        position = cursors.decode(cursor, listing, (int, str))
        sql, params = "SELECT * FROM reviews WHERE document_id = ?", [document_id]
        if position is not None:
            sql += " AND (created_ms < ? OR (created_ms = ? AND review_id < ?))"
            params += [position[0], position[0], position[1]]
        rows = self.db.all(sql + " ORDER BY created_ms DESC, review_id DESC LIMIT ?", tuple(params) + (limit + 1,))
        reviews = [from_fields(Review, r) for r in rows[:limit]]
        if len(rows) <= limit:
            return reviews, None
        return reviews, cursors.encode(listing, [reviews[-1].created_ms, reviews[-1].review_id])

    def delete_for_document(self, document_id: str, workspace_id: str) -> int:
        def work() -> int:
            with self.db.write() as tx:
                tx.execute("DELETE FROM events WHERE workspace_id = ? AND document_id = ? AND type LIKE 'review.%'",
                           (workspace_id, document_id))
                return int(tx.execute("DELETE FROM reviews WHERE document_id = ?", (document_id,)).rowcount)

        return int(self.db.deleting(work))
