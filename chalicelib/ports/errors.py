"""The one storage error hierarchy. Both adapters raise these (and only these);
services catch these, never a driver's error (botocore, sqlite3).

    StorageError
    ├── Conflict          the data changed since it was read, or a guard refused
    │   ├── StaleDocument     the document changed, vanished or is being deleted
    │   ├── GuardFailed       the rate slot ("rate") or idempotency record ("idem")
    │   ├── FeedbackGone      the feedback is gone or not in the expected state
    │   └── UserExists        an account with this email exists
    ├── NotFound          a record or blob that should be there is not
    │   └── BlobNotFound      (also Unavailable: 503 unless the caller knows better)
    ├── QuotaExceeded     a counted limit held at commit
    │   ├── DocumentCapReached, KeyCapReached
    │   ├── ReplyCapReached, WebhookCapReached
    │   └── QuotaReached      storage, versions or the workspace's write rate
    ├── InvalidCursor     (BadCursor) a listing cursor this listing never returned
    └── Unavailable       busy or unreachable: retry (503); `code` names the cause for logs
        ├── WriteRefused      known not applied
        └── OutcomeUnknown    may have committed: keep what it refers to

Every surface maps `Unavailable` to 503 (entrypoints/http.as_error); the other
kinds are answered by the service that expects them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from chalicelib.ports.records import Workspace
    from chalicelib.ports.records import Document


class StorageError(Exception):
    """Anything a storage adapter reports."""


# ------------------------------------------------------------------ conflicts (nothing was written)

class Conflict(StorageError):
    """The data changed since it was read, or a conditional guard refused the write."""


class StaleDocument(Conflict):
    """The document changed (or vanished, or is being deleted) since it was read;
    `current`: the document as the store has it now, when the refusal read it."""

    current: Optional[Document]

    def __init__(self, current: Optional[Document] = None):
        super().__init__("document changed")
        self.current = current


class GuardFailed(Conflict):
    """The rate slot ("rate") or the idempotency record ("idem") could not be claimed."""

    def __init__(self, which: str):
        super().__init__(which)
        self.which = which


class FeedbackGone(Conflict):
    """The feedback (or its document) no longer exists, or is not in that state."""


class UserExists(Conflict):
    """An account with this email already exists."""


# ------------------------------------------------------------------ quotas (nothing was written)

class QuotaExceeded(StorageError):
    """A counted limit (checked in the same atomic step as the write) is reached."""

    def __init__(self, workspace: Optional[Any] = None, what: str = "quota exceeded"):
        super().__init__(what)
        self.workspace = workspace


class DocumentCapReached(QuotaExceeded):
    """The workspace holds its plan's maximum of documents; `workspace` as stored at
    the refusal (its `document_count`), None if there is no such workspace."""

    workspace: Optional[Workspace]

    def __init__(self, workspace: Optional[Workspace] = None):
        super().__init__(workspace, "document cap reached")


class ClientCapReached(QuotaExceeded):
    """The service stores its maximum of new OAuth clients for this window."""

    def __init__(self) -> None:
        super().__init__(None, "client cap reached")


class KeyCapReached(QuotaExceeded):
    """The workspace holds its plan's maximum of active API keys; `workspace` as stored
    at the refusal (its `key_count`), None if there is no such workspace."""

    workspace: Optional[Workspace]

    def __init__(self, workspace: Optional[Workspace] = None):
        super().__init__(workspace, "key cap reached")


class ReplyCapReached(QuotaExceeded):
    """The thread holds its maximum of replies; `current` is how many it holds."""

    def __init__(self, current: int):
        super().__init__(None, "reply cap reached")
        self.current = current


class WebhookCapReached(QuotaExceeded):
    """The workspace holds its maximum of webhooks; `current` is how many it holds."""

    def __init__(self, current: int):
        super().__init__(None, "webhook cap reached")
        self.current = current


# ------------------------------------------------------------------ not found, cursors

class NotFound(StorageError):
    """A record or blob that should exist does not."""


class InvalidCursor(StorageError, ValueError):
    """A listing cursor that this listing never returned (malformed, or another listing's)."""


BadCursor = InvalidCursor


# ------------------------------------------------------------------ storage trouble (503)

class Unavailable(StorageError):
    """Storage is busy or unreachable; the client should retry (503). `code` names
    the cause for logs (never anything secret)."""

    def __init__(self, code: str = "unavailable"):
        super().__init__(code)
        self.code = code


StorageUnavailable = Unavailable


class WriteRefused(Unavailable):
    """A write failed and is known not to have been applied."""


class OutcomeUnknown(Unavailable):
    """A write failed without saying whether it committed (a timeout can hide a
    commit): anything it refers to must be kept."""


class BlobNotFound(NotFound, Unavailable):
    """No blob under that key. For a committed version this is storage trouble (503)
    unless the caller knows better (a share link's content: 404)."""

    def __init__(self, code: str = "blob_not_found"):
        Unavailable.__init__(self, code)


def definitely_not_applied(exc: BaseException) -> bool:
    """Whether a failed write is known not to have been applied."""
    return isinstance(exc, (WriteRefused, Conflict, QuotaExceeded))


class QuotaReached(QuotaExceeded):
    """A Quota refused the write: `which` is "storage", "versions" or "workspace-rate";
    `current` the count at that moment (bytes, or writes in the window); `plan` the
    workspace's plan when known."""

    def __init__(self, which: str, current: int = 0, plan: Optional[str] = None, adding: Optional[int] = None):
        super().__init__(None, which)
        self.which = which
        self.current = current
        self.plan = plan
        self.adding = adding  # bytes the refused version would have added (its new files included)


class StorageFull(WriteRefused):
    """The store's disk is full (embedded store): the write was not applied (507)."""
