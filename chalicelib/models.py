"""Pydantic models: the single source of request/response shapes and of OpenAPI.

Request models forbid unknown fields (a typo must never silently do nothing).
Length rules that are plain validation live here; rules that depend on the plan
or on stored state (size limit, caps, versions) live in the service layer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

from pydantic import (
    AfterValidator, BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, StringConstraints, field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from chalicelib.domain import emails
from chalicelib.domain.limits import MAX_EDITS, MAX_HTML_BYTES  # noqa: F401 - the one table of limits

MAX_TITLE = 500
MAX_DESCRIPTION = 5000
MAX_NOTE = 2000


# defer_build: a model's validator and serializer are built on first use, not at
# import: a cold start builds the two or three models its route needs instead
# of all of them (bench/cold_start.py).


class RequestModel(BaseModel):
    # Strict: a JSON body's types must be right ("yes" is not a boolean, "5" not a number).
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, defer_build=True, strict=True)


class NoBody(RequestModel):
    """The body of a route that takes none: a body, when sent, must be `{}` (contract
    section 1: an unknown field is 422, so a typo never silently does nothing)."""


class QueryModel(RequestModel):
    # Query strings are text: "20" and "true" are converted (pydantic's lax mode).
    model_config = ConfigDict(extra="forbid", defer_build=True, strict=False)


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _not_blank(value: Optional[str]) -> Optional[str]:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value


# `_not_blank` enforces "not only whitespace"; the pattern says the same in the schema
# (Python's `\s` is exactly what str.strip() removes).
NOT_BLANK = Field(json_schema_extra={"pattern": r"\S"})
Title = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TITLE), NOT_BLANK]
Description = Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION)]
Note = Annotated[str, StringConstraints(max_length=MAX_NOTE)]
def _bounded_text(min_length: int, max_length: Optional[int]) -> Any:
    """A str with length bounds, checked with len() (O(1)) in Python.

    StringConstraints would make pydantic-core convert a non-ASCII str to
    UTF-8 and count its characters: ~10 ms and 8 MiB more for a 4 MiB
    Japanese document (bench/large_documents.py). Same error types, messages
    and JSON schema as StringConstraints."""

    def check(value: str) -> str:
        if len(value) < min_length:
            raise PydanticCustomError("string_too_short", "String should have at least {min_length} character"
                                      + ("s" if min_length != 1 else ""), {"min_length": min_length})
        if max_length is not None and len(value) > max_length:
            raise PydanticCustomError("string_too_long", "String should have at most {max_length} characters",
                                      {"max_length": max_length})
        return value

    bounds: dict[str, Any] = {**({"maxLength": max_length} if max_length is not None else {}),
              **({"minLength": min_length} if min_length else {})}
    return Annotated[str, Field(json_schema_extra=bounds), AfterValidator(check)]


# No length bound here: the one size rule is the service's 4 MiB of UTF-8 (413),
# and the HTTP layer refuses bodies far over it before parsing.
if TYPE_CHECKING:  # a str to the type checker; length-checked with len() at run time
    Html = str
    OldString = str
    NewString = str
else:
    Html = _bounded_text(1, None)
    OldString = _bounded_text(1, None)
    NewString = _bounded_text(0, None)
DocumentId = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"), AfterValidator(str.lower)]
VersionId = Annotated[str, StringConstraints(min_length=1, max_length=64)]

# RFC 3339 with a time zone ("2026-12-01T00:00:00Z", "...+02:00"); normalised to UTC "Z".
# Whether it is in the future and within a year depends on the clock: the service checks.
_RFC3339 = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
            r"([Zz]|[+-][0-9]{2}:[0-9]{2})$")


def _utc_timestamp(value: str) -> str:
    import re
    from datetime import datetime, timezone

    try:
        if not re.fullmatch(_RFC3339, value):
            raise ValueError(value)
        parsed = datetime.fromisoformat(value.upper().replace("Z", "+00:00").replace(" ", "T"))
        # The store keeps milliseconds: a finer fraction is cut to them (never rounded up).
        utc = parsed.astimezone(timezone.utc)
        utc = utc.replace(microsecond=utc.microsecond // 1000 * 1000)
    except (ValueError, OverflowError):  # no such date, or it leaves years 1-9999 once in UTC
        raise PydanticCustomError("rfc3339", "must be an RFC 3339 timestamp such as 2026-12-01T09:00:00Z") from None
    # isoformat, not strftime: "%Y" drops the leading zeros of years before 1000 on glibc.
    # Whole seconds read as such; a fraction as its milliseconds (as rfc3339_ms answers it).
    return utc.replace(tzinfo=None).isoformat(timespec="milliseconds" if utc.microsecond else "seconds") + "Z"


ExpiresAt = Annotated[str, StringConstraints(max_length=40), AfterValidator(_utc_timestamp),
                      Field(json_schema_extra={"pattern": _RFC3339, "format": "date-time"}, description="When the share link stops working (RFC 3339; future, at most 366 days "
                                        "ahead); null: never.")]
ShareEnabled = Annotated[bool, Field(description="false: the share link answers 404 (the document stays).")]
ShareAccess = Annotated[Literal["public", "workspace", "recipients"], Field(description=(
    "public: anyone with the link opens it; workspace: only signed-in members of the workspace "
    "(anyone else gets the sign-in page, then the document); recipients: the addresses and domains of "
    "share_recipients, after an emailed 6-digit code, and the workspace's members."))]
MAX_RECIPIENTS = 100


def _recipient_entry(value: str) -> str:
    normal = emails.normal_domain_entry(value) if value.strip().startswith("@") else emails.normal_email(value)
    if normal is None:
        raise PydanticCustomError("recipient", "must be an email address or a domain written @example.com")
    return normal


def _distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


RecipientEntry = Annotated[str, StringConstraints(max_length=254), AfterValidator(_recipient_entry)]
ShareRecipients = Annotated[list[RecipientEntry], Field(min_length=1, max_length=MAX_RECIPIENTS, description=(
    "Who may open a `recipients` link: 1 to 100 email addresses and/or domains written @example.com "
    "(any verified address at that domain). Members of the workspace always may.")), AfterValidator(_distinct)]


# ---------------------------------------------------------------- requests

DocumentFormat = Annotated[Literal["html", "markdown"], Field(description=(
    "`html` (default): `html` is the page. `markdown`: `html` carries Markdown source (CommonMark + GFM "
    "tables, strikethrough, task lists, autolinks), rendered by the service into a complete page."))]
MAX_FILE_PATH = 255


class FileInput(RequestModel):
    """One file beside the page (a bundle): referenced from the page by its relative path."""
    path: Annotated[str, StringConstraints(min_length=1, max_length=MAX_FILE_PATH), Field(description=(
        "Relative, `/`-separated, case-sensitive path, e.g. `img/chart.png` (no `..`, no leading `/`, no "
        "backslash; at most 255 characters)."))]
    content: Annotated[str, Field(description="The file's bytes: base64, or UTF-8 text (see encoding).")]
    encoding: Literal["base64", "utf-8"] = "utf-8"


class PublishRequest(RequestModel):
    title: Optional[Title] = Field(None, description=(
        "1 to 500 characters. Omitted: a new version keeps the document's title; a new document takes the "
        "page's <title>, else its first <h1>; for Markdown its first heading; with none of those, 422."))
    html: Optional[Html] = Field(None, description=(
        "The page (or with format=markdown its Markdown source). Required unless `upload_id` is given."))
    upload_id: Optional[Annotated[str, StringConstraints(max_length=64)]] = Field(None, description=(
        "A file sent through POST /api/v1/uploads, in place of `html` (single use)."))
    format: DocumentFormat = "html"
    files: Optional[list[FileInput]] = Field(None, description=(
        "Files beside the page (images, stylesheets, scripts, more pages), resolved from the page's "
        "relative references. At most 200 files and 32 MiB in all (413 bundle_too_large). A new version "
        "replaces the whole file set."))
    document_id: Optional[DocumentId] = None
    note: Optional[Note] = None
    description: Optional[Description] = None
    base_version_id: Optional[VersionId] = None
    share_enabled: Optional[ShareEnabled] = None
    share_expires_at: Optional[ExpiresAt] = None
    share_access: Optional[ShareAccess] = None
    share_recipients: Optional[ShareRecipients] = None
    allow_secrets: Optional[bool] = Field(None, description=(
        "true: store the content even if the secret scan finds credentials in it (contract 7g; the "
        "activity log records it). Otherwise a workspace that blocks secrets (the default) answers 422 "
        "secret_detected and stores nothing."))

    _title_not_blank = field_validator("title")(_not_blank)


class EditOperation(RequestModel):
    old_string: Annotated[OldString, Field(
        description="Exact text to find (literal, case-sensitive, whitespace counts); not empty.")]
    new_string: Annotated[NewString, Field(
        description="Replacement text (may be empty to delete old_string).")]
    replace_all: bool = Field(False, description="Replace every occurrence; false requires exactly one match.")


class EditRequest(RequestModel):
    edits: Annotated[list[EditOperation], Field(min_length=1, max_length=MAX_EDITS)]
    note: Optional[Note] = None
    base_version_id: Optional[VersionId] = None
    allow_secrets: Optional[bool] = Field(None, description=(
        "true: store the content even if the secret scan finds credentials in it (contract 7g; the "
        "activity log records it). Otherwise a workspace that blocks secrets (the default) answers 422 "
        "secret_detected and stores nothing."))


class UpdateDocumentRequest(RequestModel):
    # The service wants at least one field given (title/description/share_enabled not null;
    # share_expires_at may be null: that clears it); say so in the schema too.
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        *({"required": [name], "properties": {name: {"type": "string"}}}  # type: ignore[list-item]
          for name in ("title", "description")),
        {"required": ["share_enabled"], "properties": {"share_enabled": {"type": "boolean"}}},
        {"required": ["share_expires_at"]},
        {"required": ["share_access"], "properties": {"share_access": {"type": "string"}}},
        {"required": ["share_recipients"], "properties": {"share_recipients": {"type": "array"}}}]})

    title: Optional[Title] = None
    description: Optional[Description] = None
    share_enabled: Optional[ShareEnabled] = None
    share_expires_at: Optional[ExpiresAt] = None
    share_access: Optional[ShareAccess] = None
    share_recipients: Optional[ShareRecipients] = None

    _title_not_blank = field_validator("title")(_not_blank)


class ListDocumentsQuery(QueryModel):
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Optional[Annotated[str, StringConstraints(max_length=2048), Field(description=(
        "`next_cursor` of the previous page of the same listing; anything else is 422."))]] = None
    query: Optional[Annotated[str, StringConstraints(max_length=500), Field(description=(
        "Case-insensitive match on title and description (exact and prefix title matches first); "
        "empty or blank: no filter, every document (find_document alike)."))]] = None
    review_state: Optional[ReviewState] = Field(None, description=(
        "Only documents in this review state: none, pending, changes_requested or approved."))


class ActivityQuery(QueryModel):
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Optional[Annotated[str, StringConstraints(max_length=2048), Field(description=(
        "`next_cursor` of the previous page; anything else is 422."))]] = None


class ListVersionsQuery(QueryModel):
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Optional[Annotated[str, StringConstraints(max_length=2048), Field(description=(
        "`next_cursor` of the previous page of the same listing; anything else is 422."))]] = None


class GetDocumentQuery(QueryModel):
    include_html: bool = False
    include_source: bool = False
    version_id: Optional[VersionId] = None


class UploadRequest(RequestModel):
    filename: Annotated[str, StringConstraints(min_length=1, max_length=255), Field(description=(
        "The file's name: .html, .htm, .md, .markdown or .zip (it decides how the upload is read)."))]
    size_bytes: Annotated[int, Field(ge=1, description="Exactly how many bytes will be PUT to upload_url.")]


class UploadTicket(ResponseModel):
    upload_id: str
    upload_url: str = Field(description="PUT exactly size_bytes bytes here, with no credentials.")
    expires_at: str


class DownloadQuery(QueryModel):
    version_id: Optional[VersionId] = None


class PassphraseRequest(RequestModel):
    passphrase: Annotated[str, StringConstraints(min_length=8, max_length=200), Field(description=(
        "8 to 200 characters and not easy to guess (zxcvbn score 2 or more, judged on the first 72 "
        "characters); a weak one is 422 `validation_error` with the reason."))]

    _passphrase_not_blank = field_validator("passphrase")(_not_blank)


MAX_WAIT_SECONDS = 25
SinceToken = Annotated[str, StringConstraints(max_length=4096), Field(description=(
    "`since` of an earlier answer of the same listing (same document_id or none); anything else is 422."))]


class FeedbackListQuery(QueryModel):
    document_id: Optional[DocumentId] = None
    status: Literal["open", "resolved", "all"] = "open"
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Optional[Annotated[str, StringConstraints(max_length=2048), Field(description=(
        "`next_cursor` of the previous page of the same listing; anything else is 422."))]] = None
    since: Optional[SinceToken] = None
    wait: Optional[Annotated[int, Field(ge=0, le=MAX_WAIT_SECONDS, description=(
        "Seconds (0 to 25) to wait for feedback or a viewer reply newer than `since` (or than now, "
        "without `since`); the answer comes as soon as there is some, else after `wait` seconds with an "
        "empty list."))]] = None


class StatsQuery(QueryModel):
    days: Annotated[int, Field(ge=1, le=90, description="Days of the window, ending today (UTC).")] = 30


class ResolveFeedbackRequest(RequestModel):
    resolved: bool = True


MAX_FEEDBACK_MESSAGE = 5000
MAX_QUOTE = 1000
MAX_ANCHOR_CONTEXT = 64
Message = Annotated[str, StringConstraints(min_length=1, max_length=MAX_FEEDBACK_MESSAGE), NOT_BLANK]
ViewerName = Annotated[str, StringConstraints(max_length=100)]


class Anchor(RequestModel):
    """Where in the text a comment applies: a W3C TextQuoteSelector."""
    quote: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUOTE), NOT_BLANK, Field(
        description="The exact text commented on (1 to 1,000 characters).")]
    prefix: Optional[Annotated[str, StringConstraints(max_length=MAX_ANCHOR_CONTEXT), Field(
        description="Up to 64 characters just before the quote (tells repeats apart).")]] = None
    suffix: Optional[Annotated[str, StringConstraints(max_length=MAX_ANCHOR_CONTEXT), Field(
        description="Up to 64 characters just after the quote.")]] = None

    _quote_not_blank = field_validator("quote")(_not_blank)


MAX_REPLACEMENT = 5000


class Suggestion(RequestModel):
    """A suggested edit (contract 7e): the anchor's quote replaced by `replacement`."""
    replacement: Annotated[str, StringConstraints(max_length=MAX_REPLACEMENT), Field(
        description="The text to put in place of the quoted passage (0 to 5,000 characters; empty deletes it).")]


