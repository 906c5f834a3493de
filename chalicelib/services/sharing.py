"""Share links: what a viewer may see at `/d/<share_id>`, and passphrase protection.

A share id resolves to its document and workspace (a GetItem of the share item,
then one BatchGetItem). A protected document (Pro) shows nothing until the viewer
unlocks it: the right passphrase earns a signed cookie bound to that document
and to its `passphrase_epoch`, which every passphrase change bumps, so changing
or removing the passphrase invalidates every cookie issued before.

Unlock attempts are rate-limited per client IP per document with a sliding log
(every attempt counts, right or wrong, and a refused attempt is not checked).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from chalicelib.ports.records import Document, ShareLink, Version, Workspace
from chalicelib import config
from chalicelib.domain import limits, links, plans
from chalicelib.errors import FeatureNotInPlan, Gone, NotFound, RateLimited, Unauthorized, ValidationFailed
from chalicelib.ports import BlobNotFound, StaleDocument, version_key
from chalicelib.services import access, audience, ratelimits
from chalicelib.services.context import Context, new_share_id
from chalicelib.services.access import Actor, Who, requires
from chalicelib.services.flights import SingleFlight

MIN_PASSPHRASE, MAX_PASSPHRASE = limits.PASSPHRASE_CHARS
UNLOCK_MAX_AGE_SECONDS = 7 * 24 * 3600
UNLOCK_COOKIE = "dp_unlock"
# Lambda answers at most 6 MB, binary as base64 (x4/3): larger bundle files are served by
# storage itself through a short-lived presigned URL (deployed); locally, here.
FILE_REDIRECT_SECONDS = 60
# Workspace-only links (contract 7d): a signed pass naming the member, for one link
# (Path=/d/<share>), issued by the dashboard to a signed-in member; membership is
# checked again on every request, so a removed member's pass stops working at once.
MEMBER_COOKIE = "dp_member"
MEMBER_SALT = "docpub.share.member"
MEMBER_PASS_SECONDS = 12 * 3600
ROTATE_ATTEMPTS = 5  # each lost race means another rotation committed; give up (429) after this many
_SHARE_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_VERSION_ID = re.compile(r"^v_[A-Za-z0-9_-]{1,60}$")
# Preview cards being drawn in this process, by object key (issue 33).
CARD_FLIGHTS: SingleFlight[bytes] = SingleFlight()

if TYPE_CHECKING:
    from chalicelib.models import ShareRotated
    from argon2 import PasswordHasher
    from itsdangerous import URLSafeSerializer


class Locked(Unauthorized):
    """The document is passphrase-protected and the viewer has not unlocked it."""


class WrongPassphrase(Unauthorized):
    pass


class MembersOnly(Locked):
    """A workspace-only link opened by someone not signed in as a member."""


class RecipientsOnly(Locked):
    """A `recipients` link opened without a recipient's pass or a member's (contract 7f)."""

    def __init__(self, message: str, presented: Optional[str] = None):
        super().__init__(message)
        self.presented = presented  # the address a signed pass named, no longer admitted


@dataclass(frozen=True)
class ViewerCookies:
    """What a share-link viewer presents: the unlock cookie, the member pass and the
    recipient pass (contract 7f)."""
    unlock: Optional[str] = None
    member: Optional[str] = None
    recipient: Optional[str] = None

    @staticmethod
    def of(value: "Union[str, ViewerCookies, None]") -> "ViewerCookies":
        return value if isinstance(value, ViewerCookies) else ViewerCookies(unlock=value)


# What storage says about a share link (DocumentRepository.get_for_share): the link,
# its document, the document's workspace and the version asked for.
ShareLookup = tuple[Optional[ShareLink], Optional[Document], Optional[Workspace], Optional[Version]]


# What a viewer presents to the share service: both cookies, or the unlock cookie alone.
Viewer = Union[str, ViewerCookies, None]


def members_only(doc: Document) -> bool:
    return doc.share_access == "workspace"


def protected(doc: Document) -> bool:
    """Not for every viewer alike (a passphrase, members only, recipients): never in a shared cache."""
    return bool(doc.passphrase_hash) or doc.share_access in ("workspace", "recipients")


RECIPIENTS_ONLY = "This document is shared with some people only."


@dataclass(frozen=True)
class Branding:
    plan: str
    brand_name: Optional[str] = None
    brand_tagline: Optional[str] = None

    @staticmethod
    def of(workspace: Optional[Workspace]) -> "Branding":
        """The branding of a link's workspace (free, unbranded if it is gone)."""
        if workspace is None:
            return Branding("free")
        return Branding(workspace.plan, workspace.brand_name, workspace.brand_tagline)

    @property
    def docpub_mark(self) -> bool:
        """Free workspaces show "Published with Docpub" around the document."""
        return not plans.custom_branding(self.plan)

    @property
    def card_name(self) -> str:
        """The name on the link-preview card: the Pro brand, else Docpub."""
        return "Docpub" if self.docpub_mark or not self.brand_name else self.brand_name


