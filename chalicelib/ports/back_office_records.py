"""The records only the back office exchanges with storage: accounts and members, OAuth,
webhooks, the CDN's pending invalidations, reviews, leases, exports, the audience index
and signing keys (the same rules as chalicelib/ports/records.py, where they are imported
from: `from chalicelib.ports.records import Member` loads this module on first use).

They live apart because the share function never needs them: creating a frozen dataclass
costs about 0.4 ms on Python 3.11, and its cold start creates only the records a share
view reads (bench/cold_start.py; tests/http/test_cold_start.py checks this module stays
unloaded through a first view).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Optional

__all__ = [
    "User", "DashboardSession", "Member", "MemberRemoval", "RemovalMark", "AccountToken",
    "PendingInvalidation", "WebhookSecret", "Webhook", "WebhookDelivery", "OAuthClient", "AuthorizationCode",
    "OAuthGrant", "AccessToken", "RefreshToken", "Review", "Lease", "Export", "AudienceEntry",
    "SigningKey", "DeliveryStatus", "ClientKind", "InvitationIndexing",
]


# ------------------------------------------------------------------ dashboard people and their sessions

@dataclass(frozen=True)
class User:
    """A dashboard account, by its lowercased email; only a password hash is stored."""
    email: str
    password_hash: str
    workspace_id: str  # the default workspace (the first one, or the last one switched to)
    created_ms: int
    role: str = "owner"  # from before members and roles (ports/people.py); not read
    password_changed_ms: Optional[int] = None
    email_verified_ms: Optional[int] = None


@dataclass(frozen=True)
class DashboardSession:
    """A signed-in browser, by the SHA-256 of its session id (the id is never stored).
    `expires_ms` is checked on every read; `expires_at` (epoch seconds) is for cleanup."""
    session_hash: str
    email: str
    workspace_id: str
    created_ms: int
    expires_ms: int
    expires_at: Optional[int] = None
    # Signed in through single sign-on (contract 7f): the email domain the provider vouched
    # for ("@example.com"); None for any other sign-in.
    sso_domain: Optional[str] = None


@dataclass(frozen=True)
class Member:
    """A person's place in a workspace (ports/people.py): owner, editor or viewer."""
    workspace_id: str
    email: str
    role: str
    created_ms: int
    added_by: Optional[str] = None


@dataclass(frozen=True)
class MemberRemoval:
    """What `PeopleRepository.remove_member` did: the member as it was, and the ids of
    the API keys it made that the removal revoked."""
    member: Member
    revoked_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class RemovalMark:
    """A person was removed from a workspace (ports/people.py): written in the removal's
    own step, it keeps single sign-on's auto-join from adding them back; an accepted
    invitation or a deliberate add clears it. `removed_by` is who removed them (the
    activity log's actor id: an owner's email, or their own when they left)."""
    workspace_id: str
    email: str
    removed_by: str
    removed_ms: int


@dataclass(frozen=True)
class AccountToken:
    """A one-time link's token, by its SHA-256 (the token itself is never stored): email
    verification, password reset (made after the change at `password_changed_ms`), an
    invitation (to `workspace_id` as `role`, by `invited_by`) or a sign-in link. Used once
    (`used_ms`); `expires_ms` is checked on every read, `expires_at` is for cleanup."""
    token_hash: str
    kind: str  # verify | reset | invite | login | sso (a single sign-on under way: its `state`)
    email: str
    created_ms: int
    expires_ms: int
    expires_at: int
    workspace_id: Optional[str] = None
    role: Optional[str] = None
    used_ms: Optional[int] = None
    password_changed_ms: Optional[int] = None
    invited_by: Optional[str] = None


# ------------------------------------------------------------------ indexing old invitations (PeopleRepository)

@dataclass(frozen=True)
class InvitationIndexing:
    """What PeopleRepository.index_invitations did: `found` invitations stored without the
    entry that finds them by email; `indexed` pending ones given it; `left_alone` used or
    expired ones (never listed anyway); `changed_meanwhile` ones that another write changed or
    deleted between the read and the conditional write (left as that write made them)."""
    found: int
    indexed: int
    left_alone: int
    changed_meanwhile: int