class FeedbackSubmission(RequestModel):
    message: Message
    name: Optional[ViewerName] = None
    quote: Optional[Annotated[str, StringConstraints(max_length=MAX_QUOTE)]] = None
    anchor: Optional[Anchor] = None
    suggestion: Optional[Suggestion] = None

    @field_validator("suggestion")
    @classmethod
    def _suggestion_needs_anchor(cls, suggestion, info):
        if suggestion is not None and info.data.get("anchor") is None:
            raise PydanticCustomError("suggestion_without_anchor",
                                      "a suggestion needs an anchor (the passage it replaces)")
        return suggestion

    _message_not_blank = field_validator("message")(_not_blank)

    @field_validator("anchor")
    @classmethod
    def _quote_matches(cls, anchor, info):
        quote = info.data.get("quote")
        if anchor is not None and quote and quote != anchor.quote:
            raise PydanticCustomError("quote_mismatch", "quote must equal anchor.quote when both are sent")
        return anchor


class ReplyRequest(RequestModel):
    message: Message

    _message_not_blank = field_validator("message")(_not_blank)


class ViewerReplyRequest(RequestModel):
    message: Message
    name: Optional[ViewerName] = None

    _message_not_blank = field_validator("message")(_not_blank)


# ---------------------------------------------------------------- reviews (contract 7e)

