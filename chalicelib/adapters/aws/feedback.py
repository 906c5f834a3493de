"""Viewer feedback: `FB#<id>`, listed through GSI1 (workspace) and GSI2 (document)."""
from __future__ import annotations

from typing import Optional

from chalicelib.adapters.aws.documents import LIVE_DOCUMENT
from chalicelib.adapters.aws.keys import (
    document_key, feedback_document_pk, feedback_key, feedback_sort_key, feedback_workspace_pk,
)
from chalicelib.adapters.aws.rates import add_rate_claim
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction, decode_cursor, encode_cursor
from chalicelib.ports.records import BadCursor, FeedbackGone, GuardFailed, RateClaim, StaleDocument
from chalicelib.adapters.aws.errors import storage_errors


@storage_errors
class FeedbackRepository:
    """Viewer feedback. Item `FB#<id>`; GSI1 lists a workspace's feedback and GSI2
    a document's, newest first. The document's `open_feedback_count` changes in the
    same transaction as the feedback, with conditions, so it never drifts."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, feedback_id: str) -> Optional[dict]:
        return self.table.get(feedback_key(feedback_id))

    def create(self, feedback: dict, rate: Optional[RateClaim]) -> None:
        """Store feedback, count it as open on its document and claim the
        submitter's rate slot, atomically. Raises StaleDocument if the document
        is gone or being deleted, GuardFailed("rate") if the log moved."""
        tx = Transaction()
        sort_key = feedback_sort_key(feedback["created_ms"], feedback["feedback_id"])
        tx.put({**feedback_key(feedback["feedback_id"]), **feedback,
                "GSI1PK": feedback_workspace_pk(feedback["workspace_id"]), "GSI1SK": sort_key,
                "GSI2PK": feedback_document_pk(feedback["document_id"]), "GSI2SK": sort_key},
               "attribute_not_exists(PK)")
        doc_index = tx.update(
            document_key(feedback["document_id"]), "ADD open_feedback_count :one", LIVE_DOCUMENT,
            values={":one": 1, ":ws": feedback["workspace_id"]})
        rate_index = add_rate_claim(tx, rate) if rate is not None else None
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(rate_index):
                raise GuardFailed("rate") from exc
            if exc.failed(doc_index):
                raise StaleDocument(None) from exc
            raise

    def set_status(self, feedback: dict, resolved: bool, now_ms: int) -> None:
        """open -> resolved (count - 1) or resolved -> open (count + 1), only from
        the expected state. Raises FeedbackGone if the state or document changed."""
        tx = Transaction()
        if resolved:
            tx.update(feedback_key(feedback["feedback_id"]), "SET #s = :new, resolved_ms = :now",
                      "attribute_exists(PK) AND #s = :old", names={"#s": "status"},
                      values={":new": "resolved", ":old": "open", ":now": now_ms})
            tx.update(document_key(feedback["document_id"]), "ADD open_feedback_count :minus",
                      "attribute_exists(PK) AND attribute_not_exists(deleting) AND open_feedback_count > :zero",
                      values={":minus": -1, ":zero": 0})
        else:
            tx.update(feedback_key(feedback["feedback_id"]), "SET #s = :new REMOVE resolved_ms",
                      "attribute_exists(PK) AND #s = :old", names={"#s": "status"},
                      values={":new": "open", ":old": "resolved"})
            tx.update(document_key(feedback["document_id"]), "ADD open_feedback_count :one",
                      "attribute_exists(PK) AND attribute_not_exists(deleting)", values={":one": 1})
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise FeedbackGone() from exc

    def page(self, workspace_id: str, document_id: Optional[str], status: Optional[str], limit: int,
             cursor: Optional[str]) -> tuple[list[dict], Optional[str]]:
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
                    return found, encode_cursor(_index_key(item, pk_name, sk_name)) if more else None
            if not last:
                return found, None
            start = last

    def delete_for_document(self, document_id: str) -> int:
        items = self.table.query_all("GSI2PK = :pk", {":pk": feedback_document_pk(document_id)}, index="GSI2")
        self.table.delete_keys([{"PK": i["PK"], "SK": i["SK"]} for i in items])
        return len(items)


def _index_key(item: dict, pk_name: str, sk_name: str) -> dict:
    return {name: {"S": item[name]} for name in ("PK", "SK", pk_name, sk_name)}