# ------------------------------------------------------------------ the CDN

@dataclass(frozen=True)
class PendingInvalidation:
    """A withdrawn link's path the CDN did not accept yet (ports/cdn.py): kept for a retry,
    `attempts` counted, the first `created_ms` kept."""
    path: str
    reason: str
    created_ms: int
    attempts: int
    last_attempt_ms: int
    last_error: str


# ------------------------------------------------------------------ webhooks and their deliveries

DeliveryStatus = Literal["pending", "delivered", "failed"]


@dataclass(frozen=True)
class WebhookSecret:
    """A signing secret; `expires_ms` for the previous one after a rotation (None: current)."""
    secret: str
    expires_ms: Optional[int] = None


@dataclass(frozen=True)
class Webhook:
    """A receiver URL subscribed to some event types of a workspace."""
    webhook_id: str
    workspace_id: str
    url: str
    events: tuple[str, ...]
    secrets: tuple[WebhookSecret, ...]  # newest first
    created_ms: int


@dataclass(frozen=True)
class WebhookDelivery:
    """One event for one webhook: tried until delivered or out of time. `next_attempt_ms`
    is set while it is pending (a sender's lease moves it on)."""
    delivery_id: str
    webhook_id: str
    workspace_id: str
    event_id: str
    event: str  # the event's type
    status: DeliveryStatus
    created_ms: int
    updated_ms: int
    attempts: int = 0
    event_created_ms: Optional[int] = None  # None once the event has left the log
    next_attempt_ms: Optional[int] = None
    response_status: Optional[int] = None
    last_error: Optional[str] = None


# ------------------------------------------------------------------ OAuth (ports/oauth.py)

# Codes and tokens are kept by their SHA-256 only (`code_hash`, `token_hash`): a record
# never holds a secret. Every expiring record carries `expires_ms`, checked by the
# service on every read; lists of scopes and URIs are tuples.

ClientKind = Literal["registered", "metadata"]


@dataclass(frozen=True)
class OAuthClient:
    """An app that may ask for access: `registered` by dynamic client registration
    (RFC 7591; expires unless a grant completes, then kept: `expires_ms` None) or
    described by the client ID metadata document at its https `client_id` (a cached
    copy, until `expires_ms`)."""
    client_id: str
    kind: ClientKind
    redirect_uris: tuple[str, ...]
    client_name: Optional[str] = None
    scopes: Optional[tuple[str, ...]] = None  # None: every scope
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    client_uri: Optional[str] = None
    logo_uri: Optional[str] = None
    created_ms: Optional[int] = None
    expires_ms: Optional[int] = None


@dataclass(frozen=True)
class AuthorizationCode:
    """An authorization code, by its SHA-256, bound to its client, redirect URI, code
    challenge (S256), resource and the approver's workspace. Used once (`used_ms`);
    `grant_id` names the grant made from it (a replayed code revokes that grant)."""
    code_hash: str
    client_id: str
    redirect_uri: str
    code_challenge: str
    resource: str
    scopes: tuple[str, ...]
    workspace_id: str
    expires_ms: int
    user: Optional[str] = None  # the member who approved it
    client_name: Optional[str] = None
    used_ms: Optional[int] = None
    grant_id: Optional[str] = None


@dataclass(frozen=True)
class OAuthGrant:
    """An app's access to a workspace, approved by `user` ("Connected apps"): its tokens
    work until `revoked_ms` is set."""
    grant_id: str
    workspace_id: str
    client_id: str
    scopes: tuple[str, ...]
    resource: str
    created_ms: int
    user: Optional[str] = None
    client_name: Optional[str] = None
    last_used_ms: Optional[int] = None
    revoked_ms: Optional[int] = None