MAX_REVIEW_MESSAGE = 5000
MAX_REVIEWERS = 20
ReviewDecision = Literal["approved", "changes_requested", "commented"]
ReviewState = Literal["none", "pending", "changes_requested", "approved"]


def _email_address(value: str) -> str:
    normal = emails.normal_email(value) if value == value.strip() else None
    if normal is None:
        raise PydanticCustomError("email", "must be an email address")
    return normal


EmailAddress = Annotated[str, StringConstraints(max_length=254), AfterValidator(_email_address),
                         Field(json_schema_extra={"pattern": emails.EMAIL_SHAPE, "format": "email"})]
ReviewMessage = Annotated[str, StringConstraints(max_length=MAX_REVIEW_MESSAGE)]


class ReviewSubmission(RequestModel):
    decision: ReviewDecision = Field(description=(
        "approved, changes_requested, or commented (a remark that leaves the review state as it is)."))
    message: Optional[ReviewMessage] = Field(None, description="Up to 5,000 characters.")
    version_number: Optional[Annotated[int, Field(ge=1, description=(
        "The version reviewed (default: the latest). A deleted or unknown version is 404."))]] = None


class ShareReview(RequestModel):
    """A decision posted from a share page (the version is the page's `?v=`, else the latest)."""
    decision: ReviewDecision
    message: Optional[ReviewMessage] = None


