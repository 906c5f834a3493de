"""Documents, versions, share links and idempotency records.

A document is `DOC#<id>`/`META` with its versions `V#<n>` in the same partition
(one Query reads both); GSI1 lists a workspace's live documents, most recently
updated first. Every write is one transaction with conditions: the plan's
document cap, gapless versions (optimistic concurrency on `version_count`), the
key's rate slot and the idempotency record commit together or not at all.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Optional

from chalicelib.adapters.aws.events import add_event
from chalicelib.adapters.aws.rates import add_rate_claim
from chalicelib.adapters.aws.activity import activity_item
from chalicelib.adapters.aws.schema import DOCUMENT_LISTING
from chalicelib.adapters.aws.keys import (
    FILE_BUCKETS, WRITE_SHARDS, api_key_key, feedback_key, file_bucket, workspace_files_key, document_key, document_pk, documents_index_pk, documents_sort_key,
    idempotency_key, share_key, version_item_key, workspace_key, write_shard_key, write_shard_keys,
)
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction, decode_cursor, encode_cursor
from chalicelib.adapters.aws.workspaces import with_write_logs, workspace_record
from chalicelib.ports.records import ApiKey
from chalicelib.ports.records import ActivityEntry, Event, Resolution
from chalicelib.ports.errors import FeedbackGone, OutcomeUnknown, WriteRefused
from chalicelib.ports.records import (
    Document, DocumentListing, FileRecount, ShareLink, StoredIdempotency, Version, Workspace, fields_of, from_fields,
)
from chalicelib.ports.repositories import DocumentFields
from chalicelib.ports.records import IdempotencyRecord, Quota, RateSlot
from chalicelib.ports.errors import BadCursor, DocumentCapReached, GuardFailed, QuotaReached, StaleDocument
from chalicelib.adapters.aws.errors import storage_errors

# The condition of every change to a document: it exists in this workspace and is not being deleted.
LIVE_DOCUMENT = "attribute_exists(PK) AND workspace_id = :ws AND attribute_not_exists(deleting)"


class Guards:
    """Conditions every accepted write carries: its rate slot and idempotency record."""

    @staticmethod
    def add(tx: Transaction, slot: Optional[RateSlot], idem: Optional[IdempotencyRecord]) -> dict:
        indexes: dict[str, int] = {}
        if slot is not None:
            # The slot's shard of the key's write log (keys.WRITE_SHARDS), not the key item:
            # concurrent writers through one key race only when they pick the same shard.
            fresh = slot.expected_seq == 0
            indexes["rate"] = tx.update(
                write_shard_key(slot.key_id, slot.shard),
                "SET writes = :log, writes_seq = :next, last_used_at = :now",
                ("attribute_not_exists(writes_seq)" if fresh else "writes_seq = :seq")
                + " AND attribute_not_exists(revoked_at)",
                values={":log": slot.new_log, ":next": slot.expected_seq + 1, ":now": slot.now_ms,
                        **({} if fresh else {":seq": slot.expected_seq})},
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


def _raise_guard(exc: ConditionFailed, guards: dict, quota: Optional[Quota] = None) -> None:
    for which, index in guards.items():
        if exc.failed(index):
            old = (exc.old_items[index] if index < len(exc.old_items) else None) or {}
            if which == "usage" and quota is not None:
                plan, used = old.get("plan", ""), int(old.get("storage_bytes", 0))
                raise QuotaReached(quota.refusal(plan, used) or "storage", used, plan,
                                   adding=quota.add_bytes) from exc
            raise GuardFailed(which) from exc


# Usage of a workspace lives on its item: `storage_bytes` and `version_total`, changed with
# ADD in the same transaction as the version (a blind conditional update: no extra read).
def _usage_update(quota: Quota) -> tuple[str, str, dict, dict]:
    """(ADD clause, condition, names, values) counting the quota's version on the
    workspace item, under the bounds of the plan it has at commit."""
    values: dict = {":qb": quota.add_bytes, ":qone": 1}
    branches = []
    for i, plan in enumerate(quota.version_room_plans):
        values[f":qp{i}"] = plan
        limit = quota.max_storage_bytes.get(plan)
        if limit is None:
            branches.append(f"#qplan = :qp{i}")
        elif limit - quota.add_bytes - quota.reserved_bytes < 0:
            del values[f":qp{i}"]  # no usage leaves room under this plan (pending uploads hold it)
        else:
            values[f":qr{i}"] = limit - quota.add_bytes - quota.reserved_bytes
            branches.append(f"#qplan = :qp{i} AND (attribute_not_exists(storage_bytes) "
                            f"OR storage_bytes <= :qr{i})")
    # DynamoDB refuses redundant parentheses: only an OR of several branches is wrapped.
    if not branches:
        condition = "attribute_not_exists(PK)"  # no plan has room: always refused
    elif len(branches) == 1:
        condition = branches[0]
    else:
        condition = "(" + " OR ".join(f"({b})" if " AND " in b else b for b in branches) + ")"
    return "ADD storage_bytes :qb, version_total :qone", condition, {"#qplan": "plan"}, values


def _add_window(tx: Transaction, quota: Quota, guards: dict) -> None:
    """The write's slot in one shard of the workspace's sliding write log (its
    `seq` unchanged since it was read: GuardFailed("workspace-rate") otherwise)."""
    if quota.rate_claim is not None:
        guards["workspace-rate"] = add_rate_claim(tx, quota.rate_claim)



def _file_counts(versions: Iterable[Version]) -> dict[str, int]:
    """sha256 -> how many of `versions` refer to it (a file twice in one version counts once)."""
    counts: dict[str, int] = {}
    for version in versions:
        for sha in {f["sha256"] for f in version.files}:
            counts[sha] = counts.get(sha, 0) + 1
    return counts


def _by_bucket(shas: Iterable[str]) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = {}
    for sha in sorted(shas):
        groups.setdefault(file_bucket(sha), []).append(sha)
    return groups


class FileRefs:
    """A workspace's file reference counts (keys.workspace_files_key), read before a
    transaction and changed in it under conditions that hold only if nothing moved
    since: a version's files are counted in storage once per workspace (API contract 4)."""

    def __init__(self, table: Table, workspace_id: str):
        self.table = table
        self.workspace_id = workspace_id
        self.sizes: dict[str, int] = {}  # of the files read

    def read(self, shas: Iterable[str]) -> dict[str, Optional[int]]:
        """sha256 -> live versions referring to it (None: not counted in the workspace)."""
        groups = _by_bucket(shas)
        buckets = sorted(groups)
        items = self.table.batch_get([workspace_files_key(self.workspace_id, b) for b in buckets])
        held: dict[str, Optional[int]] = {}
        for bucket, item in zip(buckets, items):
            for sha in groups[bucket]:
                value = (item or {}).get(f"r_{sha}")
                held[sha] = int(value) if value is not None else None
                self.sizes[sha] = int((item or {}).get(f"s_{sha}", 0))
        return held

    def add(self, tx: Transaction, files: dict[str, int], held: dict[str, Optional[int]]) -> list[int]:
        """One more version refers to each file: a file not held yet starts at 1 with its
        size (it must still be absent), a held one goes up by 1 (it must still exist)."""
        indexes = []
        for bucket, shas in _by_bucket(files).items():
            sets, conditions, names, values = [], [], {}, {":one": 1}
            for i, sha in enumerate(shas):
                names[f"#r{i}"] = f"r_{sha}"
                if held.get(sha) is None:
                    names[f"#s{i}"] = f"s_{sha}"
                    values[f":s{i}"] = files[sha]
                    sets += [f"#r{i} = :one", f"#s{i} = :s{i}"]
                    conditions.append(f"attribute_not_exists(#r{i})")
                else:
                    sets.append(f"#r{i} = #r{i} + :one")
                    conditions.append(f"attribute_exists(#r{i})")
            indexes.append(tx.update(workspace_files_key(self.workspace_id, bucket), "SET " + ", ".join(sets),
                                     " AND ".join(conditions), names=names, values=values))
        return indexes

    def release(self, tx: Transaction, counts: dict[str, int]) -> tuple[int, list[int]]:
        """Versions leave: each file loses `counts[sha]` references; one left with none is
        removed and its size freed. Conditions: the counts are still what was read.
        Returns (bytes freed, action indexes)."""
        held = self.read(counts)
        freed, indexes = 0, []
        for bucket, shas in _by_bucket(s for s in counts if held.get(s) is not None).items():
            sets, removes, conditions, names, values = [], [], [], {}, {}
            for i, sha in enumerate(shas):
                current = held[sha] or 0
                names[f"#r{i}"] = f"r_{sha}"
                values[f":c{i}"] = current
                conditions.append(f"#r{i} = :c{i}")
                if current <= counts[sha]:
                    names[f"#s{i}"] = f"s_{sha}"
                    removes += [f"#r{i}", f"#s{i}"]
                    freed += self.sizes.get(sha, 0)
                else:
                    values[f":n{i}"] = counts[sha]
                    sets.append(f"#r{i} = #r{i} - :n{i}")
            update = " ".join(part for part in (
                "SET " + ", ".join(sets) if sets else "", "REMOVE " + ", ".join(removes) if removes else "") if part)
            indexes.append(tx.update(workspace_files_key(self.workspace_id, bucket), update,
                                     " AND ".join(conditions), names=names, values=values))
        return freed, indexes


