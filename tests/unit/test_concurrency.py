"""Concurrent writers through the service layer (threads, emulated storage).

Publishes and edits racing on one document: every acknowledged version is
stored, numbered without gaps, readable with the content that was
acknowledged, and no edit is lost. (Against moto this also needs
tests.moto_isolation.serialize_emulated_dynamodb: without it moto's
transactions wipe each other's commits.)
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from chalicelib.errors import VersionConflict
from chalicelib.models import EditOperation, EditRequest, PublishRequest
from chalicelib.services.auth import credentials_from_key

END = "<!--end-->"


def test_racing_edits_and_publishes_lose_nothing(services):
    ws, created = services.workspaces.create_workspace("Race", "pro")
    keys = [created.api_key] + [services.workspaces.create_key(ws.id, f"k{i}").api_key for i in range(5)]
    docs = services.documents
    first = docs.publish(credentials_from_key(keys[0]), PublishRequest(title="Race", html=f"<main>{END}</main>"))
    document_id = first.response.document_id
    markers: list[str] = []
    published: list[tuple[str, str]] = []
    lock = threading.Lock()

    def writer(index: int) -> None:
        who = credentials_from_key(keys[index % len(keys)])
        for n in range(6):
            marker = f"<p>w{index} n{n}</p>"
            try:
                result = docs.edit(who, document_id, EditRequest(
                    edits=[EditOperation(old_string=END, new_string=marker + END)]))
            except VersionConflict:
                continue  # the contract allows 409 after repeated races; it stored nothing
            with lock:
                markers.append(marker)
                published.append((result.response.version_id, marker))

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(writer, range(6)))

    detail = docs.get(credentials_from_key(keys[0]), document_id, include_html=True)
    assert detail.version_count == len(markers) + 1
    assert [v.number for v in detail.versions] == list(range(1, detail.version_count + 1))
    assert all(m in detail.html for m in markers), "an acknowledged edit was lost"
    for version_id, marker in published:
        html = docs.get(credentials_from_key(keys[0]), document_id, True, version_id).html
        assert marker in html
    assert len(markers) >= 18  # most writes got through


def test_a_failed_transaction_on_moto_leaves_every_item_as_it_was(aws):
    """tests/moto_isolation.py backs up only the items a failing transaction touches (not the
    table): an update applied in place, a put and a delete before the failed condition are
    all undone, and the items it never touched are the same."""
    import boto3
    import pytest
    from botocore.exceptions import ClientError

    from chalicelib import config

    table = config.table_name()
    db = boto3.client("dynamodb")

    def item(pk: str, n: int) -> dict:
        return {"PK": {"S": pk}, "SK": {"S": "x"}, "n": {"N": str(n)}}

    for pk in ("kept", "updated", "deleted"):
        db.put_item(TableName=table, Item=item(pk, 1))
    with pytest.raises(ClientError) as refused:
        db.transact_write_items(TransactItems=[
            {"Update": {"TableName": table, "Key": {"PK": {"S": "updated"}, "SK": {"S": "x"}},
                        "UpdateExpression": "SET n = :two", "ExpressionAttributeValues": {":two": {"N": "2"}}}},
            {"Put": {"TableName": table, "Item": item("new", 1)}},
            {"Delete": {"TableName": table, "Key": {"PK": {"S": "deleted"}, "SK": {"S": "x"}}}},
            {"ConditionCheck": {"TableName": table, "Key": {"PK": {"S": "missing"}, "SK": {"S": "x"}},
                                "ConditionExpression": "attribute_exists(PK)"}},
        ])
    reasons = [r["Code"] for r in refused.value.response["CancellationReasons"]]
    assert reasons == ["None", "None", "None", "ConditionalCheckFailed"]

    def n_of(pk: str):
        got = db.get_item(TableName=table, Key={"PK": {"S": pk}, "SK": {"S": "x"}}, ConsistentRead=True)
        return got["Item"]["n"]["N"] if "Item" in got else None

    assert [n_of(pk) for pk in ("kept", "updated", "deleted", "new")] == ["1", "1", "1", None]
    # The same update alone commits (the backup is not the table from then on).
    db.transact_write_items(TransactItems=[
        {"Update": {"TableName": table, "Key": {"PK": {"S": "updated"}, "SK": {"S": "x"}},
                    "UpdateExpression": "SET n = :two", "ExpressionAttributeValues": {":two": {"N": "2"}}}}])
    assert n_of("updated") == "2"