class ShareUnlockForm(RequestModel):
    """POST /d/<share>/unlock (a form): the passphrase."""
    passphrase: str = ""


class RecipientEmailForm(RequestModel):
    """POST /d/<share>/recipient/email (a form): the viewer's address."""
    email: str = ""


class RecipientCodeForm(RequestModel):
    """POST /d/<share>/recipient/code (a form): the address and the code mailed to it."""
    email: str = ""
    code: str = ""


class ReviewRequestBody(RequestModel):
    reviewers: Annotated[list[EmailAddress], Field(min_length=1, max_length=MAX_REVIEWERS, description=(
        "1 to 20 email addresses of members of the workspace or of recipients its `recipients` link admits; "
        "each is mailed a link to the share page."))]
    message: Optional[ReviewMessage] = Field(None, description="Up to 5,000 characters, sent with the request.")


class ReviewsQuery(QueryModel):
    since: Optional[SinceToken] = None
    wait: Optional[Annotated[int, Field(ge=0, le=MAX_WAIT_SECONDS, description=(
        "Seconds (0 to 25) to wait for a review, feedback or a viewer reply newer than `since` (or than "
        "now, without `since`); the answer comes as soon as there is one, else after `wait` seconds with "
        "empty lists."))]] = None


# ---------------------------------------------------------------- responses

class RateLimitEntitlement(ResponseModel):
    limit: int
    window_seconds: int


class Entitlements(ResponseModel):
    max_documents: Optional[int]
    max_api_keys: Optional[int]
    passphrase_links: bool
    dashboard_editing: bool
    custom_branding: bool
    max_html_bytes: int
    write_rate_limit: RateLimitEntitlement
    max_storage_bytes: Optional[int] = Field(
        None, description="All versions (and files, each distinct one counted once), content as sent.")
    max_versions_per_document: Optional[int] = None
    workspace_write_rate_limit: Optional[RateLimitEntitlement] = Field(
        None, description="All writes of the workspace together: every key (revoked ones too), OAuth grant "
                          "and dashboard session.")