@dataclass(frozen=True)
class AccessToken:
    """An access token of a grant, by its SHA-256: for `audience` (the /mcp resource),
    within `scopes`, until `expires_ms`."""
    token_hash: str
    grant_id: str
    workspace_id: str
    client_id: str
    scopes: tuple[str, ...]
    audience: str
    expires_ms: int


@dataclass(frozen=True)
class RefreshToken:
    """A refresh token of a grant, by its SHA-256: used once (`used_ms`, set in the
    rotation that stores its successor), until `expires_ms`."""
    token_hash: str
    grant_id: str
    client_id: str
    expires_ms: int
    created_ms: Optional[int] = None
    used_ms: Optional[int] = None


# ------------------------------------------------------------------ recounting a workspace's files

# ------------------------------------------------------------------ reviews (contract 7e; ReviewRepository)

@dataclass(frozen=True)
class Review:
    """A decision on one version of a document: `approved`, `changes_requested` or
    `commented`, by a reviewer (`reviewer_kind` member | recipient | key | oauth_client,
    `reviewer_id` their user id (email) / recipient email / key id / OAuth client id).
    Reviews never change; they stay on their version."""
    review_id: str
    document_id: str
    workspace_id: str
    version_number: int
    decision: str
    reviewer_kind: str
    reviewer_id: str
    created_ms: int
    message: Optional[str] = None
    reviewer_name: Optional[str] = None
    reviewer_email: Optional[str] = None


# ------------------------------------------------------------------ leases (LeaseRepository, ports/leases.py)

@dataclass(frozen=True)
class Lease:
    """One holder's place in a capped scope (a waiting request of a workspace, a pending
    upload): counted until it is released or `expires_ms` passes, whichever comes first,
    so a holder that died (a killed process, a Lambda timeout) stops counting on its own.
    `weight` is what the place holds against the scope's weight cap (an upload's declared
    bytes), 0 when only the number of places is capped."""
    scope: str
    holder: str
    expires_ms: int
    weight: int = 0


# ------------------------------------------------------------------ exports (ExportRepository, ports/exports.py)

@dataclass(frozen=True)
class Export:
    """A zip of a whole workspace (contract 7g), built in the background.

    `status` is `running` until the build stores its outcome (`ready` or `failed`); a
    running export past `deadline_ms` counts as failed (its build died: a killed process,
    a function timeout), so it never holds its workspace's one place for long. A ready
    one names its zip (`blob_key`, `size_bytes`), downloadable until `available_until_ms`.
    `expires_at` (epoch seconds) is when the record itself may go."""
    export_id: str
    workspace_id: str
    status: str
    created_ms: int
    deadline_ms: int
    expires_at: int
    requested_by: Optional[str] = None
    finished_ms: Optional[int] = None
    blob_key: Optional[str] = None
    size_bytes: Optional[int] = None
    available_until_ms: Optional[int] = None
    error: Optional[str] = None

    def running_at(self, now_ms: int) -> bool:
        return self.status == "running" and self.deadline_ms > now_ms


# ------------------------------------------------------------------ the audience of recipients links (ports/recipients.py)

@dataclass(frozen=True)
class AudienceEntry:
    """One entry (an email or `@domain`) of one document's `share_recipients`, by entry:
    what "Shared with me" asks for (the document is read again before it is shown)."""
    entry: str
    document_id: str
    workspace_id: str
    added_ms: int


# ------------------------------------------------------------------ signing keys (ports/signing.py)

@dataclass(frozen=True)
class SigningKey:
    """A key that signs (or signed) versions' statements: its public JWK (with `kid`, the
    RFC 7638 thumbprint, and `alg`), where its private half lives (`holder`: a key file's
    name in the data folder, or a KMS key's ARN), and, once retired, `not_after_ms`: it
    signs nothing after that, and stays listed so what it signed still verifies."""
    kid: str
    alg: str
    public_jwk: Mapping[str, str]
    holder: str
    created_ms: int
    not_after_ms: Optional[int] = None
