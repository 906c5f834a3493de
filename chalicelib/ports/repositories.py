"""What the services store, as `typing.Protocol`s. Two adapters implement them:
DynamoDB + S3 (`chalicelib.adapters.aws`, deployed) and SQLite + files
(`chalicelib.adapters.sqlite`, `make run`). Both give every rule the same meaning;
tests/contract runs one suite against both.

Records are the frozen dataclasses of chalicelib/ports/records.py (fields in
docs/architecture.md), never plain dicts; numbers are
ints, times are epoch milliseconds (`*_ms`) or seconds (`expires_at`). Every
multi-record change is one atomic step: it applies whole or not at all.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Iterable, Mapping, Optional, Protocol, TypedDict

from chalicelib.ports.oauth import OAuthRepository
from chalicelib.ports.records import ApiKey, Workspace, WorkspaceFields
from chalicelib.ports.records import Event, Feedback, RateLog, IdempotencyRecord, Quota, RateClaim, RateSlot, Reply
from chalicelib.ports.records import Document, DocumentListing, ShareLink, StoredIdempotency, Version
from chalicelib.ports.records import Resolution
from chalicelib.ports.views import ViewCounterRepository
from chalicelib.ports.webhooks import WebhookRepository

if TYPE_CHECKING:
    from chalicelib.ports.records import ActivityEntry, DashboardSession, FileRecount, User


class WorkspaceRepository(Protocol):
    def get(self, workspace_id: str) -> Optional[Workspace]:
        """The workspace with its counts and usage, or None."""

    def create(self, workspace: Workspace) -> None:
        """Store a new workspace (its counts and usage start at 0, whatever it says)."""

    def set_plan(self, workspace_id: str, plan: str) -> Workspace:
        """Change the plan; returns the workspace as stored."""

    def set_fields(self, workspace_id: str, fields: WorkspaceFields) -> Workspace:
        """Set fields (None removes a brand field); returns the workspace as stored."""

    def set_sso_auto_join(self, workspace_id: str, domain: Optional[str], role: Optional[str]) -> Workspace:
        """Set `sso_auto_join` to {"domain", "role"} (domain None: clear it) and what
        `sso_auto_join_for` reads, in one step; the workspace as stored. WriteRefused when
        the workspace does not exist."""

    def sso_auto_join_for(self, domain: str) -> list[tuple[str, str]]:
        """(workspace_id, role) of every workspace whose `sso_auto_join` names `domain`
        ("@example.com", lowercase), in workspace id order."""


class ApiKeyRepository(Protocol):
    def get(self, key_id: str) -> Optional[ApiKey]:
        """The key with its write log (`write_logs`: one shard, or every shard the
        adapter keeps, also empty ones; RateSlot claims one), or None."""

    def create(self, key: ApiKey, max_keys: Optional[int]) -> None:
        """Store a key (not revoked, never used, an empty write log) and count it in the
        workspace's `key_count`, atomically; KeyCapReached if `max_keys` active keys
        exist already or the workspace does not."""

    def revoke(self, key_id: str, now_ms: int) -> Optional[ApiKey]:
        """Mark revoked and free its place in the count (once); the key, or None if unknown."""

    def list_for_workspace(self, workspace_id: str) -> list[ApiKey]:
        """Every key of a workspace (revoked too), newest first."""


class DocumentFields(TypedDict, total=False):
    """What `DocumentRepository.update_fields` (and the `changes` of append_version) may
    change on a document; `share_expires_ms` None clears the expiry."""
    title: str
    description: str
    share_enabled: bool
    share_expires_ms: Optional[int]
    latest_content: Optional[str]
    share_access: str
    share_recipients: tuple[str, ...]


class DocumentRepository(Protocol):
    """Documents, their versions, share links and idempotency records."""

    def get(self, document_id: str) -> Optional[Document]:
        """The document (a `deleting` one too), or None."""

    def get_with_key(self, key_id: str, document_id: Optional[str] = None,
                     idempotency_digest: Optional[str] = None
                     ) -> tuple[Optional[ApiKey], Optional[Document], Optional[StoredIdempotency]]:
        """(the API key as `ApiKeyRepository.get` reads it, document, idempotency record) in one read."""

    def get_many(self, document_ids: Iterable[str]) -> dict[str, Document]:
        """The documents (`deleting` ones too) among `document_ids`, by id, in
        one read (at most 100 ids: the dashboard asks for one page's documents)."""

    def get_with_versions(self, document_id: str) -> tuple[Optional[Document], list[Version]]:
        """The document and its versions, oldest first."""

    def get_version(self, document_id: str, number: int) -> Optional[Version]: ...

    def get_share(self, share_id: str) -> Optional[ShareLink]:
        """The live share link `share_id`, or None."""

    def get_for_share(self, share_id: str, version_number: Optional[int] = None, consistent: bool = True
                      ) -> tuple[Optional[ShareLink], Optional[Document], Optional[Workspace], Optional[Version]]:
        """(share link, document, workspace, version N or None). `consistent=False`
        allows a read that may lag a just-committed write by a moment (cheaper)."""

    def list_page(self, workspace_id: str, limit: int, cursor: Optional[str]
                  ) -> tuple[list[DocumentListing], Optional[str]]:
        """Live documents, most recently updated first, as listings (LISTING below: a
        store may read them from where it keeps no more); `get` the document for
        anything else. The cursor is opaque and bound to the workspace (BadCursor
        otherwise). None: no more pages."""

    def list_all(self, workspace_id: str) -> list[DocumentListing]:
        """Every live document, most recently updated first, as listings (list_page)."""

    def get_idempotency(self, key_id: str, key_digest: str) -> Optional[StoredIdempotency]:
        """The answer stored for (key, Idempotency-Key digest), or None."""

    def create(self, doc: Document, version: Version, max_documents: int, uncapped_plans: Iterable[str],
               slot: Optional[RateSlot], idem: Optional[IdempotencyRecord], quota: Optional[Quota] = None,
               activity: Optional[ActivityEntry] = None, event: Optional[Event] = None) -> None:
        """Document + version 1 + share link + guards (+ the activity log's entry and the webhook
        outbox's `event`), atomically, counted in the
        workspace's `document_count` (DocumentCapReached at `max_documents` unless the
        plan, as stored at commit, is uncapped). GuardFailed("rate"|"idem"); QuotaReached."""

    def append_version(self, doc: Document, version: Version, changes: DocumentFields,
                       slot: Optional[RateSlot], idem: Optional[IdempotencyRecord],
                       quota: Optional[Quota] = None, activity: Optional[ActivityEntry] = None,
                       event: Optional[Event] = None, resolves: Optional[Resolution] = None) -> None:
        """Version N+1 only if the document still has `doc.version_count` = N versions
        and is not being deleted (StaleDocument otherwise), with `changes` to its fields
        and the guards (and the quota: QuotaReached), atomically. `resolves`: an accepted
        suggestion, resolved in the same step (`resolved_in_version` N+1, the document's
        open count one less, its event logged) only if it is still open: FeedbackGone
        otherwise, and nothing is written."""

    def delete_version(self, doc: Document, version: Version) -> None:
        """Remove one version that is not the latest, atomically with the document's
        `versions_deleted` (+1) and the workspace's usage (its bytes and one version
        less). StaleDocument if the document is gone, being deleted, or the version is
        its latest or no longer there."""

    def update_fields(self, doc: Document, fields: DocumentFields,
                      activity: Optional[ActivityEntry] = None) -> Document:
        """Change metadata (no version); StaleDocument if gone or being deleted. The
        document as changed."""

    def set_passphrase(self, doc: Document, passphrase_hash: Optional[str]) -> Document:
        """Store (None: remove) the passphrase hash and bump `passphrase_epoch`."""

    def rotate_share(self, doc: Document, new_share_id: str) -> None:
        """Atomically: the document's `share_id` becomes `new_share_id`, a share link for it
        exists and the old one is gone. StaleDocument if the document's share id is no
        longer `doc.share_id`, or it is gone or being deleted."""

    def begin_delete(self, doc: Document, activity: Optional[ActivityEntry] = None,
                     event: Optional[Event] = None) -> None:
        """Mark `deleting` (hidden from lists and share links), drop the share link and
        free the place in `document_count`, atomically; StaleDocument if already marked."""

    def purge(self, document_id: str) -> None:
        """Remove the document's versions, then the document itself (last, so an
        interrupted purge can be found and finished). Safe to repeat."""

    def recount_files(self, workspace_id: str) -> FileRecount:
        """Count the workspace's bundle files again from its live versions (each distinct
        file once, with the number of versions referring to it) and set its file counts
        and storage usage to match: files stored before the storage quota counted them
        (issue 24) are counted, and a count that drifted is corrected. Idempotent;
        refused (Unavailable) if other writes keep moving the counts meanwhile."""


class FeedbackRepository(Protocol):
    """Feedback, its replies, and the event log: every change that reports an `Event`
    appends it in the same atomic step, so a waiting list and the webhook outbox never
    miss one."""

    def get(self, feedback_id: str) -> Optional[Feedback]: ...

    def get_many(self, feedback_ids: list[str]) -> list[Feedback]:
        """The feedback that exists among `feedback_ids` (any order)."""

    def create(self, feedback: Feedback, rate: Optional[RateClaim], event: Optional[Event] = None) -> None:
        """Store feedback, +1 the document's `open_feedback_count`, set its
        `feedback_activity_ms`, claim the rate log and append the event, atomically.
        StaleDocument, GuardFailed("rate")."""

    def add_reply(self, feedback: Feedback, reply: Reply, max_replies: int, reopen: bool,
                  rate: Optional[RateClaim], event: Optional[Event] = None) -> bool:
        """Store a reply, +1 the thread's `reply_count` (ReplyCapReached at `max_replies`),
        with `reopen` a resolved thread opens again (counted open on its document), the
        document's `feedback_activity_ms`, the rate claim and the event, atomically.
        FeedbackGone if the feedback or its document is gone. True if reopened."""

    def replies(self, feedback_ids: list[str]) -> dict[str, list[Reply]]:
        """Every reply of each thread, oldest first (an entry for every id asked)."""

    def set_status(self, feedback: Feedback, resolved: bool, now_ms: int, event: Optional[Event] = None) -> None:
        """open -> resolved (count - 1) or back (count + 1), only from the expected
        state, with the event; FeedbackGone otherwise."""

    def page(self, workspace_id: str, document_id: Optional[str], status: Optional[str], limit: int,
             cursor: Optional[str]) -> tuple[list[Feedback], Optional[str]]:
        """Newest first, of a workspace (or one document), optionally one status; BadCursor."""

    def delete_for_document(self, document_id: str) -> int: ...

    def activity_head(self, workspace_id: str, now_ms: int) -> str:
        """An opaque position in the workspace's event log: everything committed so far is before it."""

    def activity_since(self, workspace_id: str, document_id: Optional[str], position: str, now_ms: int,
                       limit: int) -> tuple[list[Event], str]:
        """Waking events (new feedback, viewer replies) after `position`, oldest first, at
        most `limit`, optionally of one document, each exactly once across successive
        calls, and the position after them. One storage read. BadCursor for a position
        this adapter never made."""


class RateLimitRepository(Protocol):
    """Sliding logs of standalone limits (per IP, per account, per workspace)."""

    def get(self, scope: str) -> Optional[RateLog]: ...

    def get_many(self, scopes: list[str]) -> list[Optional[RateLog]]:
        """`get` of each scope, in order, in one read (the shards of a sharded log)."""

    def claim(self, scope: str, expected_seq: int, new_log: list[int], expires_at: int) -> bool:
        """Write the new log only if its seq is still `expected_seq`; False if it moved."""


class UserRepository(Protocol):
    def get(self, email_lower: str) -> Optional[User]: ...

    def create(self, user: User) -> None:
        """UserExists if the email is taken."""

    def delete(self, email_lower: str) -> None: ...

    def set_password(self, email_lower: str, expected_hash: str, new_hash: str, now_ms: int) -> bool:
        """Replace the hash only if it is still `expected_hash`."""

    def set_fields(self, email_lower: str, fields: UserFields) -> bool:
        """Set `email_verified_ms` and/or `workspace_id` (default workspace); False if unknown."""


class UserFields(TypedDict, total=False):
    """What `UserRepository.set_fields` may change."""
    email_verified_ms: int
    workspace_id: str


class SessionRepository(Protocol):
    """Dashboard sessions by the SHA-256 of the session id. `expires_ms` is checked
    by the service on every read."""

    def get(self, session_hash: str) -> Optional[DashboardSession]: ...

    def create(self, session: DashboardSession) -> None: ...

    def delete(self, session_hash: str) -> None: ...

    def delete_for_user(self, email_lower: str, keep: Optional[str] = None) -> int:
        """End every session of a person (but `keep`, a session hash); how many ended."""

    def set_workspace(self, session_hash: str, workspace_id: str) -> bool:
        """Point a session at another workspace; False if the session is gone."""


BLOB_ROOT = "documents/"


def version_key(workspace_id: str, document_id: str, version_id: str) -> str:
    """Where a version's HTML lives, in every blob store."""
    return f"{BLOB_ROOT}{workspace_id}/{document_id}/{version_id}.html"


def document_prefix(workspace_id: str, document_id: str) -> str:
    return f"{BLOB_ROOT}{workspace_id}/{document_id}/"


def source_key(workspace_id: str, document_id: str, version_id: str) -> str:
    """Where a Markdown version keeps its source (the rendered page is at version_key)."""
    return f"{BLOB_ROOT}{workspace_id}/{document_id}/{version_id}.md"


FILE_ROOT = "files/"

# What a document listing holds (DocumentRepository.list_page/list_all: the fields of
# records.DocumentListing): what the listing's answer (services/documents.summary_model),
# "find", the most-viewed ranking and the file sweep read. The index behind listings
# carries exactly these.
LISTING = tuple(sorted(f.name for f in dataclasses.fields(DocumentListing)))


def file_prefix(workspace_id: str) -> str:
    return f"{FILE_ROOT}{workspace_id}/"


def file_key(workspace_id: str, sha256_hex: str) -> str:
    """A bundle file, stored once per workspace by the SHA-256 of its bytes: a file
    unchanged across versions (or documents) is one object."""
    return f"{FILE_ROOT}{workspace_id}/{sha256_hex}"


class BlobStore(Protocol):
    """Version HTML, one immutable object per version, under keys
    `documents/<workspace>/<document>/<version>.html`."""

    def put_html(self, key: str, data: bytes, sha256_b64: Optional[str] = None) -> None:
        """Durable before it returns (written before the metadata that refers to it)."""

    def get_html(self, key: str) -> bytes:
        """BlobNotFound if missing."""

    def read_stream(self, key: str, chunk_bytes: int = 1 << 20) -> Iterator[bytes]:
        """The object's bytes, `chunk_bytes` at a time (never whole in memory: a workspace
        export's zip served by the local server). BlobNotFound if missing, before any chunk."""

    def delete(self, key: str) -> None: ...

    def put_file(self, key: str, data: bytes) -> None:
        """A bundle file (any bytes), durable before it returns, like put_html."""

    def put_stream(self, key: str, chunks: Iterable[bytes]) -> None:
        """`put_file` of the chunks' bytes, taken one chunk at a time (the object is never
        whole in memory); if the iterator raises, nothing is stored and it propagates."""

    def touch(self, key: str) -> bool:
        """Mark an existing object as just used (its last-modified time becomes now), so a
        sweep's grace period protects it while a write that reuses it commits; False if
        there is no such object."""

    def upload_url(self, key: str, size_bytes: int, expires_seconds: int) -> Optional[str]:
        """A URL that accepts one PUT of exactly `size_bytes` bytes to `key` without other
        credentials (a presigned S3 URL), or None when the store has none (the local
        server then receives the bytes itself)."""

    def download_url(self, key: str, content_type: str, expires_seconds: int,
                     filename: Optional[str] = None) -> Optional[str]:
        """A short-lived URL that serves the object directly (a presigned S3 GET), typed
        `content_type` and, with `filename`, as an attachment of that name; for objects too
        large for a Lambda response. None when the store has none (the server answers
        any size itself). No storage call: the object need not exist yet."""

    def list_keys(self, prefix: str) -> list[tuple[str, float]]:
        """(key, last-modified epoch seconds) of every object under prefix."""

    def iter_keys(self, prefix: str) -> Iterator[tuple[str, float]]:
        """The same, streamed (constant memory for any number of objects); the keys
        of one folder (a document's versions) come one after another."""

    def delete_prefix(self, prefix: str) -> int: ...


class StorageHealth(Protocol):
    def check(self) -> None:
        """Raise if storage is not reachable."""


@dataclass
class Repositories:
    """One of each: what a Context is built from."""
    workspaces: WorkspaceRepository
    keys: ApiKeyRepository
    documents: DocumentRepository
    feedback: FeedbackRepository
    rates: RateLimitRepository
    users: UserRepository
    sessions: SessionRepository
    blobs: BlobStore
    health: StorageHealth
    views: ViewCounterRepository
    kind: str = ""
    oauth: Optional[OAuthRepository] = None  # chalicelib/ports/oauth.py (clients, codes, grants, tokens)
    # Pending CDN invalidations (chalicelib/ports/cdn.py PendingInvalidationRepository).
    cdn_pending: Optional[object] = None
    # Webhooks, the outbox and deliveries (chalicelib/ports/webhooks.py WebhookRepository).
    webhooks: Optional[WebhookRepository] = None
    # Members, one-time account tokens, activity (chalicelib/ports/people.py PeopleRepository).
    people: Optional[object] = None
    # Reviews and the documents' review state (chalicelib/ports/reviews.py ReviewRepository).
    reviews: Optional[object] = None
    # Capped, expiring places: waiting requests, pending uploads (chalicelib/ports/leases.py).
    leases: Optional[object] = None
    # Workspace exports, one running per workspace (chalicelib/ports/exports.py).
    exports: Optional[object] = None
    # Recipients of `recipients` links, their email codes, the audience by email (ports/recipients.py).
    recipients: Optional[object] = None
    # Every key that signed versions (chalicelib/ports/signing.py SigningKeyRepository).
    signing_keys: Optional[object] = None


class _BuiltOnFirstRead:
    """A field of `LazyRepositories`: the adapter's factory runs on the first read and its
    repository is kept on the instance (a non-data descriptor, as functools.cached_property:
    a value set on the instance, by `dataclasses.replace` or a test, wins)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if instance is None:
            return self
        built = instance.factories[self.name]()
        instance.__dict__[self.name] = built  # a race builds it twice; both are the same stateless view
        return built


class LazyRepositories(Repositories):
    """`Repositories` whose every repository is built when it is first read, so a process
    imports only the adapter modules (and records) of what it serves: the share function's
    first view builds its documents, blobs and views, never OAuth, webhooks or exports
    (bench/cold_start.py, tests/http/test_cold_start.py)."""

    factories: Mapping[str, Callable[[], Any]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # dataclasses.replace: every field given
        super().__init__(*args, **kwargs)
        self.factories = {}


for _field in dataclasses.fields(Repositories):
    if _field.name != "kind":
        setattr(LazyRepositories, _field.name, _BuiltOnFirstRead())
        getattr(LazyRepositories, _field.name).__set_name__(LazyRepositories, _field.name)


def lazy_repositories(kind: str, factories: Mapping[str, Callable[[], Any]]) -> Repositories:
    """Repositories of `kind` built on first read from `factories` (one per field but `kind`)."""
    missing = {f.name for f in dataclasses.fields(Repositories)} - {"kind"} - set(factories)
    if missing:
        raise ValueError(f"no factory for {sorted(missing)}")
    repos = LazyRepositories.__new__(LazyRepositories)
    repos.kind = kind
    repos.factories = dict(factories)
    return repos

