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
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.ports.errors import BadCursor, OutcomeUnknown, StorageUnavailable, WriteRefused

# A DynamoDB item (or an expression's names and values) as boto3 gives and takes it.
Item = dict[str, Any]

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


# ------------------------------------------------------------------ retries
#
# What the real service sends under contention and that neither botocore nor moto
# handles for us: a transaction cancelled because another one touched one of its
# items at the same moment (`TransactionConflict`) or because a partition was hot
# (`ThrottlingError` as a cancellation reason), unprocessed batch items. All of them mean
# "nothing was applied, try again shortly": retried here with jittered
# exponential backoff, a bounded number of times, then StorageUnavailable (503
# with Retry-After). A retried transaction reuses its ClientRequestToken.

# Cancellation reasons (per action) that say "busy", not "your condition failed".
BUSY_REASONS = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded",
                "RequestLimitExceeded"}
# A plain write that met an ongoing transaction on its item. (Throttling of a whole
# call, ProvisionedThroughputExceeded and the like, botocore's standard mode already
# retries with jittered backoff up to its own bound, clients.PROFILES; then 503.)
BUSY_CODES = {"TransactionConflictException"}


@dataclass
class RetryPolicy:
    """Full-jitter exponential backoff: attempt n (from 1) waits up to
    min(cap, base * 2**n) seconds. Tests inject `sleep` (never a real wait)."""
    attempts: int = 6
    base_seconds: float = 0.02
    cap_seconds: float = 0.5
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[float, float], float] = random.uniform

    def pause(self, attempt: int) -> None:
        self.sleep(self.jitter(0, min(self.cap_seconds, self.base_seconds * 2 ** attempt)))

    def worst_case_seconds(self) -> float:
        return sum(min(self.cap_seconds, self.base_seconds * 2 ** n) for n in range(1, self.attempts))


RETRY = RetryPolicy()


def _code(exc: ClientError) -> str:
    return (exc.response or {}).get("Error", {}).get("Code") or "ClientError"


def _busy(exc: ClientError) -> bool:
    """A refusal that only says "busy, try again": nothing was applied."""
    code = _code(exc)
    if code == "TransactionCanceledException":
        reasons = {r.get("Code") for r in exc.response.get("CancellationReasons") or []}
        return bool(reasons & BUSY_REASONS) and "ConditionalCheckFailed" not in reasons
    return code in BUSY_CODES


def retrying(call: Callable[[], Any]) -> Any:
    """`call()`, retried while DynamoDB answers busy (bounded, jittered); the last
    busy answer is raised as it came (callers map it)."""
    for attempt in range(1, RETRY.attempts + 1):
        try:
            return call()
        except ClientError as exc:
            if not _busy(exc) or attempt == RETRY.attempts:
                raise
        RETRY.pause(attempt)
    raise AssertionError("unreachable")


# DynamoDB refuses these before applying anything.
_REFUSED_CODES = {"TransactionCanceledException", "ConditionalCheckFailedException", "ThrottlingException",
                  "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ValidationException"}


def _failed_write(exc: BaseException, uncertain: bool = False) -> Exception:
    """The port's exception for a write that failed. Known not applied only if
    DynamoDB refused it on the first attempt: a timeout or a 5xx may hide a commit,
    and so may an earlier attempt of a call botocore retried (the
    ClientRequestToken makes such retries idempotent, but a last attempt that was
    refused says nothing about the first)."""
    if isinstance(exc, ClientError):
        response = exc.response or {}
        code = response.get("Error", {}).get("Code") or "ClientError"
        if (code in _REFUSED_CODES and not uncertain
                and response.get("ResponseMetadata", {}).get("RetryAttempts", 0) == 0):
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
        # One token for every attempt of this transaction (botocore's and ours): a retry
        # of an attempt that committed but whose answer was lost succeeds instead of
        # failing its own conditions (DynamoDB keeps a token for 10 minutes).
        token = str(uuid.uuid4())
        uncertain = False

        def attempt():
            nonlocal uncertain
            try:
                return aws.dynamodb().transact_write_items(TransactItems=self.actions, ClientRequestToken=token)
            except ClientError as exc:
                uncertain = uncertain or exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) > 0
                raise

        try:
            retrying(attempt)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raw = exc.response.get("CancellationReasons") or []
                reasons = [r.get("Code", "None") for r in raw]
                if "ConditionalCheckFailed" in reasons:
                    raise ConditionFailed(reasons, [from_item(r.get("Item")) for r in raw], uncertain) from exc
            # Still busy after every retry, or a 5xx: storage trouble (503).
            raise _failed_write(exc, uncertain) from exc
        except BotoCoreError as exc:
            raise _failed_write(exc) from exc