class Usage(ResponseModel):
    documents: int
    versions: int
    storage_bytes: int = Field(description=(
        "Content as sent (uncompressed bytes), plus the declared sizes of pending uploads (created, neither "
        "published nor expired): what the storage quota counts."))
    pending_upload_bytes: int = Field(0, description=(
        "The part of storage_bytes that pending uploads hold (declared sizes, until published or expired)."))


SecretScanning = Literal["block", "warn", "off"]
PiiScanning = Literal["off", "warn"]


class Workspace(ResponseModel):
    id: str
    name: str
    brand_name: Optional[str] = None
    brand_tagline: Optional[str] = None
    plan: Literal["free", "pro"]
    document_count: int
    entitlements: Entitlements
    usage: Optional[Usage] = None
    secret_scanning: SecretScanning = Field("block", description=(
        "What a write holding a credential does (contract 7g): block (422 secret_detected, nothing "
        "stored), warn (stored, with warnings) or off."))
    pii_scanning: PiiScanning = Field("off", description=(
        "warn: email addresses, phone numbers, card numbers and IBANs are reported as warnings."))


class UpdateWorkspaceRequest(RequestModel):
    """PATCH /api/v1/workspace (owner): the workspace's scanning settings; give at least one."""
    # At least one setting given, and given as a string (null changes nothing: the service
    # refuses a body that names no setting), as UpdateDocumentRequest says for its fields.
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": [name], "properties": {name: {"type": "string"}}}  # type: ignore[list-item]
        for name in ("secret_scanning", "pii_scanning")]})

    secret_scanning: Optional[SecretScanning] = None
    pii_scanning: Optional[PiiScanning] = None


class KeyInfo(ResponseModel):
    """The API key a request came with (contract 4, "Keys follow their creator")."""
    key_id: str
    created_by: Optional[str] = Field(
        description="The email of the member who made the key (it acts with at most their current role and "
                    "is revoked when they leave), or null: a workspace key, made by the operator, that acts "
                    "as the owner.")
    role: Literal["owner", "editor", "viewer"] = Field(description="The role the key acts with now.")


class MeResponse(ResponseModel):
    workspace: Workspace
    key: Optional[KeyInfo] = Field(
        None, description="The API key of the request; null for an OAuth access token.")


class ScanFinding(ResponseModel):
    """Something the secret scan found (contract 7g). `line` and `column` are 1-based, in the text
    the finding is in: the content as sent, the bundle file `path`, or for an edit the document as
    it would be."""
    rule: str = Field(description="The rule that found it: a gitleaks rule id (aws-access-token, "
                                  "private-key, jwt, generic-api-key, ...), docpub-api-key, or for PII "
                                  "email, phone-number, card-number, iban.")
    path: Optional[str] = Field(None, description="The bundle file it is in (absent: the page or "
                                                  "Markdown source).")
    line: int
    column: int
    preview: str = Field(description="At most the first 4 and last 4 characters: AKIA…MPLE.")

    @model_serializer(mode="wrap")
    def _without_empty_path(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict) and data.get("path") is None:
            data.pop("path", None)
        return data


class ScanWarning(ScanFinding):
    kind: Literal["secret", "pii"]


class SecretDetectedDetails(ResponseModel):
    findings: list[ScanFinding]


class _WarnedAnswer(ResponseModel):
    """An answer with optional scan `warnings` (contract 7g): left out when there are none."""

    @model_serializer(mode="wrap")
    def _without_empty_warnings(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict) and data.get("warnings") is None:
            data.pop("warnings", None)
        return data


class PublishResponse(_WarnedAnswer):
    document_id: str
    version_id: str
    version_number: int
    share_url: str
    warnings: Optional[list[ScanWarning]] = Field(None, description=(
        "Present when the workspace warns (or allow_secrets was given) and the scan found something: "
        "the content was stored."))


class EditSummary(ResponseModel):
    edits_applied: int
    replacements: int
    size_bytes_before: int
    size_bytes_after: int


class EditResponse(PublishResponse):
    summary: EditSummary


class DocumentSummary(ResponseModel):
    document_id: str
    title: str
    description: str
    share_url: str
    created_at: str
    updated_at: str
    version_count: int
    latest_version_id: str
    open_feedback_count: int
    share_enabled: bool = True
    share_expires_at: Optional[str] = None
    share_access: Literal["public", "workspace", "recipients"] = "public"
    review_state: ReviewState = "none"


class FileInfo(ResponseModel):
    path: str
    size_bytes: int
    sha256: str


class VersionInfo(ResponseModel):
    version_id: str
    number: int
    note: Optional[str] = None
    created_at: str
    size_bytes: int
    files: Optional[list[FileInfo]] = Field(None, description="The version's files (a bundle); absent when none.")

    @model_serializer(mode="wrap")
    def _without_empty_files(self, handler):
        data = handler(self)
        if data.get("files") is None:
            data.pop("files", None)
        return data


class VersionList(ResponseModel):
    """GET /documents/:id/versions: every version, newest first, a page at a time."""
    versions: list[VersionInfo]
    next_cursor: Optional[str] = None


