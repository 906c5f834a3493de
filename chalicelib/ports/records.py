"""The records the services exchange with storage.

Records are frozen dataclasses in storage language: what a thing is, never how an
adapter keeps it (no key scheme, index or engine word; tests/unit/test_layers.py
checks). An adapter builds them from its rows or items and takes them apart again;
a service makes a changed copy with `dataclasses.replace`. Times are epoch
milliseconds (`*_ms`) or seconds (`expires_at`). The storage errors both adapters
raise are in chalicelib/ports/errors.py.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional, TypedDict, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from chalicelib.ports.back_office_records import (
        AccessToken, AccountToken, AudienceEntry, AuthorizationCode, ClientKind, DashboardSession,
        DeliveryStatus, Export, Lease, Member, MemberRemoval, OAuthClient, OAuthGrant,
        PendingInvalidation, RefreshToken, Review, SigningKey, User, Webhook, WebhookDelivery, WebhookSecret,
        InvitationIndexing, RemovalMark,
    )

__all__ = [
    "Feedback", "Reply", "Event", "FeedbackStatus", "Author", "RateLog", "from_fields", "fields_of", "RateSlot",
    "IdempotencyRecord", "RateClaim", "Quota", "Workspace", "WorkspaceFields", "ApiKey", "KeyWriteLog",
    "ClientCap", "ReviewStatus", "Recipient", "RecipientCode", "BACK_OFFICE", "record_types", "ActivityEntry",
    "FileRecount",
    # the back office's (below)
    "AccessToken", "AccountToken", "AudienceEntry", "AuthorizationCode", "ClientKind",
    "DashboardSession", "DeliveryStatus", "Export", "Lease", "Member", "MemberRemoval", "RemovalMark", "OAuthClient",
    "OAuthGrant", "PendingInvalidation", "RefreshToken", "Review", "SigningKey", "User", "Webhook", "WebhookDelivery",
    "WebhookSecret", "InvitationIndexing",
]
# The back office's records (chalicelib/ports/back_office_records.py), imported from here
# as well: the first use of one loads that module (PEP 562 `__getattr__`, below), so a
# process that never touches them (the share function) never creates their classes.
BACK_OFFICE = frozenset({
    "User", "DashboardSession", "Member", "MemberRemoval", "RemovalMark", "AccountToken", "PendingInvalidation",
    "WebhookSecret", "Webhook", "WebhookDelivery", "DeliveryStatus", "OAuthClient", "ClientKind",
    "AuthorizationCode", "OAuthGrant", "AccessToken", "RefreshToken", "Review", "Lease", "Export",
    "AudienceEntry", "SigningKey", "InvitationIndexing",
})


def __getattr__(name: str) -> Any:
    if name in BACK_OFFICE:
        from chalicelib.ports import back_office_records

        return getattr(back_office_records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def record_types() -> list[type]:
    """Every record class, the back office's included (loads them; tests/unit/test_layers.py)."""
    from chalicelib.ports import back_office_records

    return [v for module in (globals(), vars(back_office_records)) for v in module.values()
            if isinstance(v, type) and dataclasses.is_dataclass(v)]

R = TypeVar("R", bound="DataclassInstance")


def from_fields(cls: type[R], values: Mapping[str, Any]) -> R:
    """The record `cls` from a row or item: its fields are taken by name, anything else
    (an adapter's own columns and keys) is left behind; a missing required field is a
    TypeError, so a record is never half-built."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def fields_of(record: DataclassInstance) -> dict[str, Any]:
    """A record's fields by name (a shallow copy: nested JSON stays as it is)."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


# ------------------------------------------------------------------ workspaces and their API keys