@dataclass(frozen=True)
class Access:
    """A viewer's verified access to one version of a shared document."""
    share_id: str
    doc: Document
    workspace: Optional[Workspace]
    version_id: str
    version_number: int
    cache_seconds: int = links.EDGE_TTL_SECONDS
    has_files: bool = False
    recipient: Optional[str] = None  # the verified recipient viewing it (7f), else None

    @property
    def protected(self) -> bool:
        """Not for every viewer alike (passphrase, members only, recipients): never in a shared cache."""
        return protected(self.doc)


@dataclass(frozen=True)
class SharePage:
    """What the wrapper page at /d/<share_id> shows. When `locked`, nothing of the
    document is filled in (not even its title)."""
    share_id: str
    locked: bool
    protected: bool
    members_only: bool = False  # locked because the link is for signed-in members only
    recipients_only: bool = False  # locked until an emailed code (or a member's pass): 7f
    title: Optional[str] = None
    version_id: Optional[str] = None
    version_number: Optional[int] = None
    version_count: Optional[int] = None
    latest: bool = True
    branding: Optional[Branding] = None
    # For a protected document served from a separate content origin (which never
    # sees the unlock cookie): a short-lived grant the frame's URL carries.
    content_token: Optional[str] = None
    cache_seconds: int = links.EDGE_TTL_SECONDS  # how long a shared cache may keep this page
    # The version has files: the frame opens it as <content>/index.html so relative
    # references resolve inside the version (img/chart.png → <content>/img/chart.png).
    has_files: bool = False
    description: str = ""


@dataclass(frozen=True)
class LivePage:
    """What an open share page polls for: the latest version, the last comment activity."""
    version_number: int
    version_id: str
    activity_ms: int
    protected: bool
    cache_seconds: int


@dataclass(frozen=True)
class ContentRef:
    """A version's immutable content, verified readable by this viewer."""
    doc: Document
    version_id: str
    protected: bool
    cache_seconds: int = links.EDGE_TTL_SECONDS


@dataclass(frozen=True)
class FileRef:
    """A bundle file of a version the viewer may read."""
    content: ContentRef
    path: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class Unlocked:
    cookie_name: str
    cookie_value: str
    max_age: int
    path: str


def refuse_weak_passphrase(passphrase: str) -> None:
    """422 naming `passphrase` and why, for a passphrase a guesser would try early
    (`password1`, `aaaaaaaa`): unlock limits slow guessing, they cannot stop it.
    The same rule as account passwords (domain/strength.py)."""
    from chalicelib.domain import strength  # owners setting a passphrase only

    reason = strength.weakness(passphrase)
    if reason:
        raise ValidationFailed.field("passphrase", f"is too easy to guess: {reason}")


def failure_scope(doc: Document) -> str:
    """The document's failed-unlock budget. Keyed by the passphrase's epoch and the
    share identifier as well, so setting a new passphrase or rotating the link
    starts a fresh budget (a stranger's guessing cannot outlast either)."""
    return ratelimits.scope_key("unlock-failures", doc.document_id, str(doc.passphrase_epoch),
                                doc.share_id or "")


@dataclass(frozen=True)
class FailedUnlocks:
    count: int
    last_ms: Optional[int]
    window_seconds: int
    budget: int

    @property
    def exhausted(self) -> bool:
        return self.count >= self.budget


