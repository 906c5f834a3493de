"""The records and exceptions the services exchange with storage.

Records are plain data: how an adapter stores them is its own business. The
storage errors both adapters raise are in chalicelib/ports/errors.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

# The storage errors live in chalicelib/ports/errors.py; re-exported here for older imports.
from chalicelib.ports.errors import (  # noqa: F401
    BadCursor, BlobNotFound, Conflict, DocumentCapReached, FeedbackGone, GuardFailed, InvalidCursor, KeyCapReached,
    NotFound, OutcomeUnknown, QuotaExceeded, StaleDocument, StorageError, StorageUnavailable, Unavailable, UserExists,
    QuotaReached, ReplyCapReached, StorageFull, WebhookCapReached, WriteRefused, definitely_not_applied,
)


__all__ = [
    "Record", "RateSlot", "IdempotencyRecord", "RateClaim", "Quota", "QuotaReached", "StorageFull",
    "BadCursor", "BlobNotFound", "Conflict", "DocumentCapReached", "FeedbackGone", "GuardFailed", "InvalidCursor",
    "KeyCapReached", "NotFound", "OutcomeUnknown", "QuotaExceeded", "StaleDocument", "StorageError",
    "StorageUnavailable", "Unavailable", "UserExists", "WriteRefused", "definitely_not_applied",
    "ReplyCapReached", "WebhookCapReached",
]

# A stored record as the adapters hand it over (field names in docs/architecture.md);
# the typed records of the ports replace it aggregate by aggregate.
Record = dict[str, Any]


# ------------------------------------------------------------------ records

@dataclass
class RateSlot:
    """A slot of an API key's write log, claimed in the same atomic step as the write:
    it holds only if the key's log `shard` is still at `expected_seq` (nobody wrote
    it since it was read). An adapter that keeps one log has only shard 0."""
    key_id: str
    expected_seq: int
    new_log: list[int]
    now_ms: int
    shard: int = 0


@dataclass
class IdempotencyRecord:
    """The answer to an Idempotency-Key, stored in the same atomic step as the write;
    it holds only if no live record exists for (key_id, key_digest)."""
    key_id: str
    key_digest: str
    request_hash: str
    response_json: str
    expires_at: int  # epoch seconds
    now: int  # epoch seconds: an existing record older than this may be replaced


@dataclass
class RateClaim:
    """Replace the sliding log of `scope` only if nobody wrote it since it was read
    (`expected_seq` 0: it did not exist)."""
    scope: str
    expected_seq: int
    new_log: list[int]
    expires_at: int  # epoch seconds; for cleanup only, never for correctness


@dataclass
class Quota:
    """Workspace-wide bounds of a new version, checked and counted in the same
    atomic step as the write (API contract section 4, resource bounds):
    - `add_bytes` is added to the workspace's `storage_bytes` (and one to its
      `version_total`), refused past `max_storage_bytes[plan]` (None: unlimited)
      for the workspace's plan as stored at commit;
    - the document may hold one more version only under `version_room_plans`
      (the plans whose versions-per-document cap it is under);
    - `rate_claim` records the write in one shard of the workspace's sliding write
      log (every key, OAuth grant and dashboard session of the workspace together,
      revoked keys included), only if that shard is still at the sequence it was
      read at (GuardFailed("workspace-rate") otherwise: read again and retry). The
      decision (room in the log, or 429) was made by the service before.
    - `new_files` ({sha256: size_bytes}): the distinct bundle files of the version.
      Each file is counted once per workspace: a file no live version of the
      workspace refers to yet adds its size to `storage_bytes` (refused past the
      quota like the rest), one already referred to adds nothing. The store keeps a
      reference count per (workspace, file), changed in the same atomic step."""
    workspace_id: str
    add_bytes: int
    max_storage_bytes: dict[str, Optional[int]]  # plan -> Optional[int]
    version_room_plans: tuple[str, ...]
    rate_claim: Optional[RateClaim] = None
    files: dict[str, int] = field(default_factory=dict)

    def refusal(self, plan: str, storage_bytes: int, new_file_bytes: int = 0) -> Optional[str]:
        """Which bound a workspace with this plan and usage breaks ("versions",
        "storage"), or None. `new_file_bytes`: the files the workspace does not hold yet."""
        if plan not in self.version_room_plans:
            return "versions"
        limit = self.max_storage_bytes.get(plan)
        if limit is not None and storage_bytes + self.add_bytes + new_file_bytes > limit:
            return "storage"
        return None
