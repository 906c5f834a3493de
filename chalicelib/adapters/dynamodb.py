"""DynamoDB repositories: the only code that builds DynamoDB expressions.

One table, generic keys (PK/SK) and two generic indexes (GSI1, GSI2). The key
scheme is documented in docs/architecture.md. Multi-item changes are single
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
from botocore.exceptions import ClientError

from chalicelib import config
from chalicelib.adapters import aws

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


def encode_cursor(last_key: Optional[dict]) -> Optional[str]:
    if not last_key:
        return None
    raw = json.dumps(last_key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class BadCursor(ValueError):
    pass


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


def definitely_not_applied(exc: BaseException) -> bool:
    """Whether a failed write is known not to have been applied. A timeout or a 5xx
    may hide a commit; so may an earlier attempt of a call botocore retried (the
    ClientRequestToken makes such retries idempotent, but a last attempt that was
    refused says nothing about the first)."""
    if isinstance(exc, ConditionFailed):
        return True
    if isinstance(exc, ClientError):
        response = exc.response or {}
        return (response.get("Error", {}).get("Code") in _REFUSED_CODES
                and response.get("ResponseMetadata", {}).get("RetryAttempts", 0) == 0)
    return False


class ConditionFailed(Exception):
    """A transaction was cancelled; `reasons[i]` is the code for action i, and
    `old_items[i]` the item as it was when the condition failed (if asked for)."""

    def __init__(self, reasons: list[str], old_items: list[Optional[dict]]):
        super().__init__(reasons)
        self.reasons = reasons
        self.old_items = old_items

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
        body: dict[str, Any] = {"TableName": config.table_name(), "Key": to_item(key),
                                "UpdateExpression": update}
        if condition:
            body["ConditionExpression"] = condition
        if names:
            body["ExpressionAttributeNames"] = names
        if values:
            body["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
        if return_old:
            body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return self.add({"Update": body})

    def put(self, item: dict, condition: Optional[str] = None, values: Optional[dict] = None) -> int:
        body: dict[str, Any] = {"TableName": config.table_name(), "Item": to_item(item)}
        if condition:
            body["ConditionExpression"] = condition
        if values:
            body["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
        return self.add({"Put": body})

    def delete(self, key: dict, condition: Optional[str] = None, values: Optional[dict] = None,
               names: Optional[dict] = None) -> int:
        body: dict[str, Any] = {"TableName": config.table_name(), "Key": to_item(key)}
        if condition:
            body["ConditionExpression"] = condition
        if values:
            body["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
        if names:
            body["ExpressionAttributeNames"] = names
        return self.add({"Delete": body})

    def commit(self) -> None:
        if not self.actions:
            return
        try:
            # The token makes botocore's retries of this call idempotent: a retry of an
            # attempt that committed but whose answer was lost succeeds instead of failing.
            aws.dynamodb().transact_write_items(TransactItems=self.actions, ClientRequestToken=str(uuid.uuid4()))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            raw = exc.response.get("CancellationReasons") or []
            reasons = [r.get("Code", "None") for r in raw]
            old = [from_item(r.get("Item")) for r in raw]
            if "ConditionalCheckFailed" not in reasons:
                # Conflicts with a concurrent transaction are retryable server-side.
                raise
            raise ConditionFailed(reasons, old) from exc


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
        return [from_item(i) for i in resp.get("Items", [])], resp.get("LastEvaluatedKey")

    def query_all(self, key_condition: str, values: dict, **kwargs) -> list[dict]:
        items: list[dict] = []
        start = None
        while True:
            page, start = self.query(key_condition, values, start_key=start, **kwargs)
            items.extend(page)
            if not start:
                return items

    def put(self, item: dict, condition: Optional[str] = None, values: Optional[dict] = None) -> None:
        params: dict[str, Any] = {"TableName": self.name, "Item": to_item(item)}
        if condition:
            params["ConditionExpression"] = condition
        if values:
            params["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
        aws.dynamodb().put_item(**params)

    def update(self, key: dict, update: str, condition: Optional[str] = None,
               names: Optional[dict] = None, values: Optional[dict] = None) -> Optional[dict]:
        params: dict[str, Any] = {"TableName": self.name, "Key": to_item(key),
                                  "UpdateExpression": update, "ReturnValues": "ALL_NEW"}
        if condition:
            params["ConditionExpression"] = condition
        if names:
            params["ExpressionAttributeNames"] = names
        if values:
            params["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
        try:
            resp = aws.dynamodb().update_item(**params)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConditionFailed(["ConditionalCheckFailed"], [None]) from exc
            raise
        return from_item(resp.get("Attributes"))

    def delete_keys(self, keys: list[dict]) -> None:
        for start in range(0, len(keys), 25):
            chunk = keys[start:start + 25]
            request = {self.name: [{"DeleteRequest": {"Key": to_item(k)}} for k in chunk]}
            while request:
                resp = aws.dynamodb().batch_write_item(RequestItems=request)
                request = resp.get("UnprocessedItems") or {}


# ------------------------------------------------------------------ keys

def workspace_key(workspace_id: str) -> dict:
    return {"PK": f"WS#{workspace_id}", "SK": "WS"}


def api_key_key(key_id: str) -> dict:
    return {"PK": f"KEY#{key_id}", "SK": "KEY"}


def document_key(document_id: str) -> dict:
    return {"PK": f"DOC#{document_id}", "SK": "META"}


def version_item_key(document_id: str, number: int) -> dict:
    return {"PK": f"DOC#{document_id}", "SK": f"V#{number:08d}"}


def share_key(share_id: str) -> dict:
    return {"PK": f"SHARE#{share_id}", "SK": "SHARE"}


def idempotency_key(key_id: str, key_digest: str) -> dict:
    # Scoped to the API key: a retry comes from the client that sent the first try.
    return {"PK": f"IDEM#{key_id}#{key_digest}", "SK": "IDEM"}


def rate_key(scope: str) -> dict:
    return {"PK": f"RATE#{scope}", "SK": "RATE"}


def feedback_key(feedback_id: str) -> dict:
    return {"PK": f"FB#{feedback_id}", "SK": "FB"}


def feedback_workspace_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#FB"


def feedback_document_pk(document_id: str) -> str:
    return f"DOC#{document_id}#FB"


def feedback_sort_key(created_ms: int, feedback_id: str) -> str:
    return f"{created_ms:015d}#{feedback_id}"


def documents_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#DOCS"


def keys_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#KEYS"


def documents_sort_key(updated_ms: int, document_id: str) -> str:
    return f"{updated_ms:015d}#{document_id}"


# ------------------------------------------------------------------ repositories

@dataclass
class RateSlot:
    """A write slot to claim on an API key item, as part of a transaction."""
    key_id: str
    expected_seq: int
    new_log: list[int]
    now_ms: int


@dataclass
class IdempotencyRecord:
    key_id: str
    key_digest: str
    request_hash: str
    response_json: str
    expires_at: int
    now: int


class Guards:
    """Conditions every accepted write carries: its rate slot and idempotency record."""

    @staticmethod
    def add(tx: Transaction, slot: Optional[RateSlot], idem: Optional[IdempotencyRecord]) -> dict:
        indexes: dict[str, int] = {}
        if slot is not None:
            indexes["rate"] = tx.update(
                api_key_key(slot.key_id),
                "SET writes = :log, writes_seq = :next, last_used_at = :now",
                "attribute_exists(PK) AND attribute_not_exists(revoked_at) AND writes_seq = :seq",
                values={":log": slot.new_log, ":next": slot.expected_seq + 1,
                        ":seq": slot.expected_seq, ":now": slot.now_ms},
            )
        if idem is not None:
            indexes["idem"] = tx.put(
                {**idempotency_key(idem.key_id, idem.key_digest),
                 "request_hash": idem.request_hash, "response": idem.response_json,
                 "expires_at": idem.expires_at},
                "attribute_not_exists(PK) OR expires_at < :now",
                {":now": idem.now},
            )
        return indexes


class WorkspaceRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, workspace_id: str) -> Optional[dict]:
        return self.table.get(workspace_key(workspace_id))

    def create(self, workspace: dict) -> None:
        self.table.put({**workspace_key(workspace["id"]), **workspace, "document_count": 0, "key_count": 0},
                       "attribute_not_exists(PK)")

    def set_plan(self, workspace_id: str, plan: str) -> dict:
        return self.table.update(workspace_key(workspace_id), "SET #plan = :plan",
                                 "attribute_exists(PK)", names={"#plan": "plan"}, values={":plan": plan})

    def set_fields(self, workspace_id: str, fields: dict) -> dict:
        names = {f"#f{i}": k for i, k in enumerate(fields)}
        sets, removes, values = [], [], {}
        for i, (k, v) in enumerate(fields.items()):
            if v is None:
                removes.append(f"#f{i}")
            else:
                sets.append(f"#f{i} = :v{i}")
                values[f":v{i}"] = v
        expression = " ".join(part for part in (
            ("SET " + ", ".join(sets)) if sets else "",
            ("REMOVE " + ", ".join(removes)) if removes else "") if part)
        return self.table.update(workspace_key(workspace_id), expression, "attribute_exists(PK)",
                                 names=names, values=values or None)


class ApiKeyRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, key_id: str) -> Optional[dict]:
        return self.table.get(api_key_key(key_id))

    def create(self, record: dict, max_keys: Optional[int]) -> None:
        """Store a key, counting it against the workspace's cap in one transaction."""
        tx = Transaction()
        ws_index = tx.update(
            workspace_key(record["workspace_id"]),
            "SET key_count = key_count + :one",
            "attribute_exists(PK)" + ("" if max_keys is None else " AND key_count < :max"),
            values={":one": 1, **({} if max_keys is None else {":max": max_keys})},
            return_old=True,
        )
        tx.put({**api_key_key(record["key_id"]), **record, "writes": [], "writes_seq": 0,
                "GSI1PK": keys_index_pk(record["workspace_id"]),
                "GSI1SK": f"{record['created_ms']:015d}#{record['key_id']}"},
               "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(ws_index):
                raise KeyCapReached(exc.old_items[ws_index]) from exc
            raise

    def revoke(self, key_id: str, now_ms: int) -> Optional[dict]:
        """Mark revoked and free its place in the cap; None if unknown or already revoked."""
        item = self.get(key_id)
        if item is None or item.get("revoked_at") is not None:
            return item
        tx = Transaction()
        tx.update(api_key_key(key_id), "SET revoked_at = :now",
                  "attribute_exists(PK) AND attribute_not_exists(revoked_at)", values={":now": now_ms})
        tx.update(workspace_key(item["workspace_id"]), "SET key_count = key_count - :one",
                  "key_count > :zero", values={":one": 1, ":zero": 0})
        try:
            tx.commit()
        except ConditionFailed:
            return self.get(key_id)
        item["revoked_at"] = now_ms
        return item

    def list_for_workspace(self, workspace_id: str) -> list[dict]:
        return self.table.query_all("GSI1PK = :pk", {":pk": keys_index_pk(workspace_id)},
                                    index="GSI1", forward=False)

    def touch(self, key_id: str, now_ms: int) -> None:
        self.table.update(api_key_key(key_id), "SET last_used_at = :now", "attribute_exists(PK)",
                          values={":now": now_ms})


class KeyCapReached(Exception):
    def __init__(self, workspace: Optional[dict]):
        super().__init__("key cap reached")
        self.workspace = workspace


class DocumentCapReached(Exception):
    def __init__(self, workspace: Optional[dict]):
        super().__init__("document cap reached")
        self.workspace = workspace


class StaleDocument(Exception):
    """The document changed (or vanished) since it was read."""

    def __init__(self, current: Optional[dict]):
        super().__init__("document changed")
        self.current = current


class GuardFailed(Exception):
    """The rate slot or idempotency record could not be claimed."""

    def __init__(self, which: str):
        super().__init__(which)
        self.which = which


def _raise_guard(exc: ConditionFailed, guards: dict) -> None:
    for which, index in guards.items():
        if exc.failed(index):
            raise GuardFailed(which) from exc


class DocumentRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    # reads
    def get(self, document_id: str) -> Optional[dict]:
        return self.table.get(document_key(document_id))

    def get_with_key(self, key_id: str, document_id: Optional[str] = None,
                     idempotency_digest: Optional[str] = None
                     ) -> tuple[Optional[dict], Optional[dict], Optional[dict]]:
        """The API key item, and the document and idempotency record when asked
        for, in one round trip: (key item, document, idempotency record)."""
        keys = [api_key_key(key_id)]
        if document_id:
            keys.append(document_key(document_id))
        if idempotency_digest:
            keys.append(idempotency_key(key_id, idempotency_digest))
        found = self.table.batch_get(keys) if len(keys) > 1 else [self.table.get(keys[0])]
        key_item = found[0]
        doc = found[1] if document_id else None
        idem = found[-1] if idempotency_digest else None
        return key_item, doc, idem

    def get_with_versions(self, document_id: str) -> tuple[Optional[dict], list[dict]]:
        """Document and all its versions (oldest first) in one query of its partition."""
        items = self.table.query_all("PK = :pk", {":pk": f"DOC#{document_id}"}, consistent=True)
        doc = next((i for i in items if i["SK"] == "META"), None)
        versions = [i for i in items if i["SK"].startswith("V#")]
        return doc, versions

    def get_version(self, document_id: str, number: int) -> Optional[dict]:
        return self.table.get(version_item_key(document_id, number))

    def get_share(self, share_id: str) -> Optional[dict]:
        return self.table.get(share_key(share_id))

    def list_page(self, workspace_id: str, limit: int, cursor: Optional[str]) -> tuple[list[dict], Optional[str]]:
        start = decode_cursor(cursor, ("PK", "SK", "GSI1PK", "GSI1SK"))
        if start is not None and start["GSI1PK"]["S"] != documents_index_pk(workspace_id):
            raise BadCursor("cursor belongs to another listing")
        items, last = self.table.query("GSI1PK = :pk", {":pk": documents_index_pk(workspace_id)},
                                       index="GSI1", limit=limit, start_key=start, forward=False)
        return items, encode_cursor(last)

    def list_all(self, workspace_id: str) -> list[dict]:
        return self.table.query_all("GSI1PK = :pk", {":pk": documents_index_pk(workspace_id)},
                                    index="GSI1", forward=False)

    def get_idempotency(self, key_id: str, key_digest: str) -> Optional[dict]:
        return self.table.get(idempotency_key(key_id, key_digest))

    # writes
    def create(self, doc: dict, version: dict, max_documents: int, uncapped_plans: Iterable[str],
               slot: Optional[RateSlot], idem: Optional[IdempotencyRecord]) -> None:
        """New document + version 1 + share link, atomically, counted against the
        cap unless the workspace's plan (as stored at commit) is uncapped."""
        tx = Transaction()
        plans = {f":p{i}": p for i, p in enumerate(uncapped_plans)}
        uncapped = " OR ".join(f"#plan = {name}" for name in plans)
        ws_index = tx.update(
            workspace_key(doc["workspace_id"]),
            "SET document_count = document_count + :one",
            f"attribute_exists(PK) AND ({uncapped + ' OR ' if uncapped else ''}document_count < :max)",
            names={"#plan": "plan"} if plans else None,
            values={":one": 1, ":max": max_documents, **plans},
            return_old=True,
        )
        tx.put({**document_key(doc["document_id"]), **doc,
                "GSI1PK": documents_index_pk(doc["workspace_id"]),
                "GSI1SK": documents_sort_key(doc["updated_ms"], doc["document_id"])},
               "attribute_not_exists(PK)")
        tx.put({**version_item_key(doc["document_id"], version["number"]), **version},
               "attribute_not_exists(PK)")
        tx.put({**share_key(doc["share_id"]), "document_id": doc["document_id"],
                "workspace_id": doc["workspace_id"]}, "attribute_not_exists(PK)")
        guards = Guards.add(tx, slot, idem)
        try:
            tx.commit()
        except ConditionFailed as exc:
            _raise_guard(exc, guards)
            if exc.failed(ws_index):
                raise DocumentCapReached(exc.old_items[ws_index]) from exc
            raise

    def append_version(self, doc: dict, version: dict, changes: dict,
                       slot: Optional[RateSlot], idem: Optional[IdempotencyRecord]) -> None:
        """Store version N+1 only if the document still has N versions (optimistic concurrency)."""
        tx = Transaction()
        sets = {"version_count": version["number"], "latest_version_id": version["version_id"],
                "latest_size": version["size_bytes"], "updated_ms": version["created_ms"],
                "GSI1SK": documents_sort_key(version["created_ms"], doc["document_id"]), **changes}
        names = {f"#a{i}": k for i, k in enumerate(sets)}
        values = {f":a{i}": v for i, v in enumerate(sets.values())}
        values.update({":prev": doc["version_count"], ":ws": doc["workspace_id"]})
        doc_index = tx.update(
            document_key(doc["document_id"]),
            "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(sets))),
            "attribute_exists(PK) AND workspace_id = :ws AND version_count = :prev "
            "AND attribute_not_exists(deleting)",
            names=names, values=values, return_old=True,
        )
        tx.put({**version_item_key(doc["document_id"], version["number"]), **version},
               "attribute_not_exists(PK)")
        guards = Guards.add(tx, slot, idem)
        try:
            tx.commit()
        except ConditionFailed as exc:
            _raise_guard(exc, guards)
            if exc.failed(doc_index) or exc.failed(doc_index + 1):
                raise StaleDocument(exc.old_items[doc_index]) from exc
            raise

    def update_fields(self, doc: dict, fields: dict) -> dict:
        """Change metadata (no version); refuses a document being deleted."""
        names = {f"#a{i}": k for i, k in enumerate(fields)}
        values = {f":a{i}": v for i, v in enumerate(fields.values())}
        values[":ws"] = doc["workspace_id"]
        try:
            return self.table.update(
                document_key(doc["document_id"]),
                "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(fields))),
                "attribute_exists(PK) AND workspace_id = :ws AND attribute_not_exists(deleting)",
                names=names, values=values)
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def remove_fields(self, doc: dict, fields: list[str]) -> dict:
        names = {f"#a{i}": k for i, k in enumerate(fields)}
        try:
            return self.table.update(
                document_key(doc["document_id"]),
                "REMOVE " + ", ".join(names),
                "attribute_exists(PK) AND workspace_id = :ws AND attribute_not_exists(deleting)",
                names=names, values={":ws": doc["workspace_id"]})
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def get_for_share(self, share_id: str, version_number: Optional[int] = None
                      ) -> tuple[Optional[dict], Optional[dict], Optional[dict], Optional[dict]]:
        """(share item, document, workspace, version N) for a share link: a GetItem
        of the share, then one BatchGetItem of the rest."""
        share = self.get_share(share_id)
        if share is None:
            return None, None, None, None
        keys = [document_key(share["document_id"]), workspace_key(share["workspace_id"])]
        if version_number is not None:
            keys.append(version_item_key(share["document_id"], version_number))
        found = self.table.batch_get(keys)
        return share, found[0], found[1], (found[2] if version_number is not None else None)

    def set_passphrase(self, doc: dict, passphrase_hash: Optional[str]) -> dict:
        """Store (or, with None, remove) the passphrase hash; every change bumps
        `passphrase_epoch`, which unlock cookies embed, so old cookies stop working."""
        update = ("SET passphrase_hash = :h ADD passphrase_epoch :one" if passphrase_hash is not None
                  else "REMOVE passphrase_hash ADD passphrase_epoch :one")
        values = {":one": 1, ":ws": doc["workspace_id"]}
        if passphrase_hash is not None:
            values[":h"] = passphrase_hash
        try:
            return self.table.update(
                document_key(doc["document_id"]), update,
                "attribute_exists(PK) AND workspace_id = :ws AND attribute_not_exists(deleting)",
                values=values)
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def rotate_share(self, doc: dict, new_share_id: str) -> None:
        """Move the link to a new share id in one transaction: the document points at it,
        the new share item exists and the old one is gone (the old link is 404 at once).
        StaleDocument if the document's share id changed (or it went) since `doc` was read."""
        tx = Transaction()
        tx.update(document_key(doc["document_id"]), "SET share_id = :new",
                  "attribute_exists(PK) AND workspace_id = :ws AND share_id = :old "
                  "AND attribute_not_exists(deleting)",
                  values={":new": new_share_id, ":old": doc["share_id"], ":ws": doc["workspace_id"]})
        tx.delete(share_key(doc["share_id"]))
        tx.put({**share_key(new_share_id), "document_id": doc["document_id"],
                "workspace_id": doc["workspace_id"]}, "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def begin_delete(self, doc: dict) -> None:
        """Step 1 of delete, atomically: hide the document from lists and share
        links and free its place in the plan count. The item stays, marked
        `deleting`, so a retried DELETE can find it and finish the cleanup."""
        tx = Transaction()
        tx.update(document_key(doc["document_id"]), "SET deleting = :yes REMOVE GSI1PK, GSI1SK",
                  "attribute_exists(PK) AND attribute_not_exists(deleting)", values={":yes": True})
        tx.delete(share_key(doc["share_id"]))
        tx.update(workspace_key(doc["workspace_id"]), "SET document_count = document_count - :one",
                  "document_count > :zero", values={":one": 1, ":zero": 0})
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def partition_keys(self, document_id: str) -> list[dict]:
        items = self.table.query_all("PK = :pk", {":pk": f"DOC#{document_id}"}, consistent=True)
        return [{"PK": i["PK"], "SK": i["SK"]} for i in items]

    def delete_items(self, keys: list[dict]) -> None:
        self.table.delete_keys(keys)


@dataclass
class RateClaim:
    """Replace a sliding log (`RATE#<scope>`) only if nobody wrote it since it was read."""
    scope: str
    expected_seq: int
    new_log: list[int]
    expires_at: int

    def add_to(self, tx: Transaction) -> int:
        condition = "attribute_not_exists(PK)" if self.expected_seq == 0 else "seq = :seq"
        values = {":log": self.new_log, ":next": self.expected_seq + 1, ":exp": self.expires_at}
        if self.expected_seq:
            values[":seq"] = self.expected_seq
        return tx.update(rate_key(self.scope), "SET hits = :log, seq = :next, expires_at = :exp",
                         condition, values=values)


class RateLimitRepository:
    """Sliding logs for per-IP limits (unlock attempts, feedback posts)."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, scope: str) -> Optional[dict]:
        return self.table.get(rate_key(scope))

    def claim(self, scope: str, expected_seq: int, new_log: list[int], expires_at: int) -> bool:
        """Write the new log only if nobody else wrote since we read it."""
        condition = "attribute_not_exists(PK)" if expected_seq == 0 else "seq = :seq"
        values = {":log": new_log, ":next": expected_seq + 1, ":exp": expires_at}
        if expected_seq:
            values[":seq"] = expected_seq
        try:
            self.table.update(rate_key(scope), "SET hits = :log, seq = :next, expires_at = :exp",
                              condition, values=values)
        except ConditionFailed:
            return False
        return True


class FeedbackGone(Exception):
    """The feedback (or its document) no longer exists, or is not in that state."""


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
            document_key(feedback["document_id"]), "ADD open_feedback_count :one",
            "attribute_exists(PK) AND workspace_id = :ws AND attribute_not_exists(deleting)",
            values={":one": 1, ":ws": feedback["workspace_id"]})
        rate_index = rate.add_to(tx) if rate is not None else None
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


# ------------------------------------------------------------------ dashboard accounts

def user_key(email_lower: str) -> dict:
    return {"PK": f"USER#{email_lower}", "SK": "USER"}


def session_key(session_hash: str) -> dict:
    return {"PK": f"SESSION#{session_hash}", "SK": "SESSION"}


def user_sessions_index_pk(email_lower: str) -> str:
    return f"USER#{email_lower}#SESSIONS"


class UserExists(Exception):
    """An account with this email already exists."""


class UserRepository:
    """Dashboard people. One item per email (lowercased); only a password hash is stored."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, email_lower: str) -> Optional[dict]:
        return self.table.get(user_key(email_lower))

    def create(self, user: dict) -> None:
        try:
            self.table.put({**user_key(user["email"]), **user}, "attribute_not_exists(PK)")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise UserExists(user["email"]) from exc
            raise

    def delete(self, email_lower: str) -> None:
        aws.dynamodb().delete_item(TableName=self.table.name, Key=to_item(user_key(email_lower)))

    def set_password(self, email_lower: str, expected_hash: str, new_hash: str, now_ms: int) -> bool:
        """Replace the hash only if it is still the one that was verified (no lost update)."""
        try:
            self.table.update(user_key(email_lower), "SET password_hash = :new, password_changed_ms = :now",
                              "attribute_exists(PK) AND password_hash = :old",
                              values={":new": new_hash, ":old": expected_hash, ":now": now_ms})
        except ConditionFailed:
            return False
        return True


class SessionRepository:
    """Dashboard sessions, keyed by the SHA-256 of the session id (the id itself is never stored).
    `expires_ms` is checked on every read; `expires_at` (TTL) is only for cleanup."""

    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, session_hash: str) -> Optional[dict]:
        return self.table.get(session_key(session_hash))

    def create(self, session: dict) -> None:
        self.table.put({**session_key(session["session_hash"]), **session,
                        "GSI1PK": user_sessions_index_pk(session["email"]),
                        "GSI1SK": f"{session['created_ms']:015d}#{session['session_hash'][:16]}"},
                       "attribute_not_exists(PK)")

    def delete(self, session_hash: str) -> None:
        aws.dynamodb().delete_item(TableName=self.table.name, Key=to_item(session_key(session_hash)))

    def delete_for_user(self, email_lower: str) -> int:
        items = self.table.query_all("GSI1PK = :pk", {":pk": user_sessions_index_pk(email_lower)}, index="GSI1")
        self.table.delete_keys([{"PK": i["PK"], "SK": i["SK"]} for i in items])
        return len(items)
