"""The records and exceptions the services exchange with storage.

Adapters (DynamoDB + S3, SQLite + files) raise these; services catch these and
never a driver's own error. Records are plain data: how an adapter stores them is
its own business.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


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
    - one write is counted in the workspace's write counter for the window
      `window_scope`, refused once it holds `window_limit` (every key, OAuth grant
      and dashboard session of the workspace together, revoked keys included)."""
    workspace_id: str
    add_bytes: int
    max_storage_bytes: dict  # plan -> Optional[int]
    version_room_plans: tuple
    window_scope: str
    window_limit: int
    expires_at: int  # epoch seconds, for the window counter's cleanup

    def refusal(self, plan: str, storage_bytes: int) -> Optional[str]:
        """Which bound a workspace with this plan and usage breaks ("versions",
        "storage"), or None."""
        if plan not in self.version_room_plans:
            return "versions"
        limit = self.max_storage_bytes.get(plan)
        if limit is not None and storage_bytes + self.add_bytes > limit:
            return "storage"
        return None


# ------------------------------------------------------------------ refusals (nothing was written)

class StaleDocument(Exception):
    """The document changed (or vanished, or is being deleted) since it was read."""

    def __init__(self, current: Optional[dict] = None):
        super().__init__("document changed")
        self.current = current


class DocumentCapReached(Exception):
    """The workspace holds its plan's maximum of documents."""

    def __init__(self, workspace: Optional[dict]):
        super().__init__("document cap reached")
        self.workspace = workspace


class KeyCapReached(Exception):
    """The workspace holds its plan's maximum of active API keys."""

    def __init__(self, workspace: Optional[dict]):
        super().__init__("key cap reached")
        self.workspace = workspace


class QuotaReached(Exception):
    """A Quota refused the write: `which` is "storage", "versions" or "workspace-rate";
    `current` the count at that moment (bytes, or writes in the window); `plan` the
    workspace's plan when known."""

    def __init__(self, which: str, current: int = 0, plan: Optional[str] = None):
        super().__init__(which)
        self.which = which
        self.current = current
        self.plan = plan


class GuardFailed(Exception):
    """The rate slot ("rate") or the idempotency record ("idem") could not be claimed."""

    def __init__(self, which: str):
        super().__init__(which)
        self.which = which


class ReplyCapReached(Exception):
    """The thread holds its maximum of replies."""

    def __init__(self, current: int):
        super().__init__("reply cap reached")
        self.current = current


class WebhookCapReached(Exception):
    """The workspace holds its maximum of webhooks."""

    def __init__(self, current: int):
        super().__init__("webhook cap reached")
        self.current = current


class FeedbackGone(Exception):
    """The feedback (or its document) no longer exists, or is not in that state."""


class UserExists(Exception):
    """An account with this email already exists."""


class BadCursor(ValueError):
    """A listing cursor that this listing never returned (malformed, or another listing's)."""


# ------------------------------------------------------------------ storage trouble (503)

class StorageUnavailable(Exception):
    """Storage is busy or unreachable; the client should retry (503). `code` names
    the cause for logs (never anything secret)."""

    def __init__(self, code: str = "unavailable"):
        super().__init__(code)
        self.code = code


class WriteRefused(StorageUnavailable):
    """A write failed and is known not to have been applied."""


class StorageFull(WriteRefused):
    """The store's disk is full (embedded store): the write was not applied (507)."""


class OutcomeUnknown(StorageUnavailable):
    """A write failed without saying whether it committed (a timeout can hide a
    commit): anything it refers to must be kept."""


class BlobNotFound(StorageUnavailable):
    """No blob under that key. For a committed version this is storage trouble (503)
    unless the caller knows better (a share link's content: 404)."""


def definitely_not_applied(exc: BaseException) -> bool:
    """Whether a failed write is known not to have been applied."""
    return isinstance(exc, (WriteRefused, StaleDocument, DocumentCapReached, KeyCapReached,
                            GuardFailed, QuotaReached, FeedbackGone, UserExists, ReplyCapReached,
                            WebhookCapReached))