@dataclass(frozen=True)
class Workspace:
    """A workspace: its plan, name and (Pro) branding, and the counts kept with it, each
    changed in the same atomic step as what it counts: live documents (the plan's cap),
    active API keys, and the usage of its live versions (`version_total`, and
    `storage_bytes` with each bundle file counted once)."""
    workspace_id: str
    name: str
    plan: str
    created_ms: int
    document_count: int = 0
    key_count: int = 0
    version_total: int = 0
    storage_bytes: int = 0
    brand_name: Optional[str] = None
    brand_tagline: Optional[str] = None
    # Contract 7g; None: the default ("block", "off"), as in items stored before they existed
    secret_scanning: Optional[str] = None
    pii_scanning: Optional[str] = None
    # Contract 7f: {"domain": "@example.com", "role": "viewer" | "editor"}: people who sign in
    # through SSO with an address at that domain join with that role. None: off.
    sso_auto_join: Optional[dict[str, str]] = None


class WorkspaceFields(TypedDict, total=False):
    """What `WorkspaceRepository.set_fields` may change (None removes a brand field)."""
    name: str
    plan: str
    brand_name: Optional[str]
    brand_tagline: Optional[str]
    secret_scanning: Optional[str]
    pii_scanning: Optional[str]


@dataclass(frozen=True)
class KeyWriteLog:
    """One shard of an API key's write log: the times (ms) of its accepted writes still
    counted, and the sequence number a write's slot claim (RateSlot) is conditional on.
    A store that keeps one log per key has shard 0 only; one that spreads the log has
    every shard, also the empty ones."""
    shard: int
    seq: int
    times: tuple[int, ...] = ()


@dataclass(frozen=True)
class ApiKey:
    """An API key, by its id (derived from the SHA-256 of the key: `key_hash`; the key
    itself is never stored). `revoked_at` and `last_used_at` are epoch milliseconds;
    `write_logs` is the key's write limit as stored (`writes`: all its times).
    `created_by` is the member who made it (their email; the key acts with at most
    their current role and dies with their membership), None for a workspace key
    (made by the operator, or before keys had creators: acts as the owner)."""
    key_id: str
    workspace_id: str
    key_hash: str
    name: str
    created_ms: int
    prefix: Optional[str] = None  # what the dashboard shows of the key ("dpk_AbCdEf…")
    revoked_at: Optional[int] = None
    last_used_at: Optional[int] = None
    write_logs: tuple[KeyWriteLog, ...] = ()
    created_by: Optional[str] = None

    @property
    def writes(self) -> list[int]:
        """Every accepted write time still kept, oldest first (all shards together)."""
        return sorted(t for log in self.write_logs for t in log.times)


# ------------------------------------------------------------------ feedback and the event log

FeedbackStatus = Literal["open", "resolved"]
Author = Literal["owner", "viewer"]

@dataclass(frozen=True)
class Feedback:
    """A viewer's comment on one version of a document (a thread, with its replies)."""
    feedback_id: str
    document_id: str
    workspace_id: str
    version_id: str
    message: str
    created_ms: int
    version_number: Optional[int] = None  # the version the viewer was shown
    name: Optional[str] = None
    quote: Optional[str] = None
    anchor: Optional[Mapping[str, Any]] = None  # TextQuoteSelector {quote, prefix?, suffix?}
    status: FeedbackStatus = "open"
    resolved_ms: Optional[int] = None
    reply_count: int = 0
    suggestion: Optional[Mapping[str, Any]] = None  # {replacement} (contract 7e); only with an anchor
    resolved_in_version: Optional[int] = None  # the version an accepted suggestion made
    recipient_email: Optional[str] = None  # a verified recipient's (contract 7f), else None


@dataclass(frozen=True)
class Reply:
    """An answer in a feedback thread, by the document's people or a viewer."""
    reply_id: str
    feedback_id: str
    document_id: str
    workspace_id: str
    message: str
    author: Author
    created_ms: int
    name: Optional[str] = None


@dataclass(frozen=True)
class Event:
    """What a change reports, appended in the change's own atomic step: read by waiting
    feedback lists (`wakes`) and turned into webhook deliveries. `payload` is the
    webhook's `data`."""
    event_id: str
    workspace_id: str
    type: str
    created_ms: int
    document_id: Optional[str] = None
    feedback_id: Optional[str] = None
    reply_id: Optional[str] = None
    wakes: bool = False
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolution:
    """A suggestion accepted with the version that applies it (DocumentRepository.append_version):
    the feedback as read (it must still be open) and the event reporting it resolved."""
    feedback: Feedback
    event: Optional[Event] = None


