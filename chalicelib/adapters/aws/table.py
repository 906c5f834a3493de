"""DynamoDB plumbing: item (de)serialisation, cursors, the Table helpers and
Transaction (one TransactWriteItems call). The repositories build on these.

One table, generic keys (PK/SK) and two generic indexes (GSI1, GSI2); the key
scheme is in keys.py and docs/architecture.md. Multi-item changes are single
TransactWriteItems calls with conditions, so counters never drift and no
read-modify-write race can lose an update.
"""
from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.ports.records import BadCursor, OutcomeUnknown, WriteRefused

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


# ------------------------------------------------------------------ plumbing

def to_attr(value: Any) -> dict:
    return _serializer.serialize(value)


def to_item(data: dict) -> dict:
    return {k: _serializer.serialize(v) for k, v in data.items() if v is not None}


def from_item(item: Optional[dict]) -> Optional[dict]:
    if not item:
        return None
    out = {k: _deserializer.deserialize(v) for k, v in item.items()}
    for k, v in out.items():
        # Numbers come back as Decimal; every number we store is an integer.
        if type(v).__name__ == "Decimal":
            out[k] = int(v)
        elif isinstance(v, list):
            out[k] = [int(x) if type(x).__name__ == "Decimal" else x for x in v]
    return out


def with_expressions(params: dict, condition: Optional[str] = None, names: Optional[dict] = None,
                     values: Optional[dict] = None) -> dict:
    """`params` plus the condition and expression attribute names/values given."""
    if condition:
        params["ConditionExpression"] = condition
    if names:
        params["ExpressionAttributeNames"] = names
    if values:
        params["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
    return params


def encode_cursor(last_key: Optional[dict]) -> Optional[str]:
    if not last_key:
        return None
    raw = json.dumps(last_key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: Optional[str], expected_keys: Iterable[str]) -> Optional[dict]:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError) as exc:
        raise BadCursor("cursor is not valid") from exc
    if not isinstance(data, dict) or set(data) != set(expected_keys) or not all(
            isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in data.values()):
        raise BadCursor("cursor is not valid")
    return data


# DynamoDB refuses these before applying anything.
_REFUSED_CODES = {"TransactionCanceledException", "ConditionalCheckFailedException", "ThrottlingException",
                  "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ValidationException"}


def _failed_write(exc: BaseException) -> Exception:
    """The port's exception for a write that failed. Known not applied only if
    DynamoDB refused it on the first attempt: a timeout or a 5xx may hide a commit,
    and so may an earlier attempt of a call botocore retried (the
    ClientRequestToken makes such retries idempotent, but a last attempt that was
    refused says nothing about the first)."""
    if isinstance(exc, ClientError):
        response = exc.response or {}
        code = response.get("Error", {}).get("Code") or "ClientError"
        if code in _REFUSED_CODES and response.get("ResponseMetadata", {}).get("RetryAttempts", 0) == 0:
            return WriteRefused(code)
        return OutcomeUnknown(code)
    return OutcomeUnknown(type(exc).__name__)


class ConditionFailed(WriteRefused):
    """A transaction was cancelled; `reasons[i]` is the code for action i, and
    `old_items[i]` the item as it was when the condition failed (if asked for)."""

    def __init__(self, reasons: list[str], old_items: list[Optional[dict]], retried: bool = False):
        super().__init__("ConditionalCheckFailed")
        self.reasons = reasons
        self.old_items = old_items
        # Refused on a retry of a call whose earlier attempt failed without an answer
        # (a 5xx or a timeout): that attempt may have committed, and the conditions
        # failed on its own changes. The outcome is unknown until someone looks.
        self.retried = retried

    def failed(self, index: Optional[int]) -> bool:
        return index is not None and index < len(self.reasons) and self.reasons[index] == "ConditionalCheckFailed"