class ProvenanceFile(ResponseModel):
    path: str
    sha256: str = Field(description="Lowercase hex SHA-256 of the file's bytes.")


class Publisher(ResponseModel):
    kind: Literal["key", "member", "oauth_client"]
    id: str
    name: str


class ProvenanceStatement(ResponseModel):
    """What was published: signed over its RFC 8785 canonical JSON (contract 7g)."""
    document_id: str
    workspace_id: str
    version_number: int
    content_sha256: str = Field(description="Lowercase hex SHA-256 of the content as downloaded (`?download=1`): "
                                            "the HTML page, a bundle's index page, or the Markdown source.")
    files: list[ProvenanceFile] = Field(description="A bundle's other files, by path (empty for a page).")
    published_at: str
    publisher: Publisher


class ProvenanceSignature(ResponseModel):
    alg: Literal["ES256", "EdDSA"]
    kid: str = Field(description="The signing key's id in /.well-known/docpub-signing-keys.json.")
    value: str = Field(description="base64url signature of the statement's canonical JSON (ES256: raw r||s).")
    statement_sha256: Optional[str] = Field(None, description="SHA-256 of the canonical statement that was signed: "
                                                              "tells a changed statement from a changed signature.")


class Provenance(ResponseModel):
    """GET /documents/:id/versions/:version_number/provenance: a version's signed statement."""
    statement: ProvenanceStatement
    signature: ProvenanceSignature


class SigningKeySet(ResponseModel):
    """/.well-known/docpub-signing-keys.json: a JWKS; a rotated key keeps its `not_after`."""
    keys: list[dict[str, str]]


class DocumentDetail(DocumentSummary):
    versions: list[VersionInfo] = Field(description="The newest 100 versions at most, oldest first.")
    versions_truncated: bool = Field(False, description="True when older versions exist than those listed "
                                                        "(GET /api/v1/documents/:id/versions pages through all).")
    passphrase_protected: bool
    share_recipients: list[str] = Field(default_factory=list, description=(
        "Who may open a `recipients` link (emails and @domains), as set; kept when the access changes."))
    views_total: int = Field(0, description="Counted views of the share link, all versions, all time.")
    last_viewed_at: Optional[str] = Field(None, description="When the link was last viewed (RFC 3339), or null.")
    html: Optional[str] = None
    format: Optional[Literal["html", "markdown"]] = Field(None, description="With include_source=true.")
    source: Optional[str] = Field(None, description=(
        "With include_source=true: the Markdown source of a Markdown document, the HTML of an HTML one."))


class ShareRotated(ResponseModel):
    """POST /documents/:id/share/rotate: the new link (the old one is 404 at once)."""
    share_url: str


class DayViews(ResponseModel):
    date: str = Field(description="UTC day, YYYY-MM-DD.")
    views: int


class VersionViews(ResponseModel):
    version_id: str
    views: int


class DocumentStats(ResponseModel):
    """Views of a document's share link: never who, only how many and when."""
    views_total: int = Field(description="All counted views, all time.")
    days: list[DayViews] = Field(description="Every day of the window, oldest first, zeros included.")
    versions: list[VersionViews] = Field(description="All-time views per version, oldest version first.")


class DocumentListItem(DocumentSummary):
    """A document in a listing: the summary and its views (contract: list items too)."""
    views_total: int = Field(0, description="Counted views of the share link, all versions, all time.")
    last_viewed_at: Optional[str] = Field(None, description="When the link was last viewed (RFC 3339), or null.")


class DocumentList(ResponseModel):
    documents: list[DocumentListItem]
    next_cursor: Optional[str] = None


class Reply(ResponseModel):
    reply_id: str
    message: str
    name: Optional[str] = None
    author: Literal["owner", "viewer"]
    created_at: str


class AnchorState(ResponseModel):
    """Where an anchored comment's passage is in the document's latest version (contract 7e)."""
    version_number: int = Field(description="The version this state is for (the latest).")
    status: Literal["exact", "moved", "fuzzy", "orphaned"] = Field(description=(
        "exact: the quote with its prefix and suffix; moved: the quote, in other surroundings; fuzzy: a "
        "passage at least 80% like the quote (quote_now); orphaned: not in this version."))
    quote_now: Optional[str] = Field(None, description="fuzzy only: the text found in place of the quote.")


class Feedback(ResponseModel):
    feedback_id: str
    document_id: str
    version_id: str
    message: str
    name: Optional[str] = None
    quote: Optional[str] = None
    anchor: Optional[Anchor] = None
    anchor_state: Optional[AnchorState] = None
    suggestion: Optional[Suggestion] = None
    status: Literal["open", "resolved"]
    created_at: str
    resolved_at: Optional[str] = None
    resolved_in_version: Optional[int] = Field(None, description=(
        "An accepted suggestion: the number of the version that applied it."))
    recipient_email: Optional[str] = Field(None, description=(
        "Posted by a verified recipient of a `recipients` link (7f): their email address."))
    replies: list[Reply] = Field(default_factory=list, description="Oldest first.")


