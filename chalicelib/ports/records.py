"""The records and exceptions the services exchange with storage.

Records are plain data: how an adapter stores them is its own business. The
storage errors both adapters raise are in chalicelib/ports/errors.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The storage errors live in chalicelib/ports/errors.py; re-exported here for older imports.
from chalicelib.ports.errors import (  # noqa: F401
    BadCursor, BlobNotFound, Conflict, DocumentCapReached, FeedbackGone, GuardFailed, InvalidCursor, KeyCapReached,
    NotFound, OutcomeUnknown, QuotaExceeded, StaleDocument, StorageError, StorageUnavailable, Unavailable, UserExists,
    WriteRefused, definitely_not_applied,
)


__all__ = [
    "Record", "RateSlot", "IdempotencyRecord", "RateClaim",
    "BadCursor", "BlobNotFound", "Conflict", "DocumentCapReached", "FeedbackGone", "GuardFailed", "InvalidCursor",
    "KeyCapReached", "NotFound", "OutcomeUnknown", "QuotaExceeded", "StaleDocument", "StorageError",
    "StorageUnavailable", "Unavailable", "UserExists", "WriteRefused", "definitely_not_applied",
]

# A stored record as the adapters hand it over (field names in docs/architecture.md);
# the typed records of the ports replace it aggregate by aggregate.
Record = dict[str, Any]


# ------------------------------------------------------------------ records

@dataclass
class RateSlot:
    """A slot of an API key's write log, claimed in the same atomic step as the write:
    it holds only if the key's log is still at `expected_seq` (nobody wrote since it was read)."""
    key_id: str
    expected_seq: int
    new_log: list[int]
    now_ms: int


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
