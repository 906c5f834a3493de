"""What a use case needs: repositories, a clock and id generation (injectable)."""
from __future__ import annotations

import functools
import random
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from chalicelib.adapters.blobs import BlobStore
from chalicelib.adapters.views_dynamodb import ViewCounterRepository
from chalicelib.adapters.dynamodb import (
    ApiKeyRepository, DocumentRepository, FeedbackRepository, RateLimitRepository, SessionRepository,
    UserRepository, WorkspaceRepository,
)


def new_document_id() -> str:
    return str(uuid.uuid4())


def new_version_id() -> str:
    return "v_" + secrets.token_urlsafe(12)


def new_share_id() -> str:
    # 16 bytes = 128 bits of randomness, URL-safe.
    return secrets.token_urlsafe(16)


def new_feedback_id() -> str:
    return "fb_" + secrets.token_urlsafe(12)


def new_workspace_id() -> str:
    return "ws_" + secrets.token_urlsafe(12)


@dataclass
class Context:
    workspaces: WorkspaceRepository = field(default_factory=WorkspaceRepository)
    keys: ApiKeyRepository = field(default_factory=ApiKeyRepository)
    documents: DocumentRepository = field(default_factory=DocumentRepository)
    rates: RateLimitRepository = field(default_factory=RateLimitRepository)
    feedback: FeedbackRepository = field(default_factory=FeedbackRepository)
    blobs: BlobStore = field(default_factory=BlobStore)
    users: UserRepository = field(default_factory=UserRepository)
    sessions: SessionRepository = field(default_factory=SessionRepository)
    views: ViewCounterRepository = field(default_factory=ViewCounterRepository)
    clock: Callable[[], float] = time.time
    # Backoff between optimistic-concurrency retries; tests may inject a no-op.
    sleep: Callable[[float], None] = time.sleep

    def backoff(self, attempt: int) -> None:
        """Short jittered pause before retrying a write that lost a race."""
        if attempt:
            self.sleep(random.uniform(0, min(0.1, 0.002 * (2 ** min(attempt, 6)))))

    def now_ms(self) -> int:
        return int(self.clock() * 1000)


def rfc3339(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=None)
def default_context() -> Context:
    return Context()