FILE_ATTEMPTS = 5  # a release whose counts moved under it reads them again
RECOUNT_CHUNK = 40  # files set right in one update (an update expression holds at most 4 KB)


def version_item(version: Version) -> dict[str, Any]:
    """A version record as its item: the blob's key is stored as `s3_key` (the item's
    name for it since the first release; old items keep working); `format` and
    `files` only when there are some."""
    item = {k: v for k, v in fields_of(version).items() if k not in ("blob_key", "files", "format", "provenance")}
    item["s3_key"] = version.blob_key
    if version.provenance is not None:  # signed versions (contract 7g); absent on older items
        item["provenance"] = version.provenance
    if version.format is not None:
        item["format"] = version.format
    if version.files:
        item["files"] = [dict(f) for f in version.files]
    return item


def version_record(item: Optional[Mapping[str, Any]]) -> Optional[Version]:
    """A version item as the port's record (`blob_key`, no `s3_key`; a file's size an int)."""
    if item is None:
        return None
    files = tuple({**f, "size_bytes": int(f["size_bytes"])} for f in item.get("files") or ())
    return from_fields(Version, {**item, "blob_key": item.get("s3_key"), "files": files})


def document_record(item: Optional[Mapping[str, Any]]) -> Optional[Document]:
    """A document item as the port's record (its keys and index keys left behind)."""
    if item is None:
        return None
    requested = item.get("review_requested")
    audience = item.get("share_recipients")
    return from_fields(Document, {**item, "review_requested": tuple(requested) if requested else (),
                                  "share_recipients": tuple(audience) if audience else ()})