@dataclass(frozen=True)
class ActivityEntry:
    """A line of a workspace's activity log: who (`actor_kind`, `actor`) did what
    (`action` on `target`) from which surface; kept 90 days (`expires_at`)."""
    workspace_id: str
    activity_id: str
    created_ms: int
    actor_kind: str
    actor: str
    surface: str
    action: str
    expires_at: int
    target: Optional[str] = None
    detail: Mapping[str, Any] = field(default_factory=dict)


__all__ += ["Resolution"]


# ------------------------------------------------------------------ records

@dataclass(frozen=True)
class RateLog:
    """A standalone limit's sliding log (per address, account, workspace...): the times
    (ms) of the events still counted, and a sequence number a claim is conditional on."""
    scope: str
    hits: tuple[int, ...]
    seq: int
    expires_at: Optional[int] = None  # epoch seconds; for cleanup only


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


@dataclass(frozen=True)
class ClientCap:
    """The service-wide cap on new OAuth clients (dynamic registrations and fetched
    client metadata documents): at most `limit` stored in window number `window`,
    counted in the same atomic step as the client (ClientCapReached past it)."""
    window: int
    limit: int
    expires_at: int  # epoch seconds: the counter's cleanup


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
      reference count per (workspace, file), changed in the same atomic step.
    - `reserved_bytes`: room the quota keeps for what is promised but not stored
      (pending uploads' declared sizes, read by the service): counted against the quota,
      never added to `storage_bytes`."""
    workspace_id: str
    add_bytes: int
    max_storage_bytes: dict[str, Optional[int]]  # plan -> Optional[int]
    version_room_plans: tuple[str, ...]
    rate_claim: Optional[RateClaim] = None
    files: dict[str, int] = field(default_factory=dict)
    reserved_bytes: int = 0

    def refusal(self, plan: str, storage_bytes: int, new_file_bytes: int = 0) -> Optional[str]:
        """Which bound a workspace with this plan and usage breaks ("versions",
        "storage"), or None. `new_file_bytes`: the files the workspace does not hold yet."""
        if plan not in self.version_room_plans:
            return "versions"
        limit = self.max_storage_bytes.get(plan)
        if limit is not None and storage_bytes + self.reserved_bytes + self.add_bytes + new_file_bytes > limit:
            return "storage"
        return None


# ------------------------------------------------------------------ documents, versions, share links (DocumentRepository)

__all__ += ["Document", "DocumentListing", "Version", "ShareLink", "StoredIdempotency"]


@dataclass(frozen=True)
class Version:
    """One published version of a document: its page is the blob at `blob_key`
    (ports/repositories.version_key); `format` "markdown" keeps the source beside it
    (source_key), `files` are a bundle's files ({path, size_bytes, sha256}, stored
    once per workspace: file_key). Numbers are never reused."""
    version_id: str
    number: int
    created_ms: int
    size_bytes: int
    blob_key: str
    note: Optional[str] = None
    format: Optional[str] = None  # None: HTML as published; "markdown"
    files: tuple[Mapping[str, Any], ...] = ()
    # Its signed statement (contract 7g), the provenance answer as JSON: `{statement, signature}`,
    # made when the version was and never again; None for versions made before signing existed.
    provenance: Optional[str] = None


@dataclass(frozen=True)
class Document:
    """A document of a workspace: its metadata, counters, the latest version's
    summary and its share link's settings. `deleting` is set once a delete began
    (hidden from lists and share links until it is purged)."""
    document_id: str
    workspace_id: str
    title: str
    share_id: str
    created_ms: int
    updated_ms: int
    version_count: int  # the number of the latest version (numbers stay when old ones are deleted)
    latest_version_id: str
    latest_size: int
    description: str = ""
    open_feedback_count: int = 0
    versions_deleted: int = 0
    passphrase_hash: Optional[str] = None
    passphrase_epoch: int = 0  # moves on every passphrase change: unlock cookies name it
    share_enabled: bool = True
    share_expires_ms: Optional[int] = None  # None: the link never expires
    share_access: str = "public"  # public | workspace | recipients
    latest_content: Optional[str] = None  # "markdown", "files", "markdown files" or None (plain HTML)
    feedback_activity_ms: Optional[int] = None  # the last comment or reply
    deleting: bool = False
    # The document's usage where a store counts it on the document itself (None: the
    # store counts it from the versions): the bytes and versions counted in the
    # workspace's usage, and whether any version ever had files.
    stored_bytes: Optional[int] = None
    counted_versions: Optional[int] = None
    has_files: bool = False
    # Reviews (contract 7e), kept on the document and changed in the atomic step of each
    # review and review request (ReviewRepository): the state as of `review_version`
    # (`none`, `pending`, `changes_requested`, `approved`; a later version is `pending`
    # whatever this says: services/reviews.review_state), each reviewer's latest decision
    # on that version (`<kind>:<id>` -> approved | changes_requested), the addresses asked
    # to review (newest last), and a sequence number each of those changes is conditional on.
    review_state: str = "none"
    review_version: Optional[int] = None
    review_decisions: Mapping[str, str] = field(default_factory=dict)
    review_requested: tuple[str, ...] = ()
    review_seq: int = 0
    # Who may open a `recipients` link (contract 7f): lowercased email addresses and
    # `@domain` entries, in the order given (kept when the access changes).
    share_recipients: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocumentListing:
    """A document as a listing gives it (DocumentRepository.list_page/list_all): what
    the listing's answer, "find", the most-viewed ranking and the file sweep read.
    `get` the Document for anything else."""
    document_id: str
    workspace_id: str
    title: str
    share_id: str
    created_ms: int
    updated_ms: int
    version_count: int
    latest_version_id: str
    description: str = ""
    open_feedback_count: int = 0
    versions_deleted: int = 0
    share_enabled: bool = True
    share_expires_ms: Optional[int] = None
    share_access: str = "public"
    deleting: bool = False


@dataclass(frozen=True)
class ShareLink:
    """A live share link: which document of which workspace `share_id` opens."""
    share_id: str
    document_id: str
    workspace_id: str


@dataclass(frozen=True)
class StoredIdempotency:
    """The answer stored for an Idempotency-Key (IdempotencyRecord is its claim):
    replayed while `expires_at` (epoch seconds) is ahead, for the same `request_hash`."""
    key_id: str
    key_digest: str
    request_hash: str
    response_json: str
    expires_at: int


# ------------------------------------------------------------------ recounting a workspace's files

@dataclass(frozen=True)
class FileRecount:
    """What DocumentRepository.recount_files found and set right: `files` distinct files
    the workspace's live versions refer to, `changed` of them (and held ones no version
    refers to) whose count was missing or wrong, `bytes_added` to its storage usage (less
    than 0 when counted files were freed). A second run finds nothing to change."""
    workspace_id: str
    files: int
    changed: int
    bytes_added: int


# ------------------------------------------------------------------ reviews (contract 7e; ReviewRepository)


@dataclass(frozen=True)
class ReviewStatus:
    """What a document keeps of its reviews (Document.review_*), as a review or a review
    request leaves it: written only if the document's `review_seq` and `version_count` are
    still those it was computed from."""
    state: str
    version: Optional[int]
    decisions: Mapping[str, str] = field(default_factory=dict)
    requested: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recipient:
    """A person a `recipients` link admits, as the link saw them (contract 7f): created
    by their first verified opening or by a revocation; `revoked_ms` set: refused."""
    document_id: str
    workspace_id: str
    email: str
    views: int = 0
    first_opened_ms: Optional[int] = None
    last_opened_ms: Optional[int] = None
    revoked_ms: Optional[int] = None


@dataclass(frozen=True)
class RecipientCode:
    """The one live email code of (document, email): a keyed hash of the 6 digits, when
    it stops working, and how many wrong tries it took (spent at the limit)."""
    document_id: str
    email: str
    code_hash: str
    expires_ms: int
    tries: int = 0


