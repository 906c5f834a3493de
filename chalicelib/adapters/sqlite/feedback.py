"""Viewer feedback, its replies and the event log. The document's
`open_feedback_count`, the poster's rate log and the event reporting the change
(read by waiting lists and turned into webhook deliveries) are written in the
same transaction as the feedback or reply, so none of them can drift or be lost."""
from __future__ import annotations

import json
import sqlite3
from typing import Optional

from chalicelib.adapters.sqlite import cursors
from chalicelib.adapters.sqlite.db import Database, one
from chalicelib.adapters.sqlite.rates import try_claim
from chalicelib.ports.records import Event, Feedback, RateClaim, Reply, Resolution, fields_of, from_fields
from chalicelib.ports.errors import BadCursor, FeedbackGone, GuardFailed, ReplyCapReached, StaleDocument, WriteRefused

COLUMNS = ("feedback_id", "document_id", "workspace_id", "version_id", "version_number", "message", "name",
           "quote", "anchor", "status", "created_ms", "resolved_ms", "suggestion", "recipient_email")
REPLY_COLUMNS = ("reply_id", "feedback_id", "document_id", "workspace_id", "message", "name", "author",
                 "created_ms")
EVENT_COLUMNS = ("event_id", "workspace_id", "document_id", "type", "feedback_id", "reply_id", "wakes",
                 "payload", "created_ms")


def insert_event(tx: sqlite3.Connection, event: Optional[Event]) -> None:
    """Inside a write transaction: append `event` to the log (and the webhook outbox)."""
    if event is None:
        return
    values = {**fields_of(event), "wakes": 1 if event.wakes else 0,
              "payload": json.dumps(dict(event.payload), ensure_ascii=False, separators=(",", ":"))}
    tx.execute(f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) VALUES ({', '.join('?' * len(EVENT_COLUMNS))})",
               tuple(values.get(c) for c in EVENT_COLUMNS))


def event_from_row(row: dict) -> Event:
    return from_fields(Event, {**row, "wakes": bool(row.get("wakes"))})


def _feedback(row: dict) -> Feedback:
    return from_fields(Feedback, row)


def _position(raw: Optional[str]) -> int:
    position = cursors.decode(raw, "activity", (int,))
    if position is None or position[0] < 0:
        raise BadCursor("not a position of the activity log")
    return position[0]


