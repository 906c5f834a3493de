"""Viewer feedback: `FB#<id>`, listed through GSI1 (workspace) and GSI2 (document);
its replies live in the same partition (`R#<created_ms>#<reply_id>`); the event
each change reports is appended to `EV#<workspace>` in the same transaction."""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Optional

from chalicelib.adapters.aws.documents import LIVE_DOCUMENT
from chalicelib.adapters.aws.events import add_event, event_record
from chalicelib.adapters.aws.keys import (
    document_key, events_pk, feedback_document_pk, feedback_key, feedback_sort_key, feedback_workspace_pk,
    reply_key,
)
from chalicelib.adapters.aws.rates import add_rate_claim
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction, decode_cursor, encode_cursor
from chalicelib.ports.records import Event, Feedback, RateClaim, Reply, fields_of, from_fields
from chalicelib.ports.errors import BadCursor, FeedbackGone, GuardFailed, ReplyCapReached, StaleDocument
from chalicelib.adapters.aws.errors import storage_errors

# An event's time is taken before its transaction commits; one that commits at most
# this late is still found by a waiting list (positions remember what they returned since).
COMMIT_SKEW_MS = 20_000
MAX_SEEN = 64


@storage_errors
class FeedbackRepository:
    """Viewer feedback. Item `FB#<id>`; GSI1 lists a workspace's feedback and GSI2
    a document's, newest first. The document's `open_feedback_count` changes in the
    same transaction as the feedback, with conditions, so it never drifts."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, feedback_id: str) -> Optional[Feedback]:
        item = self.table.get(feedback_key(feedback_id))
        return _feedback(item) if item is not None else None

    def get_many(self, feedback_ids: list[str]) -> list[Feedback]:
        return [_feedback(item) for item in self.table.batch_get([feedback_key(f) for f in feedback_ids]) if item] \
            if feedback_ids else []

    def create(self, feedback: Feedback, rate: Optional[RateClaim], event: Optional[Event] = None) -> None:
        """Store feedback, count it as open on its document and claim the
        submitter's rate slot, atomically. Raises StaleDocument if the document
        is gone or being deleted, GuardFailed("rate") if the log moved."""
        tx = Transaction()
        sort_key = feedback_sort_key(feedback.created_ms, feedback.feedback_id)
        fields = fields_of(feedback)
        fields["anchor"] = dict(feedback.anchor) if feedback.anchor else None
        fields["suggestion"] = dict(feedback.suggestion) if feedback.suggestion is not None else None
        fields.pop("reply_count")  # counted by add_reply (absent: none)
        tx.put({**feedback_key(feedback.feedback_id), **fields,
                "GSI1PK": feedback_workspace_pk(feedback.workspace_id), "GSI1SK": sort_key,
                "GSI2PK": feedback_document_pk(feedback.document_id), "GSI2SK": sort_key},
               "attribute_not_exists(PK)")
        doc_index = tx.update(
            document_key(feedback.document_id), "ADD open_feedback_count :one SET feedback_activity_ms = :now",
            LIVE_DOCUMENT, values={":one": 1, ":ws": feedback.workspace_id, ":now": feedback.created_ms})
        rate_index = add_rate_claim(tx, rate) if rate is not None else None
        add_event(tx, event)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(rate_index):
                raise GuardFailed("rate") from exc
            if exc.failed(doc_index):
                raise StaleDocument(None) from exc
            raise

    def add_reply(self, feedback: Feedback, reply: Reply, max_replies: int, reopen: bool,
                  rate: Optional[RateClaim], event: Optional[Event] = None) -> bool:
        """The reply, the thread's `reply_count` (capped), a reopen from `resolved`
        when asked and the thread is resolved as read, the document's activity time
        and count, the rate claim and the event: one transaction. A thread whose
        state changed meanwhile is GuardFailed("state") (the service reads again)."""
        tx = Transaction()
        tx.put({**reply_key(feedback.feedback_id, reply.created_ms, reply.reply_id), **fields_of(reply)},
               "attribute_not_exists(PK)")
        reopened = bool(reopen and feedback.status == "resolved")
        update = "ADD reply_count :one" + (" SET #s = :open REMOVE resolved_ms" if reopened else "")
        values = {":one": 1, ":max": max_replies, ":state": feedback.status}
        if reopened:
            values[":open"] = "open"
        fb_index = tx.update(feedback_key(feedback.feedback_id), update,
                             "attribute_exists(PK) AND #s = :state AND "
                             "(attribute_not_exists(reply_count) OR reply_count < :max)",
                             names={"#s": "status"}, values=values, return_old=True)
        doc_index = tx.update(document_key(feedback.document_id),
                              "SET feedback_activity_ms = :now ADD open_feedback_count :add",
                              "attribute_exists(PK) AND attribute_not_exists(deleting)",
                              values={":now": reply.created_ms, ":add": 1 if reopened else 0})
        rate_index = add_rate_claim(tx, rate) if rate is not None else None
        add_event(tx, event)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(rate_index):
                raise GuardFailed("rate") from exc
            if exc.failed(doc_index):
                raise FeedbackGone() from exc
            if exc.failed(fb_index):
                old = exc.old_items[fb_index] if fb_index < len(exc.old_items) else None
                if not old:
                    raise FeedbackGone() from exc
                if old.get("reply_count", 0) >= max_replies:
                    raise ReplyCapReached(old.get("reply_count", 0)) from exc
                raise GuardFailed("state") from exc
            raise
        return reopened

    def replies(self, feedback_ids: list[str]) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {}
        for feedback_id in feedback_ids:
            items = self.table.query_all("PK = :pk AND begins_with(SK, :r)",
                                         {":pk": f"FB#{feedback_id}", ":r": "R#"}, consistent=True)
            out[feedback_id] = [from_fields(Reply, i) for i in items]
        return out

    def set_status(self, feedback: Feedback, resolved: bool, now_ms: int, event: Optional[Event] = None) -> None:
        """open -> resolved (count - 1) or resolved -> open (count + 1), only from
        the expected state. Raises FeedbackGone if the state or document changed."""
        tx = Transaction()
        if resolved:
            tx.update(feedback_key(feedback.feedback_id), "SET #s = :new, resolved_ms = :now REMOVE resolved_in_version",
                      "attribute_exists(PK) AND #s = :old", names={"#s": "status"},
                      values={":new": "resolved", ":old": "open", ":now": now_ms})
            tx.update(document_key(feedback.document_id),
                      "ADD open_feedback_count :minus SET feedback_activity_ms = :now",
                      "attribute_exists(PK) AND attribute_not_exists(deleting) AND open_feedback_count > :zero",
                      values={":minus": -1, ":zero": 0, ":now": now_ms})
        else:
            tx.update(feedback_key(feedback.feedback_id), "SET #s = :new REMOVE resolved_ms, resolved_in_version",
                      "attribute_exists(PK) AND #s = :old", names={"#s": "status"},
                      values={":new": "open", ":old": "resolved"})
            tx.update(document_key(feedback.document_id),
                      "ADD open_feedback_count :one SET feedback_activity_ms = :now",
                      "attribute_exists(PK) AND attribute_not_exists(deleting)", values={":one": 1, ":now": now_ms})
        add_event(tx, event)
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise FeedbackGone() from exc

    def page(self, workspace_id: str, document_id: Optional[str], status: Optional[str], limit: int,
             cursor: Optional[str]) -> tuple[list[Feedback], Optional[str]]:
        """One page, newest first, of a workspace's (or one of its documents')
        feedback, optionally only one status. Reads on until the page is full."""
        index, pk_name, sk_name, pk = (
            ("GSI2", "GSI2PK", "GSI2SK", feedback_document_pk(document_id)) if document_id
            else ("GSI1", "GSI1PK", "GSI1SK", feedback_workspace_pk(workspace_id)))
        start = decode_cursor(cursor, ("PK", "SK", pk_name, sk_name))
        if start is not None and start[pk_name]["S"] != pk:
            raise BadCursor("cursor belongs to another listing")
        filters, names, values = ["workspace_id = :ws"], {}, {":pk": pk, ":ws": workspace_id}
        if status:
            filters.append("#s = :status")
            names["#s"] = "status"
            values[":status"] = status
        found: list[dict] = []
        while True:
            items, last = self.table.query(f"{pk_name} = :pk", values, index=index,
                                           limit=max(limit - len(found), 25), start_key=start,
                                           forward=False, names=names or None,
                                           filter_expression=" AND ".join(filters))
            for item in items:
                found.append(item)
                if len(found) == limit:
                    more = item is not items[-1] or last is not None
                    return ([_feedback(f) for f in found],
                            encode_cursor(_index_key(item, pk_name, sk_name)) if more else None)
            if not last:
                return [_feedback(f) for f in found], None
            start = last

    def delete_for_document(self, document_id: str) -> int:
        items = self.table.query_all("GSI2PK = :pk", {":pk": feedback_document_pk(document_id)}, index="GSI2",
                                     projected=("reply_count", "workspace_id"))
        keys = []
        for item in items:  # replies first, the thread's own item last
            if item.get("reply_count"):
                keys += [{"PK": r["PK"], "SK": r["SK"]} for r in self.table.query_all(
                    "PK = :pk AND begins_with(SK, :r)", {":pk": item["PK"], ":r": "R#"})]
            keys.append({"PK": item["PK"], "SK": item["SK"]})
        workspaces = {item["workspace_id"] for item in items}
        for workspace_id in workspaces:  # the feedback events carry the same text
            keys += [{"PK": e["PK"], "SK": e["SK"]} for e in self.table.query_all(
                "PK = :pk", {":pk": events_pk(workspace_id), ":doc": document_id, ":fb": "feedback."},
                filter_expression="document_id = :doc AND begins_with(#t, :fb)", names={"#t": "type"})]
        self.table.delete_keys(keys)
        return len(items)

    # ---------------------------------------------------------------- activity (waiting)

    def activity_head(self, workspace_id: str, now_ms: int) -> str:
        floor = now_ms - COMMIT_SKEW_MS
        recent = self._waking(workspace_id, None, floor)
        return _position(floor, [_short(e["event_id"]) for e in recent])

    def activity_since(self, workspace_id: str, document_id: Optional[str], position: str, now_ms: int,
                       limit: int) -> tuple[list[Event], str]:
        """Events after the position's floor time that it has not returned yet; the
        new floor trails the clock by COMMIT_SKEW_MS (an event committed late is still
        found) and the position remembers what it returned above the floor."""
        floor, seen = _decode_position(position)
        found = self._waking(workspace_id, document_id, floor)
        unseen = [e for e in found if _short(e["event_id"]) not in seen]
        taken = unseen[:limit]
        if len(unseen) > limit:
            new_floor = max(floor, min(now_ms - COMMIT_SKEW_MS, taken[-1]["created_ms"] - 1))
        else:
            new_floor = max(floor, now_ms - COMMIT_SKEW_MS)
        returned = seen | {_short(e["event_id"]) for e in taken}
        keep = [e for e in found if e["created_ms"] > new_floor and _short(e["event_id"]) in returned]
        if len(keep) > MAX_SEEN:  # a flood: only events older than the newest MAX_SEEN can be missed
            new_floor = keep[-MAX_SEEN - 1]["created_ms"]
            keep = [e for e in keep if e["created_ms"] > new_floor]
        return [event_record(e) for e in taken], _position(new_floor, [_short(e["event_id"]) for e in keep])

    def _waking(self, workspace_id: str, document_id: Optional[str], floor_ms: int) -> list[dict]:
        filters, values = ["wakes = :yes"], {":pk": events_pk(workspace_id), ":lo": f"{floor_ms + 1:015d}",
                                             ":yes": True}
        if document_id:
            filters.append("document_id = :doc")
            values[":doc"] = document_id
        return self.table.query_all("PK = :pk AND SK >= :lo", values, filter_expression=" AND ".join(filters),
                                    consistent=True)


def _feedback(item: dict) -> Feedback:
    return from_fields(Feedback, item)


def _index_key(item: dict, pk_name: str, sk_name: str) -> dict:
    return {name: {"S": item[name]} for name in ("PK", "SK", pk_name, sk_name)}


def _short(event_id: str) -> str:
    return hashlib.sha256(event_id.encode()).hexdigest()[:10]


def _position(floor_ms: int, seen: list[str]) -> str:
    raw = json.dumps({"f": floor_ms, "s": seen}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_position(position: str) -> tuple[int, set[str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode((position + "=" * (-len(position) % 4)).encode()))
    except (ValueError, TypeError) as exc:
        raise BadCursor("not a position of the activity log") from exc
    if (not isinstance(data, dict) or set(data) != {"f", "s"} or not isinstance(data["f"], int)
            or isinstance(data["f"], bool) or not isinstance(data["s"], list)
            or not all(isinstance(x, str) for x in data["s"])):
        raise BadCursor("not a position of the activity log")
    return data["f"], set(data["s"])