class AcceptSuggestionRequest(RequestModel):
    base_version_id: Optional[VersionId] = None
    allow_secrets: Optional[bool] = Field(None, description=(
        "true: store the edit even if the secret scan finds credentials in the document as it would be "
        "(contract 7g; the activity log records it), as for an edit."))


class AcceptedVersion(ResponseModel):
    document_id: str
    version_id: str
    version_number: int
    share_url: str


class SuggestionAccepted(_WarnedAnswer):
    feedback: Feedback
    document: AcceptedVersion
    warnings: Optional[list[ScanWarning]] = Field(None, description=(
        "Present when the workspace warns (or allow_secrets was given) and the scan of the document as "
        "edited found something, as in an edit's answer: the version was stored."))


class FeedbackList(ResponseModel):
    feedback: list[Feedback]
    next_cursor: Optional[str] = None
    since: Optional[str] = Field(None, description=(
        "Pass back as `since` (with `wait`) to get only feedback or viewer replies newer than this answer."))


class FeedbackCreated(ResponseModel):
    feedback_id: str


class Reviewer(ResponseModel):
    kind: Literal["member", "recipient", "key", "oauth_client"] = Field(description=(
        "member (id: the member's user id, their email), recipient (7f; id: the email), key (id: the "
        "API key's key_id) or oauth_client (id: the OAuth client's id)."))
    id: str
    name: str
    email: Optional[str] = None

    @model_serializer(mode="wrap")
    def _without_missing_email(self, handler):
        data = handler(self)
        if data.get("email") is None:
            data.pop("email", None)
        return data


class Review(ResponseModel):
    review_id: str
    document_id: str
    version_number: int
    decision: ReviewDecision
    message: Optional[str] = None
    reviewer: Reviewer
    created_at: str


class ReviewList(ResponseModel):
    """GET /documents/:id/reviews: the newest reviews and the document's review state; waiting
    (`wait`/`since`), what is newer than `since`, with the feedback threads that moved."""
    review_state: ReviewState = Field(description=(
        "none (never requested nor reviewed), pending (requested, or a new version after any review), "
        "changes_requested, approved: of the latest version."))
    reviews: list[Review] = Field(description="Newest first (at most 100).")
    feedback: Optional[list[Feedback]] = Field(None, description=(
        "With `since` or `wait`: feedback threads with a comment or viewer reply newer than `since`."))
    since: Optional[str] = Field(None, description=(
        "Pass back as `since` (with `wait`) to get only what is newer than this answer."))

    @model_serializer(mode="wrap")
    def _without_feedback_unless_waiting(self, handler):
        data = handler(self)
        if data.get("feedback") is None:
            data.pop("feedback", None)
        return data


class ReviewsRequested(ResponseModel):
    requested: list[str] = Field(description="The addresses asked to review, lowercased, each once.")


class DocumentDeleted(ResponseModel):
    """What the MCP tool delete_document answers (REST answers 204 with no body)."""
    document_id: str
    deleted: Literal[True]


class VersionDeleted(ResponseModel):
    """What the MCP tool delete_version answers (REST answers 204 with no body)."""
    document_id: str
    version_id: str
    deleted: Literal[True]


class Health(ResponseModel):
    status: Literal["ok"]


class ErrorDetail(ResponseModel):
    code: str
    message: str
    details: Optional[dict] = None


class ErrorBody(ResponseModel):
    error: ErrorDetail


# ------------------------------------------------------------------ OAuth 2.1 for MCP (docs/mcp.md)
# Wire shapes of the OAuth endpoints (RFC 9728, 8414, 7591, 6749, 7009). Their
# errors are RFC 6749 bodies (OAuthErrorBody), not ErrorBody.

class ProtectedResourceMetadata(ResponseModel):
    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str]
    bearer_methods_supported: list[str]
    resource_name: str
    resource_documentation: str


class AuthorizationServerMetadata(ResponseModel):
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str
    revocation_endpoint: str
    scopes_supported: list[str]
    response_types_supported: list[str]
    response_modes_supported: list[str]
    grant_types_supported: list[str]
    code_challenge_methods_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    revocation_endpoint_auth_methods_supported: list[str]
    client_id_metadata_document_supported: bool
    authorization_response_iss_parameter_supported: bool


class ClientRegistrationRequest(BaseModel):
    """RFC 7591 client metadata; other members are accepted and ignored (RFC 7591 2)."""
    model_config = ConfigDict(extra="allow", defer_build=True)
    redirect_uris: list[str] = Field(min_length=1, max_length=10)
    client_name: Optional[str] = None
    grant_types: Optional[list[str]] = None
    response_types: Optional[list[str]] = None
    token_endpoint_auth_method: Optional[str] = None
    scope: Optional[str] = None
    client_uri: Optional[str] = None
    logo_uri: Optional[str] = None


class ClientRegistration(ResponseModel):
    client_id: str
    client_id_issued_at: int
    redirect_uris: list[str]
    client_name: Optional[str] = None
    grant_types: list[str]
    response_types: list[str]
    token_endpoint_auth_method: Literal["none"]
    scope: str