# A new document's item leaves out what reads as absent (`deleting` is a condition:
# attribute_not_exists) and what the adapter counts itself (`create` sets the usage).
_NOT_STORED_NEW = ("deleting", "stored_bytes", "counted_versions", "has_files", "review_state", "review_version",
                   "review_decisions", "review_requested", "review_seq")


def document_item(doc: Document) -> dict[str, Any]:
    """A new document's attributes (None values are not stored)."""
    return {k: v for k, v in fields_of(doc).items() if k not in _NOT_STORED_NEW and v is not None}


def _share(share_id: str, item: Optional[Mapping[str, Any]]) -> Optional[ShareLink]:
    return from_fields(ShareLink, {**item, "share_id": share_id}) if item is not None else None


def _idempotency(key_id: str, key_digest: str, item: Optional[Mapping[str, Any]]) -> Optional[StoredIdempotency]:
    if item is None:
        return None
    return StoredIdempotency(key_id=key_id, key_digest=key_digest, request_hash=item["request_hash"],
                             response_json=item["response"], expires_at=int(item["expires_at"]))


@storage_errors
class DocumentRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    # reads
    def get(self, document_id: str) -> Optional[Document]:
        return document_record(self.table.get(document_key(document_id)))

    def get_many(self, document_ids: Iterable[str]) -> dict[str, Document]:
        """One BatchGetItem (its limit is 100 keys)."""
        wanted = sorted(set(document_ids))[:100]
        if not wanted:
            return {}
        found = self.table.batch_get([document_key(document_id) for document_id in wanted])
        return {document_id: doc for document_id, item in zip(wanted, found)
                if (doc := document_record(item)) is not None}

    def get_with_key(self, key_id: str, document_id: Optional[str] = None,
                     idempotency_digest: Optional[str] = None
                     ) -> tuple[Optional[ApiKey], Optional[Document], Optional[StoredIdempotency]]:
        """The API key (with its write log), and the document and idempotency record when asked
        for, in one round trip: (key item, document, idempotency record)."""
        keys = [api_key_key(key_id), *write_shard_keys(key_id)]
        if document_id:
            keys.append(document_key(document_id))
        if idempotency_digest:
            keys.append(idempotency_key(key_id, idempotency_digest))
        found = self.table.batch_get(keys)
        key_item = with_write_logs(found[0], found[1:1 + WRITE_SHARDS])
        doc = document_record(found[1 + WRITE_SHARDS]) if document_id else None
        idem = (_idempotency(key_id, idempotency_digest, found[-1]) if idempotency_digest else None)
        return key_item, doc, idem

    def get_with_versions(self, document_id: str) -> tuple[Optional[Document], list[Version]]:
        """Document and all its versions (oldest first) in one query of its partition."""
        items = self.table.query_all("PK = :pk", {":pk": document_pk(document_id)}, consistent=True)
        doc = document_record(next((i for i in items if i["SK"] == "META"), None))
        versions = [version_record(i) for i in items if i["SK"].startswith("V#")]
        return doc, [v for v in versions if v is not None]

    def get_version(self, document_id: str, number: int) -> Optional[Version]:
        return version_record(self.table.get(version_item_key(document_id, number)))

    def get_share(self, share_id: str) -> Optional[ShareLink]:
        return _share(share_id, self.table.get(share_key(share_id)))

    def list_page(self, workspace_id: str, limit: int, cursor: Optional[str]
                  ) -> tuple[list[DocumentListing], Optional[str]]:
        start = decode_cursor(cursor, ("PK", "SK", "GSI1PK", "GSI1SK"))
        if start is not None and start["GSI1PK"]["S"] != documents_index_pk(workspace_id):
            raise BadCursor("cursor belongs to another listing")
        items, last = self.table.query("GSI1PK = :pk", {":pk": documents_index_pk(workspace_id)},
                                       index="GSI1", limit=limit, start_key=start, forward=False,
                                       projected=DOCUMENT_LISTING)
        return [from_fields(DocumentListing, i) for i in items], encode_cursor(last)

    def list_all(self, workspace_id: str) -> list[DocumentListing]:
        return [from_fields(DocumentListing, i) for i in
                self.table.query_all("GSI1PK = :pk", {":pk": documents_index_pk(workspace_id)},
                                     index="GSI1", forward=False, projected=DOCUMENT_LISTING)]

    def get_idempotency(self, key_id: str, key_digest: str) -> Optional[StoredIdempotency]:
        return _idempotency(key_id, key_digest, self.table.get(idempotency_key(key_id, key_digest)))

    # writes
    def create(self, doc: Document, version: Version, max_documents: int, uncapped_plans: Iterable[str],
               slot: Optional[RateSlot], idem: Optional[IdempotencyRecord], quota: Optional[Quota] = None,
               activity: Optional[ActivityEntry] = None,
               event: Optional[Event] = None) -> None:
        """New document + version 1 + share link, atomically, counted against the
        cap unless the workspace's plan (as stored at commit) is uncapped."""
        tx = Transaction()
        plans = {f":p{i}": p for i, p in enumerate(uncapped_plans)}
        uncapped = " OR ".join(f"#plan = {name}" for name in plans)
        update = "SET document_count = document_count + :one"
        condition = f"attribute_exists(PK) AND ({uncapped + ' OR ' if uncapped else ''}document_count < :max)"
        values = {":one": 1, ":max": max_documents, **plans}
        counted: dict = {}
        names = {"#plan": "plan"} if plans else {}
        usage, refs, held = self._files_usage(doc.workspace_id, quota)
        if usage is not None and quota is not None:
            add, room, quota_names, quota_values = _usage_update(usage)
            update += " " + add
            condition += f" AND {room}"
            values.update(quota_values)
            names.update(quota_names)
            counted = {"stored_bytes": quota.add_bytes, "counted_versions": 1}  # the files: FileRefs
            if quota.files:
                counted["has_files"] = True
        ws_index = tx.update(
            workspace_key(doc.workspace_id), update, condition,
            names=names or None, values=values, return_old=True,
        )
        tx.put({**document_key(doc.document_id), **document_item(doc), **counted,
                "GSI1PK": documents_index_pk(doc.workspace_id),
                "GSI1SK": documents_sort_key(doc.updated_ms, doc.document_id)},
               "attribute_not_exists(PK)")
        tx.put({**version_item_key(doc.document_id, version.number), **version_item(version)},
               "attribute_not_exists(PK)")
        tx.put({**share_key(doc.share_id), "document_id": doc.document_id,
                "workspace_id": doc.workspace_id}, "attribute_not_exists(PK)")
        if activity is not None:
            tx.put(activity_item(activity), "attribute_not_exists(PK)")
        add_event(tx, event)
        guards = Guards.add(tx, slot, idem)
        if quota is not None:
            _add_window(tx, quota, guards)
        if refs is not None and quota is not None:
            guards.update({f"files{i}": index for i, index in enumerate(refs.add(tx, quota.files, held))})
        refused = self._commit_version(tx, doc.document_id, version, guards, usage)
        if refused is not None:
            if refused.failed(ws_index):
                old = refused.old_items[ws_index] or {}
                capped = old.get("plan") not in set(uncapped_plans) and old.get("document_count", 0) >= max_documents
                if usage is not None and not capped and old:
                    plan, used = old.get("plan", ""), int(old.get("storage_bytes", 0))
                    raise QuotaReached(usage.refusal(plan, used) or "storage", used, plan,
                                       adding=usage.add_bytes) from refused
                raise DocumentCapReached(workspace_record(refused.old_items[ws_index])) from refused
            raise refused

    def append_version(self, doc: Document, version: Version, changes: DocumentFields,
                       slot: Optional[RateSlot], idem: Optional[IdempotencyRecord],
                       quota: Optional[Quota] = None, activity: Optional[ActivityEntry] = None,
                       event: Optional[Event] = None, resolves: Optional[Resolution] = None) -> None:
        """Store version N+1 only if the document still has N versions (optimistic concurrency);
        `resolves`: an accepted suggestion resolved in the same transaction, only if still open."""
        tx = Transaction()
        sets: dict[str, Any] = {"version_count": version.number, "latest_version_id": version.version_id,
                                "latest_size": version.size_bytes, "updated_ms": version.created_ms,
                                "GSI1SK": documents_sort_key(version.created_ms, doc.document_id), **changes}
        usage, refs, held = self._files_usage(doc.workspace_id, quota)
        if quota is not None and quota.files:
            sets["has_files"] = True  # begin_delete releases its versions' files
        if resolves is not None:  # the document's item is written once per transaction: its count goes here
            sets["feedback_activity_ms"] = version.created_ms
        names = {f"#a{i}": k for i, k in enumerate(sets)}
        values = {f":a{i}": v for i, v in enumerate(sets.values())}
        values.update({":prev": doc.version_count, ":ws": doc.workspace_id})
        update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(sets)))
        adds = []
        if quota is not None:
            adds.append("stored_bytes :sb, counted_versions :sone")
            values.update({":sb": quota.add_bytes, ":sone": 1})
        if resolves is not None:
            adds.append("open_feedback_count :fbminus")
            values[":fbminus"] = -1
        if adds:
            update += " ADD " + ", ".join(adds)
        doc_index = tx.update(
            document_key(doc.document_id), update,
            LIVE_DOCUMENT + " AND version_count = :prev",
            names=names, values=values, return_old=True,
        )
        tx.put({**version_item_key(doc.document_id, version.number), **version_item(version)},
               "attribute_not_exists(PK)")
        if activity is not None:
            tx.put(activity_item(activity), "attribute_not_exists(PK)")
        add_event(tx, event)
        feedback_index = None
        if resolves is not None:
            feedback_index = tx.update(
                feedback_key(resolves.feedback.feedback_id),
                "SET #s = :resolved, resolved_ms = :now, resolved_in_version = :number",
                "attribute_exists(PK) AND #s = :open AND document_id = :doc", names={"#s": "status"},
                values={":resolved": "resolved", ":open": "open", ":now": version.created_ms,
                        ":number": version.number, ":doc": doc.document_id})
            add_event(tx, resolves.event)
        guards = Guards.add(tx, slot, idem)
        if quota is not None and usage is not None:
            add, room, quota_names, quota_values = _usage_update(usage)
            guards["usage"] = tx.update(workspace_key(doc.workspace_id), add, f"attribute_exists(PK) AND {room}",
                                        names=quota_names, values=quota_values, return_old=True)
            _add_window(tx, quota, guards)
            if refs is not None:
                guards.update({f"files{i}": index for i, index in enumerate(refs.add(tx, quota.files, held))})
        refused = self._commit_version(tx, doc.document_id, version, guards, usage)
        if refused is not None:
            if refused.failed(doc_index) or refused.failed(doc_index + 1):
                raise StaleDocument(document_record(refused.old_items[doc_index])) from refused
            if refused.failed(feedback_index):
                raise FeedbackGone() from refused
            raise refused

    def _files_usage(self, workspace_id: str, quota: Optional[Quota]
                     ) -> tuple[Optional[Quota], Optional[FileRefs], dict[str, Optional[int]]]:
        """The quota with the bytes of the version's files new to the workspace added
        (read now; the transaction's FileRefs conditions hold only if that stays true:
        GuardFailed("files…") otherwise, and the service writes again)."""
        if quota is None or not quota.files:
            return quota, None, {}
        refs = FileRefs(self.table, workspace_id)
        held = refs.read(quota.files)
        new_bytes = sum(size for sha, size in quota.files.items() if held.get(sha) is None)
        return dataclasses.replace(quota, add_bytes=quota.add_bytes + new_bytes), refs, held

    def _commit_version(self, tx: Transaction, document_id: str, version: Version,
                        guards: dict, quota: Optional[Quota] = None) -> Optional[ConditionFailed]:
        """Commit a transaction that stores `version`. None: it is stored (also when
        the answer was lost but the write was not). A guard's refusal (rate slot,
        idempotency) raises here; any other refused condition is returned for the
        caller to name. An outcome still unknown raises OutcomeUnknown."""
        try:
            tx.commit()
        except (ConditionFailed, OutcomeUnknown) as exc:
            if self._settled(exc, document_id, version):
                return None  # it committed: the answer was lost, the write was not
            if isinstance(exc, OutcomeUnknown):
                raise
            _raise_guard(exc, guards, quota)
            return exc
        return None

    def _settled(self, exc: Exception, document_id: str, version: Version) -> bool:
        """After a write whose outcome is unknown (a timeout or 5xx, or a retry that
        failed conditions an earlier attempt may have changed): read what is true.
        True if our version is stored (the write committed); False otherwise: for
        OutcomeUnknown the caller re-raises it (503, the object kept for the sweep).
        A retry that failed its conditions with our version not stored is a plain
        refusal the caller maps as usual: every attempt carried the same
        ClientRequestToken, and DynamoDB answers a retry of a transaction that
        committed with success (for 10 minutes), never with its conditions; so
        no earlier attempt committed. (An emulator that ignores the token, moto,
        is caught by the read: the version is there.)"""
        if isinstance(exc, ConditionFailed) and not exc.retried:
            return False
        stored = self.table.get(version_item_key(document_id, version.number))
        return stored is not None and stored.get("version_id") == version.version_id

    def update_fields(self, doc: Document, fields: DocumentFields,
                      activity: Optional[ActivityEntry] = None) -> Document:
        """Change metadata (no version); refuses a document being deleted. With `activity`,
        its log entry is written in the same transaction (still one call)."""
        names = {f"#a{i}": k for i, k in enumerate(fields)}
        values = {f":a{i}": v for i, v in enumerate(fields.values())}
        values[":ws"] = doc.workspace_id
        if activity is not None:
            tx = Transaction()
            tx.update(document_key(doc.document_id),
                      "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(fields))),
                      LIVE_DOCUMENT, names=names, values=values)
            tx.put(activity_item(activity), "attribute_not_exists(PK)")
            try:
                tx.commit()
            except ConditionFailed as exc:
                raise StaleDocument(None) from exc
            return dataclasses.replace(doc, **fields)
        try:
            return self._changed(self.table.update(
                document_key(doc.document_id),
                "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(fields))),
                LIVE_DOCUMENT,
                names=names, values=values))
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    @staticmethod
    def _changed(item: Optional[Mapping[str, Any]]) -> Document:
        """The document as an update left it (its new attributes)."""
        doc = document_record(item)
        if doc is None:  # the update's condition required the item
            raise StaleDocument(None)
        return doc

    def get_for_share(self, share_id: str, version_number: Optional[int] = None, consistent: bool = True
                      ) -> tuple[Optional[ShareLink], Optional[Document], Optional[Workspace], Optional[Version]]:
        """(share link, document, workspace, version N) for a share link: a GetItem
        of the share, then one BatchGetItem of the rest. `consistent=False`: eventually
        consistent reads (half the read units; the view beacon, services/views.py)."""
        share = _share(share_id, self.table.get(share_key(share_id), consistent=consistent))
        if share is None:
            return None, None, None, None
        keys = [document_key(share.document_id), workspace_key(share.workspace_id)]
        if version_number is not None:
            keys.append(version_item_key(share.document_id, version_number))
        found = self.table.batch_get(keys, consistent=consistent)
        return (share, document_record(found[0]), workspace_record(found[1]),
                version_record(found[2]) if version_number is not None else None)

    def set_passphrase(self, doc: Document, passphrase_hash: Optional[str]) -> Document:
        """Store (or, with None, remove) the passphrase hash; every change bumps
        `passphrase_epoch`, which unlock cookies embed, so old cookies stop working."""
        update = ("SET passphrase_hash = :h ADD passphrase_epoch :one" if passphrase_hash is not None
                  else "REMOVE passphrase_hash ADD passphrase_epoch :one")
        values: dict[str, Any] = {":one": 1, ":ws": doc.workspace_id}
        if passphrase_hash is not None:
            values[":h"] = passphrase_hash
        try:
            return self._changed(self.table.update(
                document_key(doc.document_id), update,
                LIVE_DOCUMENT,
                values=values))
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def rotate_share(self, doc: Document, new_share_id: str) -> None:
        """Move the link to a new share id in one transaction: the document points at it,
        the new share item exists and the old one is gone (the old link is 404 at once).
        StaleDocument if the document's share id changed (or it went) since `doc` was read."""
        tx = Transaction()
        tx.update(document_key(doc.document_id), "SET share_id = :new", LIVE_DOCUMENT + " AND share_id = :old",
                  values={":new": new_share_id, ":old": doc.share_id, ":ws": doc.workspace_id})
        tx.delete(share_key(doc.share_id))
        tx.put({**share_key(new_share_id), "document_id": doc.document_id,
                "workspace_id": doc.workspace_id}, "attribute_not_exists(PK)")
        try:
            tx.commit()
        except ConditionFailed as exc:
            raise StaleDocument(None) from exc

    def begin_delete(self, doc: Document, activity: Optional[ActivityEntry] = None,
                     event: Optional[Event] = None) -> None:
        """Step 1 of delete, atomically: hide the document from lists and share
        links and free its place in the plan count. The item stays, marked
        `deleting`, so a retried DELETE can find it and finish the cleanup. Its
        versions' files lose their references (one Query of its versions, only for a
        document that ever had files); a file no other version refers to is freed."""
        counts = _file_counts(self.get_with_versions(doc.document_id)[1]) if doc.has_files else {}
        for _attempt in range(FILE_ATTEMPTS):
            tx = Transaction()
            tx.update(document_key(doc.document_id), "SET deleting = :yes REMOVE GSI1PK, GSI1SK",
                      "attribute_exists(PK) AND attribute_not_exists(deleting)", values={":yes": True})
            tx.delete(share_key(doc.share_id))
            freed, file_indexes = FileRefs(self.table, doc.workspace_id).release(tx, counts) if counts else (0, [])
            # Its usage leaves the workspace's (counted on the document since issue 24).
            tx.update(workspace_key(doc.workspace_id),
                      "SET document_count = document_count - :one ADD storage_bytes :mb, version_total :mv",
                      "document_count > :zero", values={":one": 1, ":zero": 0,
                                                        ":mb": -int(doc.stored_bytes or 0) - freed,
                                                        ":mv": -int(doc.counted_versions or 0)})
            if activity is not None:
                tx.put(activity_item(activity), "attribute_not_exists(PK)")
            add_event(tx, event)
            try:
                tx.commit()
                return
            except ConditionFailed as exc:
                if any(exc.failed(i) for i in file_indexes) and not exc.failed(0):
                    continue  # another write changed a file's count since it was read
                raise StaleDocument(None) from exc
        raise WriteRefused("file counts kept moving")

    def delete_version(self, doc: Document, version: Version) -> None:
        """One old version: its item, the document's counters, the workspace's usage
        (its page, and the files no other version of the workspace refers to)."""
        counted = doc.counted_versions is not None
        counts = _file_counts([version]) if doc.has_files else {}
        for _attempt in range(FILE_ATTEMPTS):
            tx = Transaction()
            tx.delete(version_item_key(doc.document_id, version.number), "version_id = :vid",
                      values={":vid": version.version_id})
            update = "ADD versions_deleted :one"
            values: dict[str, Any] = {":one": 1, ":ws": doc.workspace_id, ":vid": version.version_id}
            if counted:
                update += ", stored_bytes :mb, counted_versions :mone"
                values.update({":mb": -int(version.size_bytes), ":mone": -1})
            tx.update(document_key(doc.document_id), update, LIVE_DOCUMENT + " AND latest_version_id <> :vid",
                      values=values)
            freed, file_indexes = FileRefs(self.table, doc.workspace_id).release(tx, counts) if counts else (0, [])
            if counted or freed:
                tx.update(workspace_key(doc.workspace_id), "ADD storage_bytes :mb, version_total :mone",
                          "attribute_exists(PK)",
                          values={":mb": -(int(version.size_bytes) if counted else 0) - freed,
                                  ":mone": -1 if counted else 0})
            try:
                tx.commit()
                return
            except ConditionFailed as exc:
                if any(exc.failed(i) for i in file_indexes) and not (exc.failed(0) or exc.failed(1)):
                    continue  # another write changed a file's count since it was read
                raise StaleDocument(None) from exc
        raise WriteRefused("file counts kept moving")

    def recount_files(self, workspace_id: str) -> FileRecount:
        """Files stored before the quota counted them have no reference counts (the 32
        FILES# items) and no bytes in `storage_bytes`, and their documents no `has_files`
        (a delete would not release them). In this order: every live document whose
        versions hold files is marked `has_files` (from then on its deletes release what
        is counted); the counts are read; the versions are read (consistently: a version
        committed with a count read is seen); each bucket whose counts differ from the
        versions is set right in a transaction with the workspace's usage, under the
        condition that its counts are still what was read (else everything again)."""
        changed = added = 0  # over every attempt: a chunk committed before a retry stays done
        for _attempt in range(FILE_ATTEMPTS):
            listed = [d.document_id for d in self.list_all(workspace_id)]
            with_files = [doc_id for doc_id in listed if any(v.files for v in self.get_with_versions(doc_id)[1])]
            for doc_id in with_files:
                try:
                    self.table.update(document_key(doc_id), "SET has_files = :yes", LIVE_DOCUMENT,
                                      values={":yes": True, ":ws": workspace_id}, returned="NONE")
                except ConditionFailed:
                    pass  # deleted meanwhile: its versions no longer count
            buckets = list(range(FILE_BUCKETS))
            items = self.table.batch_get([workspace_files_key(workspace_id, b) for b in buckets])
            held: dict[str, tuple[int, int]] = {}  # sha -> (references, size) as counted
            for item in items:
                for name, value in (item or {}).items():
                    if name.startswith("r_"):
                        sha = name[2:]
                        held[sha] = (int(value), int((item or {}).get(f"s_{sha}", 0)))
            versions: list[Version] = []
            for doc_id in listed:
                doc, found = self.get_with_versions(doc_id)
                if doc is not None and not doc.deleting:
                    versions += found
            counts = _file_counts(versions)
            sizes = {f["sha256"]: int(f["size_bytes"]) for v in versions for f in v.files}
            wrong = sorted(sha for sha in set(counts) | set(held)
                           if (held.get(sha) or (0, 0))[0] != counts.get(sha, 0))
            try:
                for bucket, shas in _by_bucket(wrong).items():
                    for start in range(0, len(shas), RECOUNT_CHUNK):
                        added += self._recount_chunk(workspace_id, bucket, shas[start:start + RECOUNT_CHUNK],
                                                     held, counts, sizes)
                        changed += len(shas[start:start + RECOUNT_CHUNK])
            except ConditionFailed:
                continue  # another write moved a count: read everything again
            return FileRecount(workspace_id, len(counts), changed, added)
        raise WriteRefused("file counts kept moving")

    def _recount_chunk(self, workspace_id: str, bucket: int, shas: list[str], held: dict[str, tuple[int, int]],
                       counts: dict[str, int], sizes: dict[str, int]) -> int:
        """One transaction: these counts of one bucket set to the versions' (a file no
        version refers to is removed), the workspace's usage moved by the bytes that
        came or went. Returns those bytes."""
        sets, removes, conditions, names, values = [], [], [], {}, {}
        delta = 0
        for i, sha in enumerate(shas):
            names[f"#r{i}"] = f"r_{sha}"
            was = held.get(sha)
            if was is None:
                conditions.append(f"attribute_not_exists(#r{i})")
            else:
                values[f":c{i}"] = was[0]
                conditions.append(f"#r{i} = :c{i}")
            want = counts.get(sha, 0)
            if want == 0:
                names[f"#s{i}"] = f"s_{sha}"
                removes += [f"#r{i}", f"#s{i}"]
                delta -= was[1] if was is not None else 0
            else:
                values[f":n{i}"] = want
                sets.append(f"#r{i} = :n{i}")
                if was is None:
                    names[f"#s{i}"] = f"s_{sha}"
                    values[f":s{i}"] = sizes[sha]
                    sets.append(f"#s{i} = :s{i}")
                    delta += sizes[sha]
        update = " ".join(part for part in (
            "SET " + ", ".join(sets) if sets else "", "REMOVE " + ", ".join(removes) if removes else "") if part)
        tx = Transaction()
        tx.update(workspace_files_key(workspace_id, bucket), update, " AND ".join(conditions),
                  names=names, values=values or None)
        if delta:
            tx.update(workspace_key(workspace_id), "ADD storage_bytes :d", "attribute_exists(PK)",
                      values={":d": delta})
        tx.commit()
        return delta

    def purge(self, document_id: str) -> None:
        """Delete the document's partition; the META item goes last, so an
        interrupted purge can be found and finished."""
        items = self.table.query_all("PK = :pk", {":pk": document_pk(document_id)}, consistent=True)
        keys = [{"PK": i["PK"], "SK": i["SK"]} for i in items]
        keys.sort(key=lambda k: k["SK"] == "META")
        self.table.delete_keys(keys)