class FeedbackRepository:
    def __init__(self, db: Database):
        self.db = db

    def get(self, feedback_id: str) -> Optional[Feedback]:
        row = self.db.one("SELECT * FROM feedback WHERE feedback_id = ?", (feedback_id,))
        return _feedback(row) if row is not None else None

    def get_many(self, feedback_ids: list[str]) -> list[Feedback]:
        if not feedback_ids:
            return []
        marks = ", ".join("?" * len(feedback_ids))
        return [_feedback(r) for r in
                self.db.all(f"SELECT * FROM feedback WHERE feedback_id IN ({marks})", tuple(feedback_ids))]

    def create(self, feedback: Feedback, rate: Optional[RateClaim], event: Optional[Event] = None) -> None:
        with self.db.write() as tx:
            doc = one(tx, "SELECT workspace_id, deleting FROM documents WHERE document_id = ?",
                      (feedback.document_id,))
            if rate is not None and not try_claim(tx, rate):
                raise GuardFailed("rate")
            if doc is None or doc.get("deleting") or doc["workspace_id"] != feedback.workspace_id:
                raise StaleDocument(None)
            if one(tx, "SELECT 1 AS x FROM feedback WHERE feedback_id = ?", (feedback.feedback_id,)):
                raise WriteRefused("exists")
            values = {**fields_of(feedback), "anchor": json.dumps(dict(feedback.anchor), ensure_ascii=False)
                      if feedback.anchor else None,
                      "suggestion": json.dumps(dict(feedback.suggestion), ensure_ascii=False)
                      if feedback.suggestion is not None else None}
            tx.execute(f"INSERT INTO feedback ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                       tuple(values.get(c) for c in COLUMNS))
            tx.execute("UPDATE documents SET open_feedback_count = open_feedback_count + 1, "
                       "feedback_activity_ms = ? WHERE document_id = ?",
                       (feedback.created_ms, feedback.document_id))
            insert_event(tx, event)

    def add_reply(self, feedback: Feedback, reply: Reply, max_replies: int, reopen: bool,
                  rate: Optional[RateClaim], event: Optional[Event] = None) -> bool:
        with self.db.write() as tx:
            if rate is not None and not try_claim(tx, rate):
                raise GuardFailed("rate")
            current = one(tx, "SELECT status, reply_count FROM feedback WHERE feedback_id = ?",
                          (feedback.feedback_id,))
            doc = one(tx, "SELECT deleting FROM documents WHERE document_id = ?", (feedback.document_id,))
            if current is None or doc is None or doc.get("deleting"):
                raise FeedbackGone()
            if current["reply_count"] >= max_replies:
                raise ReplyCapReached(current["reply_count"])
            values = fields_of(reply)
            tx.execute(f"INSERT INTO feedback_replies ({', '.join(REPLY_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(REPLY_COLUMNS))})", tuple(values[c] for c in REPLY_COLUMNS))
            reopened = reopen and current["status"] == "resolved"
            tx.execute("UPDATE feedback SET reply_count = reply_count + 1" +
                       (", status = 'open', resolved_ms = NULL" if reopened else "") + " WHERE feedback_id = ?",
                       (feedback.feedback_id,))
            tx.execute("UPDATE documents SET feedback_activity_ms = ?, open_feedback_count = "
                       "open_feedback_count + ? WHERE document_id = ?",
                       (reply.created_ms, 1 if reopened else 0, feedback.document_id))
            insert_event(tx, event)
            return reopened

    def replies(self, feedback_ids: list[str]) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {f: [] for f in feedback_ids}
        if not feedback_ids:
            return out
        marks = ", ".join("?" * len(feedback_ids))
        for row in self.db.all(f"SELECT * FROM feedback_replies WHERE feedback_id IN ({marks}) "
                               "ORDER BY created_ms, reply_id", tuple(feedback_ids)):
            out[row["feedback_id"]].append(from_fields(Reply, row))
        return out

    def set_status(self, feedback: Feedback, resolved: bool, now_ms: int, event: Optional[Event] = None) -> None:
        old, new = ("open", "resolved") if resolved else ("resolved", "open")
        with self.db.write() as tx:
            doc = one(tx, "SELECT deleting, open_feedback_count FROM documents WHERE document_id = ?",
                      (feedback.document_id,))
            current = one(tx, "SELECT status FROM feedback WHERE feedback_id = ?", (feedback.feedback_id,))
            if (current is None or current["status"] != old or doc is None or doc.get("deleting")
                    or (resolved and doc["open_feedback_count"] <= 0)):
                raise FeedbackGone()
            tx.execute("UPDATE feedback SET status = ?, resolved_ms = ?, resolved_in_version = NULL "
                       "WHERE feedback_id = ?", (new, now_ms if resolved else None, feedback.feedback_id))
            tx.execute("UPDATE documents SET open_feedback_count = open_feedback_count + ?, "
                       "feedback_activity_ms = ? WHERE document_id = ?",
                       (-1 if resolved else 1, now_ms, feedback.document_id))
            insert_event(tx, event)

    @staticmethod
    def accept_in(tx: sqlite3.Connection, resolution: Resolution, version_number: int, now_ms: int) -> None:
        """Inside append_version's transaction: the suggestion resolved in `version_number`,
        only if it is still open (FeedbackGone otherwise: the transaction rolls back)."""
        feedback = resolution.feedback
        changed = tx.execute("UPDATE feedback SET status = 'resolved', resolved_ms = ?, resolved_in_version = ? "
                             "WHERE feedback_id = ? AND document_id = ? AND status = 'open'",
                             (now_ms, version_number, feedback.feedback_id, feedback.document_id)).rowcount
        if not changed:
            raise FeedbackGone()
        tx.execute("UPDATE documents SET open_feedback_count = MAX(0, open_feedback_count - 1), "
                   "feedback_activity_ms = ? WHERE document_id = ?", (now_ms, feedback.document_id))
        insert_event(tx, resolution.event)

    def page(self, workspace_id: str, document_id: Optional[str], status: Optional[str], limit: int,
             cursor: Optional[str]) -> tuple[list[Feedback], Optional[str]]:
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
            return [_feedback(r) for r in rows], None
        rows = rows[:limit]
        return [_feedback(r) for r in rows], cursors.encode(listing, [rows[-1]["created_ms"], rows[-1]["feedback_id"]])

    def delete_for_document(self, document_id: str) -> int:
        """Its feedback, replies and the feedback events that carry their text."""
        def work():
            with self.db.write() as tx:
                tx.execute("DELETE FROM events WHERE document_id = ? AND type LIKE 'feedback.%'", (document_id,))
                return tx.execute("DELETE FROM feedback WHERE document_id = ?", (document_id,)).rowcount

        return self.db.deleting(work)

    # ---------------------------------------------------------------- activity (waiting)

    def activity_head(self, workspace_id: str, now_ms: int) -> str:
        row = self.db.one("SELECT MAX(seq) AS seq FROM events WHERE workspace_id = ?", (workspace_id,))
        return cursors.encode("activity", [(row or {}).get("seq") or 0])

    def activity_since(self, workspace_id: str, document_id: Optional[str], position: str, now_ms: int,
                       limit: int) -> tuple[list[Event], str]:
        after = _position(position)
        sql, params = "SELECT * FROM events WHERE workspace_id = ? AND seq > ? AND wakes = 1", [workspace_id, after]
        if document_id:
            sql += " AND document_id = ?"
            params.append(document_id)
        rows = self.db.all(sql + " ORDER BY seq LIMIT ?", tuple(params) + (limit,))
        if rows:
            return [event_from_row(r) for r in rows], cursors.encode("activity", [rows[-1]["seq"]])
        return [], position