class Table:
    """Thin helpers over the low-level client for one table."""

    @property
    def name(self) -> str:
        return config.table_name()

    def get(self, key: dict, consistent: bool = True) -> Optional[dict]:
        resp = retrying(lambda: aws.dynamodb().get_item(TableName=self.name, Key=to_item(key),
                                                        ConsistentRead=consistent))
        return from_item(resp.get("Item"))

    def batch_get(self, keys: list[dict], consistent: bool = True) -> list[Optional[dict]]:
        """Items for keys, in the same order (None where missing); one round trip per 100 keys."""
        found: dict[tuple, dict] = {}
        for start in range(0, len(keys), 100):
            self._batch_get_chunk(keys[start:start + 100], found, consistent)
        return [found.get((k["PK"], k["SK"])) for k in keys]

    def _batch_get_chunk(self, keys: list[dict], found: dict, consistent: bool) -> None:
        request = {self.name: {"Keys": [to_item(k) for k in keys], "ConsistentRead": consistent}}
        for attempt in range(1, RETRY.attempts + 1):
            resp = retrying(lambda: aws.dynamodb().batch_get_item(RequestItems=request))
            for raw in resp.get("Responses", {}).get(self.name, []):
                item = from_item(raw)
                if item is not None:
                    found[(item["PK"], item["SK"])] = item
            request = resp.get("UnprocessedKeys") or {}
            if not request:
                return
            if attempt < RETRY.attempts:
                RETRY.pause(attempt)  # unprocessed keys: the partition is busy
        raise StorageUnavailable("UnprocessedKeys")

    def query(self, key_condition: str, values: dict, index: Optional[str] = None,
              limit: Optional[int] = None, start_key: Optional[dict] = None,
              forward: bool = True, names: Optional[dict] = None,
              filter_expression: Optional[str] = None, consistent: bool = False,
              projected: Optional[tuple[str, ...]] = None) -> tuple[list[dict], Optional[dict]]:
        """One page. On an index (whose projection is narrow, schema.INDEX_PROJECTIONS):
        with `projected`, the items hold their keys and those attributes, read from the
        index alone; without it, the index gives the keys and the items are read from the
        table (one consistent BatchGetItem), in index order, leaving out any that is gone
        or has left this index partition since (the index lags the table)."""
        if index and projected is not None:
            from chalicelib.adapters.aws.schema import INDEX_PROJECTIONS

            extra = set(projected) - set(INDEX_PROJECTIONS[index])
            assert not extra, f"{index} does not project {sorted(extra)}: add them to schema.INDEX_PROJECTIONS"
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
        resp = retrying(lambda: aws.dynamodb().query(**params))
        items: list[dict] = [from_item(i) for i in resp.get("Items", [])]  # type: ignore[misc]
        if index and projected is not None:
            wanted = set(projected) | {"PK", "SK", f"{index}PK", f"{index}SK"}
            items = [{k: v for k, v in item.items() if k in wanted} for item in items]
        elif index:
            items = self._current_items(items, index)
        return items, resp.get("LastEvaluatedKey")

    def _current_items(self, index_items: list[dict], index: str) -> list[dict]:
        """The table's items behind an index page (see `query`)."""
        if not index_items:
            return []
        current = self.batch_get([{"PK": i["PK"], "SK": i["SK"]} for i in index_items])
        return [item for listed, item in zip(index_items, current)
                if item is not None and item.get(f"{index}PK") == listed.get(f"{index}PK")]

    def scan(self, filter_expression: str, values: dict, names: Optional[dict] = None) -> Iterator[list[dict]]:
        """Every item of the table that passes the filter, a page at a time. A Scan reads
        the whole table (the filter only trims the answer): operators' upgrade steps only,
        never a request's path."""
        params: dict[str, Any] = {"TableName": self.name, "FilterExpression": filter_expression,
                                  "ExpressionAttributeValues": {k: to_attr(v) for k, v in values.items()}}
        if names:
            params["ExpressionAttributeNames"] = names
        while True:
            resp = retrying(lambda: aws.dynamodb().scan(**params))
            yield [from_item(i) for i in resp.get("Items", [])]  # type: ignore[misc]
            if not resp.get("LastEvaluatedKey"):
                return
            params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

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
            retrying(lambda: aws.dynamodb().put_item(**params))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConditionFailed(["ConditionalCheckFailed"], [None]) from exc
            raise

    def update(self, key: dict, update: str, condition: Optional[str] = None,
               names: Optional[Item] = None, values: Optional[Item] = None,
               returned: str = "ALL_NEW") -> Optional[Item]:
        params = with_expressions({"TableName": self.name, "Key": to_item(key), "UpdateExpression": update,
                                   "ReturnValues": returned}, condition, names, values)
        try:
            resp = retrying(lambda: aws.dynamodb().update_item(**params))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConditionFailed(["ConditionalCheckFailed"], [None]) from exc
            raise
        return from_item(resp.get("Attributes")) or {}  # ALL_NEW: the item as stored

    def delete(self, key: dict) -> None:
        retrying(lambda: aws.dynamodb().delete_item(TableName=self.name, Key=to_item(key)))

    def delete_keys(self, keys: list[dict]) -> None:
        for start in range(0, len(keys), 25):
            chunk = keys[start:start + 25]
            request = {self.name: [{"DeleteRequest": {"Key": to_item(k)}} for k in chunk]}
            for attempt in range(1, RETRY.attempts + 1):
                resp = retrying(lambda: aws.dynamodb().batch_write_item(RequestItems=request))
                request = resp.get("UnprocessedItems") or {}
                if not request:
                    break
                if attempt < RETRY.attempts:
                    RETRY.pause(attempt)
            else:
                # Deletes are idempotent: a repeated call finishes the job.
                raise StorageUnavailable("UnprocessedItems")