def share_path(share_id: str) -> str:
    return f"/d/{share_id}"


def _hasher() -> PasswordHasher:
    # lazy: only passphrase code paths pay for argon2. The accounts' parameters (argon2id,
    # RFC 9106 low-memory: t=3, m=64 MiB, p=4 unless DOCPUB_ARGON2_* say otherwise).
    from chalicelib.services.accounts import password_hasher

    return password_hasher()


UNLOCK_SALT = "docpub-share-unlock"
CONTENT_SALT = "docpub-share-content"
# A content grant (`?t=` on the separate content origin) opens one version, for
# one purpose (framing it), for a few minutes: a URL leaks (history, logs, a
# copied link) more easily than a cookie.
CONTENT_TOKEN_SECONDS = 300


def _serializer(salt: str = UNLOCK_SALT) -> URLSafeSerializer:
    from itsdangerous import URLSafeSerializer

    return URLSafeSerializer(config.secret_key(), salt=salt)


class ShareService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    # ---------------------------------------------------------------- resolve

    def lookup(self, share_id: str, version_number: Optional[int] = None, consistent: bool = True) -> ShareLookup:
        """What storage says about a link (share, document, workspace, version N);
        `access(..., looked_up=...)` judges it. The view beacon caches this briefly."""
        if not share_id or not _SHARE_ID.match(share_id):
            raise NotFound("No such link.")
        return self.ctx.documents.get_for_share(share_id, version_number, consistent=consistent)

    def _resolve(self, share_id: str, version_number: Optional[int] = None, looked_up: Optional[ShareLookup] = None
                 ) -> tuple[Document, Optional[Workspace], Optional[Version]]:
        share, doc, workspace, version = looked_up or self.lookup(share_id, version_number)
        if (share is None or doc is None or doc.deleting or doc.share_id != share_id
                or not links.enabled(doc)):
            raise NotFound("No such link.")  # unknown, deleted, rotated away or disabled
        if links.expired(doc, self.ctx.now_ms()):
            raise Gone("This link has expired.")
        return doc, workspace, version

    def access_settings(self, share_id: str) -> Document:
        """The live link's document (NotFound, Gone), before any viewer check: the email step
        of a `recipients` link asks who the viewer is."""
        return self._resolve(share_id)[0]

    def cache_seconds(self, doc: Document) -> int:
        """How long a shared cache may keep a public answer of this link (<= 60 s, never past expiry)."""
        return links.cache_seconds(doc, self.ctx.now_ms())

    def access(self, share_id: str, unlock_cookie: Viewer = None,
               version_number: Optional[int] = None, looked_up: Optional[ShareLookup] = None) -> Access:
        """Resolve a link to a version the viewer may see. Raises NotFound (unknown,
        deleted, no such version), MembersOnly (a workspace link, not a member's pass)
        or Locked (protected and not unlocked). A member needs no passphrase. `looked_up`:
        what `lookup` returned a moment ago (else storage is read now)."""
        if version_number is not None and version_number < 1:
            raise NotFound("No such version.")
        cookies = ViewerCookies.of(unlock_cookie)
        doc, workspace, version = self._resolve(share_id, version_number, looked_up)
        recipient = None
        if members_only(doc):
            if not self.member_pass_valid(doc, cookies.member):
                raise MembersOnly("This document is shared with the members of its workspace only.")
        elif audience.for_recipients(doc):
            recipient = self.recipient_admitted(doc, cookies)
        elif doc.passphrase_hash and not self.cookie_unlocks(doc, cookies.unlock):
            raise Locked("This document is protected by a passphrase.")
        ttl = self.cache_seconds(doc)
        if version_number is None:
            return Access(share_id, doc, workspace, doc.latest_version_id, doc.version_count, ttl,
                          "files" in (doc.latest_content or ""), recipient)
        if version is None:
            raise NotFound("No such version.")
        return Access(share_id, doc, workspace, version.version_id, version.number, ttl,
                      bool(version.files), recipient)

    def recipient_admitted(self, doc: Document, cookies: ViewerCookies) -> Optional[str]:
        """A `recipients` link: the verified recipient this viewer is (None for a member with
        a pass); RecipientsOnly for anyone else, naming the address a stale pass presented."""
        email = audience.email_of_pass(self.ctx, doc, cookies.recipient)
        if email is not None and audience.admitted(self.ctx, doc, email):
            return email
        if self.member_pass_valid(doc, cookies.member):
            return None
        raise RecipientsOnly(RECIPIENTS_ONLY, email)

    def page(self, share_id: str, version_number: Optional[int] = None,
             unlock_cookie: Viewer = None, looked_up: Optional[ShareLookup] = None) -> SharePage:
        try:
            access = self.access(share_id, unlock_cookie, version_number, looked_up)
        except MembersOnly:
            return SharePage(share_id=share_id, locked=True, protected=True, members_only=True)
        except RecipientsOnly:
            return SharePage(share_id=share_id, locked=True, protected=True, recipients_only=True)
        except Locked:
            return SharePage(share_id=share_id, locked=True, protected=True)
        if access.recipient is not None:
            # One opening of the page counted per request; a revocation that came first wins.
            self.ctx.recipients.record_open(access.doc.document_id, access.doc.workspace_id, access.recipient,
                                            self.ctx.now_ms())
        return SharePage(
            share_id=share_id, locked=False, protected=access.protected, title=access.doc.title,
            version_id=access.version_id, version_number=access.version_number,
            version_count=access.doc.version_count, latest=version_number is None,
            branding=Branding.of(access.workspace),
            content_token=(self._grant(access.doc, CONTENT_SALT, access.version_id) if access.protected
                           else None),
            cache_seconds=access.cache_seconds, has_files=access.has_files,
            description=access.doc.description or "")

    def card(self, share_id: str) -> tuple[str, bytes, int]:
        """(ETag, PNG, cache seconds) of the link's preview card: its title and the
        workspace's brand. Nothing for a protected, disabled, expired or unknown link
        (NotFound). Drawn once per title and brand, then read from storage; concurrent
        requests for a card not stored yet wait for the one drawing it (CARD_FLIGHTS)."""
        from chalicelib.domain import cards
        from chalicelib.ports import document_prefix

        doc, workspace, _ = self._resolve(share_id)
        if protected(doc):
            raise NotFound("No such link.")
        name = Branding.of(workspace).card_name
        key = cards.card_key(doc.title, name)
        object_key = f"{document_prefix(doc.workspace_id, doc.document_id)}card-{key}.png"
        try:
            data = self.ctx.blobs.get_html(object_key)
        except BlobNotFound:
            data = CARD_FLIGHTS.run(object_key, lambda: self._draw_card(object_key, doc.title, name))
        return key, data, self.cache_seconds(doc)

    def _draw_card(self, object_key: str, title: str, brand: str) -> bytes:
        """Draw and store a card, once per process at a time (CARD_FLIGHTS): a request that
        found nothing stored while another was drawing reads what that one stored."""
        from chalicelib.domain import cards

        try:
            return bytes(self.ctx.blobs.get_html(object_key))
        except BlobNotFound:
            data = cards.render_card(title, brand)
            self.ctx.blobs.put_file(object_key, data)
            return data

    def download(self, share_id: str, version_number: Optional[int] = None,
                 unlock_cookie: Viewer = None) -> Any:
        """`?download=1`: the version as a file, under the same access rules as viewing."""
        from chalicelib.services import downloads

        access = self.access(share_id, unlock_cookie, version_number)
        doc = access.doc
        # The latest version of a plain HTML page needs no read: its document says enough
        # (the page's blob is where every version's is; no source, no files).
        version = Version(
            version_id=access.version_id, number=access.version_number, created_ms=doc.updated_ms,
            size_bytes=doc.latest_size, blob_key=version_key(doc.workspace_id, doc.document_id, access.version_id))
        if access.has_files or version_number is not None or doc.latest_content:
            version = self.ctx.documents.get_version(doc.document_id, access.version_number) or version
        try:
            return downloads.package(self.ctx, access.doc, version)
        except BlobNotFound as exc:
            raise NotFound("No such version.") from exc

    def live(self, share_id: str, unlock_cookie: Viewer = None) -> LivePage:
        """The latest version and feedback activity of a link (the same checks as the page:
        NotFound, Gone, Locked); counts no view."""
        found = self.access(share_id, unlock_cookie)
        doc = found.doc
        return LivePage(doc.version_count, doc.latest_version_id, int(doc.feedback_activity_ms or 0),
                        found.protected, found.cache_seconds)

    def open_content(self, share_id: str, version_id: str, unlock_cookie: Viewer = None,
                     content_token: Optional[str] = None) -> ContentRef:
        """Check (DynamoDB only) that this viewer may read `version_id` of the link's
        document; the entrypoint can answer a conditional GET from this alone."""
        if not version_id or not _VERSION_ID.match(version_id):
            raise NotFound("No such version.")
        doc, _workspace, _ = self._resolve(share_id)
        cookies = ViewerCookies.of(unlock_cookie)
        token_ok = self._grant_valid(doc, content_token, CONTENT_SALT, CONTENT_TOKEN_SECONDS, version_id)
        if members_only(doc):
            if not (self.member_pass_valid(doc, cookies.member) or token_ok):
                raise MembersOnly("This document is shared with the members of its workspace only.")
        elif audience.for_recipients(doc):
            if not token_ok:
                self.recipient_admitted(doc, cookies)
        elif doc.passphrase_hash and not (self.cookie_unlocks(doc, cookies.unlock) or token_ok):
            raise Locked("This document is protected by a passphrase.")
        return ContentRef(doc, version_id, protected(doc), self.cache_seconds(doc))

    def open_file(self, ref: ContentRef, path: str) -> "FileRef":
        """A bundle file of the version `ref` opened (its access already checked)."""
        _, versions = self.ctx.documents.get_with_versions(ref.doc.document_id)
        version = next((v for v in versions if v.version_id == ref.version_id), None)
        entry = next((f for f in (version.files if version else ()) if f["path"] == path), None)
        if entry is None:
            raise NotFound("No such file in this document.")
        return FileRef(ref, path, entry["sha256"], entry["size_bytes"])

    def file_redirect(self, ref: "FileRef", content_type: str) -> Optional[str]:
        """For a file too large for a Lambda response (6 MB, base64 for binary): a short-lived
        URL to storage itself (a presigned S3 GET, 60 s), or None (serve it here)."""
        from chalicelib.ports import file_key

        if ref.size_bytes <= limits.INLINE_RESPONSE_BYTES:
            return None
        return self.ctx.blobs.download_url(file_key(ref.content.doc.workspace_id, ref.sha256), content_type,
                                           FILE_REDIRECT_SECONDS)

    def read_file(self, ref: "FileRef") -> bytes:
        from chalicelib.services import content

        try:
            return content.read_file(self.ctx, ref.content.doc.workspace_id, ref.sha256)
        except BlobNotFound as exc:
            raise NotFound("No such file in this document.") from exc

    def read_content(self, ref: ContentRef) -> bytes:
        try:
            return self.ctx.blobs.get_html(version_key(ref.doc.workspace_id, ref.doc.document_id,
                                                       ref.version_id))
        except BlobNotFound as exc:
            raise NotFound("No such version.") from exc

    # ---------------------------------------------------------------- unlock

    def cookie_unlocks(self, doc: Document, cookie: Optional[str]) -> bool:
        return self._grant_valid(doc, cookie, UNLOCK_SALT, UNLOCK_MAX_AGE_SECONDS)

    # ---------------------------------------------------------------- member passes

    def member_pass(self, share_id: str, who: Actor) -> tuple[str, int, str]:
        """(cookie value, max age, path) letting the member `who` (a dashboard Actor)
        open a workspace-only link of their workspace; NotFound for anything else."""
        from chalicelib.services import members

        doc, _workspace, _ = self._resolve(share_id)
        if not (who.member and members.role_in(self.ctx, doc.workspace_id, who.member)):
            raise NotFound("This document is shared with the members of its workspace only, "
                           "and you are not one of them.")
        value = _serializer(MEMBER_SALT).dumps({"d": doc.document_id, "m": who.member,
                                                "t": self.ctx.now_ms() // 1000})
        return value, MEMBER_PASS_SECONDS, share_path(share_id)

    def member_pass_valid(self, doc: Document, value: Optional[str]) -> bool:
        return self.member_of_pass(doc, value) is not None

    def member_of_pass(self, doc: Document, value: Optional[str]) -> Optional[tuple[str, str]]:
        """(email, current role) of the member a valid pass for `doc` names, else None."""
        if not value or len(value) > 1000:
            return None
        from itsdangerous import BadSignature

        from chalicelib.services import members

        try:
            data = _serializer(MEMBER_SALT).loads(value)
        except BadSignature:
            return None
        if not isinstance(data, dict) or data.get("d") != doc.document_id or not isinstance(data.get("t"), int):
            return None
        if not 0 <= self.ctx.now_ms() // 1000 - data["t"] < MEMBER_PASS_SECONDS:
            return None
        email = data.get("m")
        role = members.role_in(self.ctx, doc.workspace_id, email)
        return (email, role) if isinstance(email, str) and role is not None else None

    def _grant(self, doc: Document, salt: str, version_id: Optional[str] = None) -> str:
        """A signed grant for this document and passphrase epoch, issued now (and
        for one version only, when `version_id` is given). The salt is its purpose."""
        grant = {"d": doc.document_id, "e": doc.passphrase_epoch, "t": self.ctx.now_ms() // 1000}
        if version_id is not None:
            grant["v"] = version_id
        return _serializer(salt).dumps(grant)

    def _grant_valid(self, doc: Document, value: Optional[str], salt: str, max_age: int,
                     version_id: Optional[str] = None) -> bool:
        if not value:
            return False
        from itsdangerous import BadSignature

        try:
            data = _serializer(salt).loads(value)
        except BadSignature:
            return False
        if not isinstance(data, dict):
            return False
        issued = data.get("t")
        return (data.get("d") == doc.document_id
                and data.get("e") == doc.passphrase_epoch
                and (version_id is None or data.get("v") == version_id)
                and isinstance(issued, int)
                and 0 <= self.ctx.now_ms() // 1000 - issued < max_age)

    def unlock(self, share_id: str, passphrase: str, client_ip: str,
               unlock_cookie: Optional[str] = None) -> Unlocked:
        """Right passphrase → a cookie for this document only; wrong → WrongPassphrase;
        over the per-IP limit → RateLimited (the passphrase is then not even checked).
        A viewer who already holds a valid cookie is never refused: the cookie is renewed."""
        doc, _workspace, _ = self._resolve(share_id)
        if not doc.passphrase_hash or self.cookie_unlocks(doc, unlock_cookie):
            return self._cookie(doc)  # nothing to unlock (public link, or unlocked already)
        # Guessing from many addresses: a budget of failures per document for everyone.
        budget = failure_scope(doc)
        ratelimits.check(self.ctx, budget, limits.unlock_failure_rate(),
                         "Too many wrong passphrases were tried for this document")
        self._consume_attempt("unlock", doc.document_id, client_ip)
        if not self._verify(doc.passphrase_hash, passphrase or ""):
            ratelimits.record(self.ctx, budget, limits.unlock_failure_rate(), "Too many wrong passphrases")
            raise WrongPassphrase("That passphrase is not right.")
        return self._cookie(doc)

    @requires("get_document")
    def failed_unlocks(self, who: Who, document_id: str) -> FailedUnlocks:
        """For the owner: wrong passphrases tried on this document within the budget's window."""
        doc = self._owned(who, document_id, allow_free=True)
        budget, window = limits.unlock_failure_rate()
        times = ratelimits.recent(self.ctx, failure_scope(doc), window)
        return FailedUnlocks(count=len(times), last_ms=times[-1] if times else None, window_seconds=window,
                             budget=budget)

    def _cookie(self, doc: Document) -> Unlocked:
        value = self._grant(doc, UNLOCK_SALT)
        return Unlocked(UNLOCK_COOKIE, value, UNLOCK_MAX_AGE_SECONDS, share_path(doc.share_id))

    @staticmethod
    def _verify(passphrase_hash: str, passphrase: str) -> bool:
        from argon2.exceptions import InvalidHashError, VerificationError

        if not passphrase or len(passphrase) > MAX_PASSPHRASE:
            return False
        try:
            return bool(_hasher().verify(passphrase_hash, passphrase))
        except (VerificationError, InvalidHashError):
            return False

    # ---------------------------------------------------------------- rate limit

    def _consume_attempt(self, kind: str, document_id: str, client_ip: str) -> None:
        ratelimits.hit(self.ctx, ratelimits.viewer_scope(kind, document_id, client_ip), limits.viewer_rate(),
                       limits.REFUSALS[kind])

    # ---------------------------------------------------------------- passphrase (owners)

    @requires("set_passphrase")
    def set_passphrase(self, who: Who, document_id: str, passphrase: str) -> None:
        if not isinstance(passphrase, str) or not MIN_PASSPHRASE <= len(passphrase) <= MAX_PASSPHRASE:
            raise ValidationFailed.field("passphrase", f"must be {MIN_PASSPHRASE} to {MAX_PASSPHRASE} characters")
        doc = self._owned(who, document_id, allow_free=False)
        refuse_weak_passphrase(passphrase)
        from chalicelib.services import activity, cdn  # owners' writes: not at a share page's cold start

        try:
            self.ctx.documents.set_passphrase(doc, _hasher().hash(passphrase))
        except StaleDocument as exc:
            raise access.document_not_found(document_id) from exc
        cdn.withdraw(self.ctx, doc.share_id, "passphrase")  # set or changed: narrows access
        activity.record(self.ctx, who, doc.workspace_id, "share.passphrase_set", doc.document_id,
                        {"title": doc.title})

    @requires("clear_passphrase")
    def clear_passphrase(self, who: Who, document_id: str) -> None:
        # A workspace moved back to free may still remove a passphrase it set on Pro.
        doc = self._owned(who, document_id, allow_free=True)
        from chalicelib.services import activity, static_pages  # owners' writes

        try:
            self.ctx.documents.set_passphrase(doc, None)
        except StaleDocument as exc:
            raise access.document_not_found(document_id) from exc
        static_pages.sync(self.ctx, doc.share_id, "passphrase removed")  # public again: static again
        activity.record(self.ctx, who, doc.workspace_id, "share.passphrase_removed", doc.document_id,
                        {"title": doc.title})

    # ---------------------------------------------------------------- rotate (owners)

    @requires("rotate_share_link")
    def rotate(self, who: Who, document_id: str) -> ShareRotated:
        """Give the document a new share id: the old link is 404 at once (its share
        item goes in the same transaction that adds the new one) and the CDN is asked
        to drop it. Feedback, versions and settings stay with the document."""
        from chalicelib.services import activity, cdn, static_pages  # owners' writes

        found = access.find_document(self.ctx, who, document_id)  # key + document: one round trip
        doc = found.document
        for _attempt in range(ROTATE_ATTEMPTS):
            new_id = new_share_id()
            try:
                self.ctx.documents.rotate_share(doc, new_id)
            except StaleDocument:
                doc = access.check_still_visible(self.ctx, found.actor, found.id)  # rotated meanwhile
                continue
            cdn.withdraw(self.ctx, doc.share_id, "rotate")
            static_pages.sync(self.ctx, new_id, "rotate")
            activity.record(self.ctx, found.actor, doc.workspace_id, "share.rotate", doc.document_id,
                            {"title": doc.title})
            from chalicelib.models import ShareRotated  # pydantic: not on the share function's path

            return ShareRotated(share_url=config.base_url() + share_path(new_id))
        raise RateLimited(1, "The link is being rotated by another request; retry in 1 s.")

    def _owned(self, who: Who, document_id: str, allow_free: bool) -> Document:
        found = access.find_document(self.ctx, access.actor(self.ctx, who), document_id)
        doc, actor = found.document, found.actor
        workspace = self.ctx.workspaces.get(actor.workspace_id)
        if not plans.entitlements(workspace.plan if workspace else "free").passphrase_links and not (
                allow_free and doc.passphrase_hash):
            raise FeatureNotInPlan("Passphrase-protected links are a Pro feature; upgrade to use them.",
                                   {"feature": "passphrase_links"})
        return doc
