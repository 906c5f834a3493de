"""Ports: what the services need from storage, and the records and exceptions they
exchange. Services import this package only, never an adapter."""
from chalicelib.ports.oauth import OAuthRepository
from chalicelib.ports.records import (
    BadCursor, BlobNotFound, DocumentCapReached, FeedbackGone, GuardFailed, IdempotencyRecord, KeyCapReached,
    OutcomeUnknown, Quota, QuotaReached, RateClaim, RateSlot, ReplyCapReached, StaleDocument, StorageFull,
    StorageUnavailable, UserExists, WebhookCapReached, WriteRefused, definitely_not_applied,
)
from chalicelib.ports.repositories import (
    BLOB_ROOT, ApiKeyRepository, BlobStore, DocumentRepository, FeedbackRepository, RateLimitRepository,
    FILE_ROOT, Repositories, SessionRepository, StorageHealth, UserRepository, WorkspaceRepository, document_prefix,
    file_key, file_prefix, source_key, version_key,
)
from chalicelib.ports.views import ViewCounterRepository, ViewCounts

__all__ = [
    "ApiKeyRepository", "OAuthRepository", "BadCursor", "BlobNotFound", "BlobStore", "DocumentCapReached", "DocumentRepository",
    "FeedbackGone", "FeedbackRepository", "GuardFailed", "IdempotencyRecord", "KeyCapReached", "OutcomeUnknown",
    "Quota", "QuotaReached", "RateClaim", "RateLimitRepository", "RateSlot", "Repositories", "SessionRepository",
    "StaleDocument", "StorageFull", "StorageHealth", "StorageUnavailable", "UserExists", "UserRepository",
    "WorkspaceRepository", "WriteRefused", "definitely_not_applied", "ReplyCapReached", "WebhookCapReached", "BLOB_ROOT", "document_prefix", "version_key",
    "FILE_ROOT", "file_key", "file_prefix", "source_key", "ViewCounterRepository", "ViewCounts",
]
