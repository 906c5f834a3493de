"""Reviews on DynamoDB: `REV#<document_id>` / `<created_ms:015d>#<review_id>` (their own
partition: reading a document never pages through its reviews). A review, the review
state on the document's META item (conditional on its `review_seq` and `version_count`)
and the event are one TransactWriteItems."""
from __future__ import annotations

from typing import Any, Optional

from chalicelib.adapters.aws.documents import LIVE_DOCUMENT
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.adapters.aws.events import add_event
from chalicelib.adapters.aws.keys import document_key, events_pk, review_key, reviews_pk, version_item_key
from chalicelib.adapters.aws.table import (
    ConditionFailed, Table, Transaction, decode_cursor, encode_cursor, with_expressions,
)
from chalicelib import config
from chalicelib.adapters.aws.table import to_item
from chalicelib.ports.records import Document, Event, Review, ReviewStatus, fields_of, from_fields
from chalicelib.ports.errors import BadCursor, GuardFailed, StaleDocument


def _status_update(tx: Transaction, expected: Document, status: Optional[ReviewStatus]) -> int:
    """The META item's change (or, without a status, the check that the document is live)."""
    values: dict[str, Any] = {":ws": expected.workspace_id}
    if status is None:
        return tx.add({"ConditionCheck": with_expressions(
            {"TableName": config.table_name(), "Key": to_item(document_key(expected.document_id))},
            LIVE_DOCUMENT, values=values)})
    values.update({":st": status.state, ":rv": status.version, ":rd": dict(status.decisions),
                   ":rq": list(status.requested), ":one": 1, ":vc": expected.version_count})
    seq = "attribute_not_exists(review_seq)"
    if expected.review_seq:
        seq = "review_seq = :seq"
        values[":seq"] = expected.review_seq
    return tx.update(document_key(expected.document_id),
                     "SET review_state = :st, review_version = :rv, review_decisions = :rd, "
                     "review_requested = :rq ADD review_seq :one",
                     f"{LIVE_DOCUMENT} AND version_count = :vc AND {seq}", values=values)


@storage_errors
class ReviewRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def add(self, review: Review, expected: Document, status: Optional[ReviewStatus],
            event: Optional[Event] = None) -> None:
        tx = Transaction()
        doc_index = _status_update(tx, expected, status)
        version_index = tx.add({"ConditionCheck": with_expressions(
            {"TableName": config.table_name(),
             "Key": to_item(version_item_key(review.document_id, review.version_number))},
            "attribute_exists(PK)")})
        item = {k: v for k, v in fields_of(review).items() if v is not None}
        tx.put({**review_key(review.document_id, review.created_ms, review.review_id), **item},
               "attribute_not_exists(PK)")
        add_event(tx, event)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(doc_index):
                raise StaleDocument(None) from exc
            if exc.failed(version_index):
                raise GuardFailed("version") from exc
            raise

    def set_status(self, expected: Document, status: ReviewStatus, event: Optional[Event] = None) -> None:
        tx = Transaction()
        doc_index = _status_update(tx, expected, status)
        add_event(tx, event)
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(doc_index):
                raise StaleDocument(None) from exc
            raise

    def page(self, document_id: str, limit: int, cursor: Optional[str]) -> tuple[list[Review], Optional[str]]:
        pk = reviews_pk(document_id)
        start = decode_cursor(cursor, ("PK", "SK"))
        if start is not None and start["PK"]["S"] != pk:
            raise BadCursor("cursor belongs to another listing")
        items, last = self.table.query("PK = :pk", {":pk": pk}, limit=limit, start_key=start, forward=False,
                                       consistent=True)
        return [from_fields(Review, i) for i in items], encode_cursor(last)

    def delete_for_document(self, document_id: str, workspace_id: str) -> int:
        items = self.table.query_all("PK = :pk", {":pk": reviews_pk(document_id)}, consistent=True)
        keys = [{"PK": i["PK"], "SK": i["SK"]} for i in items]
        keys += [{"PK": e["PK"], "SK": e["SK"]} for e in self.table.query_all(
            "PK = :pk", {":pk": events_pk(workspace_id), ":doc": document_id, ":rv": "review."},
            filter_expression="document_id = :doc AND begins_with(#t, :rv)", names={"#t": "type"})]
        self.table.delete_keys(keys)
        return len(items)