class TokenRequest(BaseModel):
    """`application/x-www-form-urlencoded` body of POST /oauth/token."""
    model_config = ConfigDict(defer_build=True)
    grant_type: Literal["authorization_code", "refresh_token"]
    client_id: str
    code: Optional[str] = None
    redirect_uri: Optional[str] = None
    code_verifier: Optional[str] = Field(None, min_length=43, max_length=128)
    refresh_token: Optional[str] = None
    resource: Optional[str] = None
    scope: Optional[str] = None


class TokenResponse(ResponseModel):
    access_token: str
    token_type: Literal["Bearer"]
    expires_in: int
    refresh_token: str
    scope: str


class RevokeRequest(BaseModel):
    """`application/x-www-form-urlencoded` body of POST /oauth/revoke (RFC 7009)."""
    model_config = ConfigDict(defer_build=True)
    token: str
    token_type_hint: Optional[Literal["access_token", "refresh_token"]] = None
    client_id: Optional[str] = None


class OAuthErrorBody(ResponseModel):
    error: str
    error_description: Optional[str] = None


# ------------------------------------------------------------------ webhooks (contract 7c)

WebhookEvent = Literal["feedback.created", "feedback.replied", "feedback.resolved", "document.published",
                       "document.deleted", "review.requested", "review.approved", "review.changes_requested"]


class WebhookCreateRequest(RequestModel):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048), Field(description=(
        "An https URL whose host resolves to public addresses (checked again at every delivery)."))]
    events: Annotated[list[WebhookEvent], Field(min_length=1, max_length=8, description=(
        "One or more of feedback.created, feedback.replied, feedback.resolved, document.published, "
        "document.deleted, review.requested, review.approved, review.changes_requested."))]


class Webhook(ResponseModel):
    webhook_id: str
    url: str
    events: list[str]
    created_at: str


class WebhookCreated(Webhook):
    secret: str = Field(description="`whsec_` + base64 of 32 random bytes; shown only here.")


class WebhookList(ResponseModel):
    webhooks: list[Webhook]


class WebhookDelivery(ResponseModel):
    delivery_id: str
    event: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    response_status: Optional[int] = None
    created_at: str
    next_attempt_at: Optional[str] = None
    last_error: Optional[str] = None


class WebhookDeliveryList(ResponseModel):
    deliveries: list[WebhookDelivery]


class WebhookTestQueued(ResponseModel):
    delivery_id: str


class WebhookSecretRotated(ResponseModel):
    secret: str
    previous_secret_expires_at: str


# ---------------------------------------------------------------- people (contract 7d)

class ActivityActor(ResponseModel):
    kind: Literal["member", "api_key", "oauth_client", "operator"]
    id: str


class ActivityEntry(ResponseModel):
    activity_id: str
    created_at: str
    actor: ActivityActor
    surface: Literal["api", "mcp", "dashboard", "cli"]
    action: str
    target: Optional[str] = None
    detail: dict = Field(default_factory=dict)


class ActivityList(ResponseModel):
    activity: list[ActivityEntry]
    next_cursor: Optional[str] = None


# ------------------------------------------------------------------ exports (contract 7g)

class ExportStarted(ResponseModel):
    """POST /api/v1/exports: the export was started; poll GET /api/v1/exports/:id."""
    export_id: str


class ExportStatus(ResponseModel):
    """GET /api/v1/exports/:id. `download_url` and `expires_at` only once ready: the zip's
    address (deployed: a presigned S3 GET) and when it stops working (an hour after the
    export was ready; the export then answers 404)."""
    status: Literal["running", "ready", "failed"]
    download_url: Optional[str] = Field(default=None, description="Once ready: where to GET the zip, without credentials.")
    expires_at: Optional[str] = Field(default=None, description="Once ready: when download_url stops working (RFC 3339).")

    @model_serializer(mode="wrap")
    def _without_absent(self, handler):
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None}
# ---------------------------------------------------------------- audiences (contract 7f)

class RecipientInfo(ResponseModel):
    email: str
    first_opened_at: Optional[str] = Field(None, description="The first verified opening (RFC 3339), or null.")
    last_opened_at: Optional[str] = Field(None, description="The last opening (RFC 3339), or null.")
    views: int = Field(0, description="How often they opened the link.")
    revoked: bool = Field(False, description="Refused from their next request on.")


class RecipientList(ResponseModel):
    recipients: list[RecipientInfo] = Field(description=(
        "The listed addresses and the addresses verified under a listed domain (revoked ones too), by email."))


class RecipientRevoked(ResponseModel):
    """What the MCP tool revoke_recipient answers (REST answers 204 with no body)."""
    document_id: str
    email: str = Field(description="The address revoked, as list_recipients names it.")
    revoked: Literal[True] = True

    @field_validator("email")
    @classmethod
    def _as_listed(cls, value: str) -> str:
        return emails.normal_email(value) or value.strip().lower()
