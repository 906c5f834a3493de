"""What a use case needs: repositories (the ports), a clock and id generation (injectable).

The default Context of a running process is built by chalicelib/wiring.py (the
composition root), never here: services import ports only."""
from __future__ import annotations

import functools
import random
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Optional, overload

from chalicelib.ports.cdn import NoCdn
from chalicelib.ports.static import NoStaticSite

if TYPE_CHECKING:  # the ports' Protocols name types only (a cold start imports what a request uses)
    from chalicelib.ports import (
        ApiKeyRepository, BlobStore, DocumentRepository, FeedbackRepository, RateLimitRepository, Repositories,
        SessionRepository, StorageHealth, UserRepository, ViewCounterRepository, WorkspaceRepository,
    )
    from chalicelib.ports.leases import LeaseRepository
    from chalicelib.ports.exports import ExportRepository
    from chalicelib.ports.cdn import CdnInvalidator, PendingInvalidationRepository
    from chalicelib.ports.mail import Mailer
    from chalicelib.ports.outbound import OutboundHttp
    from chalicelib.ports.people import PeopleRepository
    from chalicelib.ports.oauth import OAuthRepository
    from chalicelib.ports.reviews import ReviewRepository
    from chalicelib.ports.static import StaticSite
    from chalicelib.ports.recipients import RecipientRepository
    from chalicelib.ports.signing import SignerFactory, SigningKeyRepository
    from chalicelib.ports.webhooks import WebhookRepository


def new_document_id() -> str:
    import uuid  # not at import: uuid loads platform (a share page never makes an id)

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


def _memory_signers() -> SignerFactory:
    """A Context built without the composition root (tests) signs with a key in memory."""
    from chalicelib.domain.provenance import MemorySigners

    return MemorySigners()


def _no_nudge() -> None:
    return None


def _no_export_runner(export_id: str) -> None:
    return None


def _no_quiet_runner(step: dict[str, str]) -> None:
    raise RuntimeError("this Context runs no quiet steps: build it with chalicelib.wiring.new_context()")


def _no_mailer() -> Mailer:
    raise RuntimeError("this Context has no mailer: build it with chalicelib.wiring.new_context()")


@dataclass
class Context:
    """Built by the composition root (chalicelib/wiring.py), which picks the adapters;
    services only ever see the ports."""
    repos: Repositories
    # Edge coherence: the CDN told about withdrawn links (services/cdn.py); not storage.
    cdn: CdnInvalidator = field(default_factory=NoCdn)
    clock: Callable[[], float] = time.time
    # Outgoing mail (ports/mail.py), built on first use: DOCPUB_MAIL picks the adapter.
    mail_factory: Callable[[], Mailer] = _no_mailer
    # Tells the webhook worker that the outbox has a new event (services/webhooks.py);
    # wiring gives the deployed stack's SQS nudge, else nothing (make run's worker polls).
    nudge_outbox: Callable[[], None] = _no_nudge
    # Webhook targets: the address rules and the one outbound POST (adapters/webhook_sender.py),
    # given by wiring; None in a Context that never sends webhooks.
    webhook_sender: Any = None
    # Requests to addresses strangers chose (client metadata documents), through the one
    # fenced outbound client (ports/outbound.py), given by wiring.
    outbound: Optional[OutboundHttp] = None
    # Static copies of public share links (ports/static.py, services/static_pages.py) and
    # what draws them (the share surface's page renderer, given by wiring); not storage.
    static: StaticSite = field(default_factory=NoStaticSite)
    static_render: Any = None
    # Builds a started export in the background (services/exports.py): wiring gives the
    # deployed stack's SQS message to the worker, else a thread of this process.
    run_export: Callable[[str], None] = _no_export_runner
    # Runs a quiet step after the answer (services/quiet_steps.py: the part of a mail step
    # that differs between addresses): wiring gives the deployed stack's SQS message to the
    # worker, else a daemon thread of this process on this Context.
    run_quiet: Callable[[dict[str, str]], Any] = _no_quiet_runner
    # Who signs versions' statements (ports/signing.py, contract 7g), built on first use.
    signers_factory: Callable[[], SignerFactory] = _memory_signers
    # Backoff between optimistic-concurrency retries; tests may inject a no-op.
    sleep: Callable[[float], None] = time.sleep

    def backoff(self, attempt: int) -> None:
        """Short jittered pause before retrying a write that lost a race."""
        if attempt:
            self.sleep(random.uniform(0, min(0.1, 0.002 * (2 ** min(attempt, 6)))))

    @functools.cached_property
    def mail(self) -> Mailer:
        return self.mail_factory()

    @functools.cached_property
    def signers(self) -> SignerFactory:
        return self.signers_factory()

    @property
    def signing_keys(self) -> SigningKeyRepository:
        return self.repos.signing_keys  # type: ignore[return-value]  # set by both adapters

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def workspaces(self) -> WorkspaceRepository:
        return self.repos.workspaces

    @property
    def keys(self) -> ApiKeyRepository:
        return self.repos.keys

    @property
    def documents(self) -> DocumentRepository:
        return self.repos.documents

    @property
    def rates(self) -> RateLimitRepository:
        return self.repos.rates

    @property
    def feedback(self) -> FeedbackRepository:
        return self.repos.feedback

    @property
    def blobs(self) -> BlobStore:
        return self.repos.blobs

    @property
    def users(self) -> UserRepository:
        return self.repos.users

    @property
    def sessions(self) -> SessionRepository:
        return self.repos.sessions

    @property
    def oauth(self) -> OAuthRepository:
        assert self.repos.oauth is not None, "this storage has no OAuth repository"
        return self.repos.oauth

    @property
    def health(self) -> StorageHealth:
        return self.repos.health

    @property
    def cdn_pending(self) -> PendingInvalidationRepository:
        return self.repos.cdn_pending  # type: ignore[return-value]  # set by both adapters

    @property
    def webhooks(self) -> WebhookRepository:
        return self.repos.webhooks  # type: ignore[return-value]  # set by both adapters

    @property
    def people(self) -> PeopleRepository:
        return self.repos.people  # type: ignore[return-value]

    @property
    def reviews(self) -> ReviewRepository:
        return self.repos.reviews  # type: ignore[return-value]  # set by both adapters

    @property
    def views(self) -> ViewCounterRepository:
        return self.repos.views

    @property
    def recipients(self) -> RecipientRepository:
        return self.repos.recipients  # type: ignore[return-value]  # set by both adapters

    @property
    def leases(self) -> LeaseRepository:
        return self.repos.leases  # type: ignore[return-value]  # set by both adapters

    @property
    def exports(self) -> ExportRepository:
        return self.repos.exports  # type: ignore[return-value]  # set by both adapters


@overload
def rfc3339(ms: int) -> str: ...
@overload
def rfc3339(ms: None) -> None: ...
def rfc3339(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@overload
def rfc3339_ms(ms: int) -> str: ...
@overload
def rfc3339_ms(ms: None) -> None: ...
def rfc3339_ms(ms: int | None) -> str | None:
    """A moment the caller chose to the millisecond (share_expires_at): `rfc3339`, plus
    `.mmm` when it is not a whole second, so what was sent is what is answered."""
    if ms is None or ms % 1000 == 0:
        return rfc3339(ms)
    moment = datetime.fromtimestamp(ms // 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{moment}.{ms % 1000:03d}Z"