@dataclass
class Transaction:
    """Collects TransactWriteItems actions; each repository method appends its own."""

    actions: list[dict] = field(default_factory=list)

    def add(self, action: dict) -> int:
        self.actions.append(action)
        return len(self.actions) - 1

    def update(self, key: dict, update: str, condition: Optional[str] = None,
               names: Optional[dict] = None, values: Optional[dict] = None,
               return_old: bool = False) -> int:
        body = with_expressions({"TableName": config.table_name(), "Key": to_item(key),
                                 "UpdateExpression": update}, condition, names, values)
        if return_old:
            body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return self.add({"Update": body})

    def put(self, item: dict, condition: Optional[str] = None, values: Optional[dict] = None) -> int:
        return self.add({"Put": with_expressions({"TableName": config.table_name(), "Item": to_item(item)},
                                                 condition, values=values)})

    def delete(self, key: dict, condition: Optional[str] = None, values: Optional[dict] = None,
               names: Optional[dict] = None) -> int:
        return self.add({"Delete": with_expressions({"TableName": config.table_name(), "Key": to_item(key)},
                                                    condition, names, values)})

    def commit(self) -> None:
        if not self.actions:
            return
        try:
            # The token makes botocore's retries of this call idempotent: a retry of an
            # attempt that committed but whose answer was lost succeeds instead of failing.
            aws.dynamodb().transact_write_items(TransactItems=self.actions, ClientRequestToken=str(uuid.uuid4()))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raw = exc.response.get("CancellationReasons") or []
                reasons = [r.get("Code", "None") for r in raw]
                if "ConditionalCheckFailed" in reasons:
                    retried = exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) > 0
                    raise ConditionFailed(reasons, [from_item(r.get("Item")) for r in raw], retried) from exc
            # Others (conflicts with a concurrent transaction, throttling, 5xx) are storage trouble.
            raise _failed_write(exc) from exc
        except BotoCoreError as exc:
            raise _failed_write(exc) from exc


class Table:
    """Thin helpers over the low-level client for one table."""

    @property
    def name(self) -> str:
        return config.table_name()

    def get(self, key: dict, consistent: bool = True) -> Optional[dict]:
        resp = aws.dynamodb().get_item(TableName=self.name, Key=to_item(key), ConsistentRead=consistent)
        return from_item(resp.get("Item"))

    def batch_get(self, keys: list[dict]) -> list[Optional[dict]]:
        """Items for keys, in the same order (None where missing); one round trip."""
        request = {self.name: {"Keys": [to_item(k) for k in keys], "ConsistentRead": True}}
        found: dict[tuple, dict] = {}
        while request:
            resp = aws.dynamodb().batch_get_item(RequestItems=request)
            for raw in resp.get("Responses", {}).get(self.name, []):
                item = from_item(raw)
                if item is not None:
                    found[(item["PK"], item["SK"])] = item
            request = resp.get("UnprocessedKeys") or {}
        return [found.get((k["PK"], k["SK"])) for k in keys]

    def query(self, key_condition: str, values: dict, index: Optional[str] = None,
              limit: Optional[int] = None, start_key: Optional[dict] = None,
              forward: bool = True, names: Optional[dict] = None,
              filter_expression: Optional[str] = None, consistent: bool = False
              ) -> tuple[list[dict], Optional[dict]]:
        params: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeValues": {k: to_attr(v) for k, v in values.items()},
            "ScanIndexForward": forward,
        }
        if index:
            params["IndexName"] = index
        else:
            params["ConsistentRead"] = consistent
        if limit:
            params["Limit"] = limit
        if start_key:
            params["ExclusiveStartKey"] = start_key
        if names:
            params["ExpressionAttributeNames"] = names
        if filter_expression:
            params["FilterExpression"] = filter_expression
        resp = aws.dynamodb().query(**params)
        return [d for i in resp.get("Items", []) if (d := from_item(i)) is not None], resp.get("LastEvaluatedKey")

    def query_all(self, key_condition: str, values: dict, **kwargs) -> list[dict]:
        items: list[dict] = []
        start = None
        while True:
            page, start = self.query(key_condition, values, start_key=start, **kwargs)
            items.extend(page)
            if not start:
                return items

    def put(self, item: dict, condition: Optional[str] = None, values: Optional[dict] = None) -> None:
        params = with_expressions({"TableName": self.name, "Item": to_item(item)}, condition, values=values)
        try:
            aws.dynamodb().put_item(**params)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConditionFailed(["ConditionalCheckFailed"], [None]) from exc
            raise

    def update(self, key: dict, update: str, condition: Optional[str] = None,
               names: Optional[dict] = None, values: Optional[dict] = None) -> dict:
        params = with_expressions({"TableName": self.name, "Key": to_item(key), "UpdateExpression": update,
                                   "ReturnValues": "ALL_NEW"}, condition, names, values)
        try:
            resp = aws.dynamodb().update_item(**params)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConditionFailed(["ConditionalCheckFailed"], [None]) from exc
            raise
        return from_item(resp.get("Attributes")) or {}  # ALL_NEW: the item as stored

    def delete(self, key: dict) -> None:
        aws.dynamodb().delete_item(TableName=self.name, Key=to_item(key))

    def delete_keys(self, keys: list[dict]) -> None:
        for start in range(0, len(keys), 25):
            chunk = keys[start:start + 25]
            request = {self.name: [{"DeleteRequest": {"Key": to_item(k)}} for k in chunk]}
            while request:
                resp = aws.dynamodb().batch_write_item(RequestItems=request)
                request = resp.get("UnprocessedItems") or {}


