"""Ports: what the services need from storage, and the records and exceptions they
exchange. Services import this package only, never an adapter."""
from chalicelib.ports.oauth import OAuthRepository
from chalicelib.ports.errors import (
    BadCursor, BlobNotFound, Conflict, DocumentCapReached, FeedbackGone, GuardFailed, InvalidCursor, KeyCapReached,
    NotFound, OutcomeUnknown, QuotaExceeded, StaleDocument, StorageError, StorageUnavailable, Unavailable,
    UserExists, WriteRefused, QuotaReached, ClientCapReached, StorageFull, ReplyCapReached, WebhookCapReached, definitely_not_applied,
)
from chalicelib.ports.records import ClientCap, IdempotencyRecord, Quota, RateClaim, RateSlot
from chalicelib.ports.repositories import (
    BLOB_ROOT, ApiKeyRepository, BlobStore, DocumentRepository, FeedbackRepository, RateLimitRepository,
    FILE_ROOT, Repositories, SessionRepository, StorageHealth, UserRepository, WorkspaceRepository, document_prefix,
    file_key, file_prefix, source_key, version_key,
)
from chalicelib.ports.views import ViewCounterRepository, ViewCounts

__all__ = [
    "ApiKeyRepository", "OAuthRepository", "BadCursor", "BlobNotFound", "BlobStore", "DocumentCapReached", "DocumentRepository",
    "FeedbackGone", "FeedbackRepository", "GuardFailed", "IdempotencyRecord", "KeyCapReached", "OutcomeUnknown",
    "RateClaim", "RateLimitRepository", "RateSlot", "Repositories", "SessionRepository", "StaleDocument",
    "StorageHealth", "StorageUnavailable", "UserExists", "UserRepository", "WorkspaceRepository", "WriteRefused",
    "definitely_not_applied", "Conflict", "InvalidCursor", "NotFound", "QuotaExceeded", "StorageError",
    "Unavailable", "BLOB_ROOT", "document_prefix", "version_key",
    "Quota", "QuotaReached", "ClientCap", "ClientCapReached", "StorageFull", "ReplyCapReached", "WebhookCapReached",
    "FILE_ROOT", "file_key", "file_prefix", "source_key", "ViewCounterRepository", "ViewCounts",
]
