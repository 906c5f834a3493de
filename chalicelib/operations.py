"""Every operation of the public API, declared once.

One `Operation` per operation: its name, method and path, request / query /
response models, success status, the contract's error statuses, the OAuth scope
it needs, its MCP tool(s) (name, title, description, hints) and `call`, the one
service function it runs. It declares and imports nothing of the surfaces: the
entrypoints read it (tests/unit/test_layers.py). Everything else is generated
from this table:

- the Chalice routes (chalicelib/entrypoints/rest.py registers one view each);
- the OpenAPI document (chalicelib/openapi.py reads this table; REST serves it);
- the MCP tool list (chalicelib/entrypoints/mcp_tools.py: a tool with a
  hand-written typed function keeps it, any other tool's arguments are built
  from the operation's path parameters and models);
- the OAuth scope table (`TOOL_SCOPES`, what an access token needs per tool).

Adding an operation = one entry here + one service function (docs/architecture.md
walks through `listVersions`). `call` receives a `Call` (credentials, path
parameters, the validated body / query, headers, an uploaded file) and returns a
response model (or a plain JSON object), a `Reply` (model + headers / excluded
fields / another status), a service's `Download` (a file), or None for "no body".
"""
from __future__ import annotations

from urllib.parse import unquote

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Union

from chalicelib import wiring

if TYPE_CHECKING:
    from pydantic import BaseModel

API_PREFIX = "/api/v1"


class _ModelNames:
    """`models.X` in the table below is the name "X": the operation's model is looked up in
    chalicelib.models when it is first read (`ModelField`). Importing this table (every REST
    route of app.py) then builds no pydantic class and loads no pydantic at all: the API
    function's cold start (bench/cold_start.py); the first request that reads a model pays."""

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):
            raise AttributeError(name)
        return name


models = _ModelNames()


class ModelField:
    """A model field of `Operation` and `Tool`: set to a model class or a `models.X` name,
    read as the class (chalicelib.models is imported on the first read of a name)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Optional[type[BaseModel]]:
        if obj is None:
            return None  # the field's default
        value = obj.__dict__[self.slot]
        if isinstance(value, str):
            import chalicelib.models as defined

            value = getattr(defined, value)
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Union[str, type[BaseModel], None]) -> None:
        obj.__dict__[self.slot] = value


# OAuth scopes (services/oauth.py SCOPES): what an access token must hold to run an operation's tools.
READ, WRITE, FEEDBACK = "docs:read", "docs:write", "feedback"


@dataclass(frozen=True)
class Tool:
    """An MCP tool of an operation. `description` may hold {placeholders} filled from
    the limits table when a server is built (mcp_instructions.limit_words)."""
    name: str
    title: str
    description: str
    read_only: bool = False
    idempotent: bool = False
    destructive: bool = False
    # For an operation that answers no body (204): the tool's result, built from its path
    # arguments and `deleted=True` (REST's 204 says the same).
    result: ModelField = ModelField()


@dataclass(frozen=True)
class Call:
    """What an operation's `call` gets: the same on REST and MCP."""
    credentials: Any  # services.auth.Credentials, or an OAuth principal's Actor (MCP)
    path: Mapping[str, str] = field(default_factory=dict)
    body: Any = None  # the validated request model, or None
    query: Any = None  # the validated query model, or None
    headers: Mapping[str, str] = field(default_factory=dict)
    upload: Optional[tuple[str, bytes]] = None  # (filename, bytes) of a multipart body's `file` part


@dataclass(frozen=True)
class Reply:
    body: Union[BaseModel, dict, None]
    headers: Mapping[str, str] = field(default_factory=dict)
    exclude: Optional[set[str]] = None
    status: Optional[int] = None  # another status than the operation's


Answer = Union["BaseModel", dict, Reply, None]


@dataclass(frozen=True)
class Operation:
    name: str  # also the Chalice view name
    method: str
    path: str
    operation_id: str
    summary: str
    call: Optional[Callable[[Call], Answer]]  # None: the surface answers it (REST: the OpenAPI document)
    response: ModelField = ModelField()  # None: no body (204) or `response_schema`
    status: int = 200
    request: ModelField = ModelField()
    query: ModelField = ModelField()
    errors: tuple[int, ...] = ()
    auth: bool = True  # an API key is required
    scope: Optional[str] = None  # the OAuth scope its tools need
    tools: tuple[Tool, ...] = ()
    write: bool = False  # a write under the rate limit: every answer carries X-RateLimit-*
    body_optional: bool = False  # no body means the request model's defaults
    tag: str = "documents"
    response_schema: Optional[dict] = None
    response_headers: dict = field(default_factory=dict)
    header_parameters: tuple[dict, ...] = ()
    links: dict = field(default_factory=dict)
    example: Optional[dict] = None  # a valid request body (also used by the authorization matrix)
    response_content: Optional[dict] = None  # a non-JSON answer: {media type: {"schema": …}}
    redirects: dict = field(default_factory=dict)  # {status: when}: an answer that is a `Location` elsewhere
    extra_request_content: Optional[dict] = None  # other request media types beside JSON
    content_types: tuple[str, ...] = ("application/json",)  # what the route accepts
    # A multipart/form-data body besides JSON: its text fields, and whether a `file` part came,
    # as the request model's input (the entrypoint parses the form and validates the model).
    form: Optional[Callable[[Mapping[str, str], bool], dict[str, Any]]] = None


# ------------------------------------------------------------------ OpenAPI decorations

INT_HEADER = {"schema": {"type": "integer"}}
RATE_HEADERS = {
    "X-RateLimit-Limit": {"description": "Accepted writes allowed per window.", **INT_HEADER},
    "X-RateLimit-Remaining": {"description": "Writes left in the current rolling window.", **INT_HEADER},
    "X-RateLimit-Reset": {"description": "Seconds until a write slot frees.", **INT_HEADER},
}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": "A retry with the same key and body within 24 h returns the first answer.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
}


def _link(operation_id: str, description: str) -> dict:
    return {"operationId": operation_id, "description": description,
            "parameters": {"document_id": "$response.body#/document_id"}}


DOCUMENT_LINKS = {
    "GetDocument": _link("getDocument", "Read the document just written."),
    "EditDocument": _link("editDocument", "Edit the document just written."),
    "UpdateDocument": _link("updateDocument", "Change its title or description."),
    "DeleteDocument": _link("deleteDocument", "Delete it."),
}


# ------------------------------------------------------------------ calls

MULTIPART_TYPE = "multipart/form-data"
MARKUP_FILE = ".html, .htm, .md, .markdown, or a .zip whose root (or single top folder) holds index.html or index.md"


def _publish_form(fields: Mapping[str, str], has_file: bool) -> dict[str, Any]:
    """A multipart/form-data publish: a `file` part (.html/.htm/.md/.markdown/.zip)
    and text fields named like the JSON ones, as PublishRequest's input."""
    from chalicelib.errors import ValidationFailed

    data: dict[str, Any] = dict(fields)
    if isinstance(data.get("allow_secrets"), str):  # a form's boolean (contract 7g)
        data["allow_secrets"] = {"true": True, "false": False}.get(data["allow_secrets"].lower(),
                                                                   data["allow_secrets"])
    if not has_file:
        if "upload_id" not in data and "html" not in data:
            raise ValidationFailed.field("file", "is required: send the document as a `file` part "
                                                 "(.html, .htm, .md, .markdown or .zip)")
        return data
    if "html" in data:
        raise ValidationFailed.field("html", "give either a `file` part or an `html` field, not both")
    if "format" in data:
        raise ValidationFailed.field("format", "comes from the file's name (.md/.markdown is Markdown)")
    return {**data, "html": "(file)"}


def _publish(c: Call) -> Reply:
    result = wiring.documents().publish(c.credentials, c.body, c.headers.get("idempotency-key"), upload=c.upload)
    return Reply(result.response, result.headers)


def _download(c: Call) -> Any:
    return wiring.documents().download(c.credentials, c.path["document_id"], c.query.version_id)


def _accept_suggestion(c: Call) -> Reply:
    result = wiring.suggestions().accept(c.credentials, c.path["feedback_id"], c.body.base_version_id,
                                         c.body.allow_secrets)
    return Reply(result.response, result.headers)


def _edit(c: Call) -> Reply:
    result = wiring.documents().edit(c.credentials, c.path["document_id"], c.body)
    return Reply(result.response, result.headers)


def _get(c: Call) -> Reply:
    from chalicelib.services.document_shapes import document_exclusions

    document = wiring.documents().get(c.credentials, c.path["document_id"], c.query.include_html,
                                      c.query.version_id, c.query.include_source)
    return Reply(document, exclude=document_exclusions(c.query.include_html, c.query.include_source))


def _update(c: Call) -> Reply:
    from chalicelib.services.document_shapes import document_exclusions

    return Reply(wiring.documents().update(c.credentials, c.path["document_id"], c.body),
                 exclude=document_exclusions(False, False))


def _health(c: Call) -> Answer:
    from chalicelib.ports import StorageFull
    from chalicelib.services.health import check_storage

    try:
        check_storage(wiring.default_context())
    except StorageFull:  # readable, but the disk is full: writes answer 507
        return Reply({"status": "degraded", "reason": "disk_full",
                      "message": "The disk is full: writes are refused (507); reads and deletes work."},
                     {"Retry-After": "60"}, status=503)
    from chalicelib.models import Health

    return Health(status="ok")


# ------------------------------------------------------------------ the table

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "publish", "POST", "/api/v1/publish", "publish", "Create a document or append a version.",
        _publish, models.PublishResponse, request=models.PublishRequest, errors=(403, 404, 409, 413, 429),
        scope=WRITE, write=True, response_headers=RATE_HEADERS, header_parameters=(IDEMPOTENCY_KEY,),
        links=DOCUMENT_LINKS, content_types=("application/json", MULTIPART_TYPE), form=_publish_form,
        extra_request_content={MULTIPART_TYPE: {"schema": {
            "type": "object", "required": ["file"], "properties": {
                "file": {"type": "string", "format": "binary", "description": MARKUP_FILE},
                **{name: {"type": "string"} for name in ("title", "document_id", "note", "description")}}}}},
        example={"title": "Release notes", "html": "<h1>Release notes</h1><p>Draft</p>", "note": "first draft"},
        tools=(Tool("publish_document", "Publish a document", (
            (
                 "Publish HTML as a new document and get its shareable link (share_url), or, with document_id, "
                 "publish it as the next version of an existing document (same link; the title and description "
                 "are replaced when given, else kept). Use this to create a document or to replace all of its HTML; to change part of an "
                 "existing document prefer edit_document. Writing prose, notes or a report? Send Markdown with "
                 "format=\"markdown\" (rendered into a typeset page; edits then apply to the Markdown). Images or "
                 "stylesheets the page references by relative path go in `files`. Limits: HTML at most "
                 "{html_size}, else document_too_large; a free workspace holds at most {free_documents} (one more "
                 "is plan_limit_reached; new versions of existing documents still work); publish and edit share a "
                 "write rate limit of {write_rate} (rate_limited, with retry_after_seconds)."))),)),
    Operation(
        "edit_document", "POST", "/api/v1/documents/{document_id}/edit", "editDocument",
        "Apply a batch of literal edits as one new version.",
        _edit, models.EditResponse, request=models.EditRequest, errors=(403, 404, 409, 413, 429),
        scope=WRITE, write=True, response_headers=RATE_HEADERS, links=DOCUMENT_LINKS,
        example={"edits": [{"old_string": "Draft", "new_string": "Final"}], "note": "final"},
        tools=(Tool("edit_document", "Edit a document", (
            "Change an existing document with exact search-and-replace edits on its latest HTML, creating "
            "one new version (the share_url is unchanged). Matching is literal and case-sensitive (no regex, "
            "whitespace counts): copy old_string exactly from get_document(include_html=true). Each "
            "old_string must match exactly once unless replace_all is true (edit_ambiguous: add surrounding "
            "text); a missing one is edit_not_found. The batch is atomic: if any edit fails, nothing is "
            "stored. Limits: {edits}, resulting HTML at most {html_size_short}, {write_rate}.")),)),
    Operation(
        "get_document", "GET", "/api/v1/documents/{document_id}", "getDocument", "A document and its versions.",
        _get, models.DocumentDetail, query=models.GetDocumentQuery, errors=(404,), scope=READ,
        tools=(Tool("get_document", "Read a document", (
            (
                 "Read one document: title, description, share_url, versions (oldest first), open feedback count, "
                 "and with include_html=true the HTML of the latest version (or of version_id). Use it before "
                 "edit_document to see the exact text to replace; for a Markdown document ask "
                 "include_source=true, since edits match its Markdown source.")), read_only=True),)),
    Operation(
        "update_document", "PATCH", "/api/v1/documents/{document_id}", "updateDocument",
        "Change title and/or description (no new version).",
        _update,
        models.DocumentDetail, request=models.UpdateDocumentRequest, errors=(404,), scope=WRITE,
        example={"title": "Release notes (final)"},
        tools=(Tool("update_document", "Rename or redescribe a document", (
            "Change a document's title, description and share-link settings without creating a version "
            "(the HTML is not touched): share_enabled=false withdraws the link (404) until set true again; "
            "share_expires_at makes it stop working at that moment (410), null or \"never\" removes the "
            "expiry. Give at least one field. Returns the document as get_document does."), idempotent=True),)),
    Operation(
        "rotate_share_link", "POST", "/api/v1/documents/{document_id}/share/rotate", "rotateShareLink",
        "Give the document a new share link; the old one answers 404 at once.",
        lambda c: wiring.sharing().rotate(c.credentials, c.path["document_id"]),
        models.ShareRotated, errors=(404,), scope=WRITE,
        tools=(Tool("rotate_share_link", "Replace the share link", (
            "Give a document a new share_url, e.g. when the old link leaked: the old link answers 404 at "
            "once (and is dropped from the CDN); versions, feedback and settings stay. Returns the new "
            "share_url; share it with the people who should still have access.")),)),
    Operation(
        "list_recipients", "GET", "/api/v1/documents/{document_id}/recipients", "listRecipients",
        "Who a `recipients` link admits and who opened it: first and last opening, views, revoked.",
        lambda c: wiring.recipients().list(c.credentials, c.path["document_id"]),
        models.RecipientList, errors=(404,), scope=READ,
        tools=(Tool("list_recipients", "List a link's recipients", (
            "For a document shared with share_access \"recipients\": every listed address and every address "
            "verified under a listed @domain, with first_opened_at, last_opened_at, views and revoked."),
            read_only=True),)),
    Operation(
        "revoke_recipient", "DELETE", "/api/v1/documents/{document_id}/recipients/{email}", "revokeRecipient",
        "Revoke one recipient: their next request is refused (within 60 s behind the CDN).",
        lambda c: wiring.recipients().revoke(c.credentials, c.path["document_id"], unquote(c.path["email"])),
        status=204, errors=(404, 422), scope=WRITE,
        tools=(Tool("revoke_recipient", "Revoke a recipient", (
            "Refuse one person a \"recipients\" link from their next request on; they stay listed with "
            "revoked true. Listing the address again in share_recipients admits them again."),
            idempotent=True, destructive=True, result=models.RecipientRevoked),)),
    Operation(
        "set_passphrase", "PUT", "/api/v1/documents/{document_id}/passphrase", "setPassphrase",
        "Protect the share link with a passphrase (Pro).",
        lambda c: wiring.sharing().set_passphrase(c.credentials, c.path["document_id"], c.body.passphrase),
        status=204, request=models.PassphraseRequest, errors=(403, 404), scope=WRITE,
        example={"passphrase": "correct horse"},
        tools=(Tool("set_passphrase", "Protect a share link", (
            "Pro: protect a document's share link with a passphrase (viewers must enter it), or with "
            "passphrase=null make it public again. Weak passphrases are refused with the reason "
            "(validation_error). Returns the document as get_document does (passphrase_protected)."),
            idempotent=True),)),
    Operation(
        "delete_document", "DELETE", "/api/v1/documents/{document_id}", "deleteDocument",
        "Delete a document, its versions, feedback and share link.",
        lambda c: wiring.documents().delete(c.credentials, c.path["document_id"]),
        status=204, errors=(404,), scope=WRITE,
        tools=(Tool("delete_document", "Delete a document", (
            "Permanently delete a document: all its versions, its feedback and its share link (which then "
            "answers 404). Cannot be undone. Frees a slot of the free plan's {free_documents}."),
            idempotent=True, destructive=True),)),
    Operation(
        "list_documents", "GET", "/api/v1/documents", "listDocuments", "List (or find) the workspace's documents.",
        lambda c: wiring.documents().list(c.credentials, c.query.limit, c.query.cursor, c.query.query,
                                          c.query.review_state),
        models.DocumentList, query=models.ListDocumentsQuery, scope=READ,
        tools=(Tool("list_documents", "List documents", (
            "List the workspace's documents, most recently updated first, a page at a time (limit 1 to "
            "100, default 20); pass next_cursor back as cursor for the next page. To look for a document "
            "by name use find_document."), read_only=True),
            Tool("find_document", "Find documents", (
                "Find documents whose title or description contains the query (case-insensitive); exact and "
                "prefix title matches come first. Use it to get the document_id of a document you know by "
                "name."), read_only=True))),
    Operation(
        "me", "GET", "/api/v1/me", "getWorkspace",
        "The key's workspace, plan and entitlements, and the key: who created it and the role it acts with now.",
        lambda c: wiring.workspaces().me(c.credentials), models.MeResponse, scope=READ, tag="workspace",
        tools=(Tool("get_workspace_info", "Workspace and plan", (
            "The workspace this API key belongs to: plan (free or pro), document_count and entitlements "
            "(max_documents, max_html_bytes, write_rate_limit, Pro features), and `key.role`: what this key "
            "may do now (its creator's current role; a viewer's key only reads). Use it to check limits "
            "before publishing."), read_only=True),)),
    Operation(
        "update_workspace", "PATCH", "/api/v1/workspace", "updateWorkspace",
        "The workspace's secret and PII scanning settings (owner).",
        lambda c: wiring.workspaces().update_settings(c.credentials, c.body), models.MeResponse,
        request=models.UpdateWorkspaceRequest, errors=(403,), scope=WRITE, tag="workspace",
        example={"secret_scanning": "warn", "pii_scanning": "warn"}),
    # Exports (contract 7g): a zip of the whole workspace, built in the background.
    Operation(
        "start_export", "POST", "/api/v1/exports", "startExport",
        "Start a zip of the whole workspace (owner): every document's versions as published with their files, "
        "feedback with replies, reviews, activity and provenance. One runs at a time, at most 10 start a day (429).",
        lambda c: wiring.exports().start(c.credentials), models.ExportStarted, status=202, errors=(403, 429),
        scope=WRITE, tag="workspace",
        tools=(Tool("start_export", "Export the workspace", (
            "Owner only: start building a zip of everything in the workspace (every document's versions as "
            "published, with their files, feedback and replies, reviews, the activity log and each version's "
            "provenance). Returns export_id at once; call get_export until status is ready, then download "
            "download_url (valid for an hour). One export runs at a time per workspace, and at most 10 start a "
            "day (rate_limited).")),)),
    Operation(
        "get_export", "GET", "/api/v1/exports/{export_id}", "getExport",
        "An export's status; once ready, the zip's download URL (no credentials needed) and when it expires.",
        lambda c: wiring.exports().status(c.credentials, c.path["export_id"]), models.ExportStatus,
        errors=(403, 404), scope=READ, tag="workspace",
        tools=(Tool("get_export", "Export status", (
            "The status of an export started with start_export: running, ready or failed. Once ready, "
            "download_url serves the zip without credentials until expires_at (an hour); after that the "
            "export is not found: start a new one."), read_only=True),)),
    Operation(
        "list_feedback", "GET", "/api/v1/feedback", "listFeedback",
        "Viewer feedback, newest first; with `since` and `wait`, waits for new feedback or viewer replies.",
        lambda c: wiring.feedback().list(c.credentials, c.query.document_id, c.query.status, c.query.limit,
                                         c.query.cursor, c.query.since, c.query.wait),
        models.FeedbackList, query=models.FeedbackListQuery, errors=(404, 429), scope=FEEDBACK, tag="feedback",
        tools=(Tool("list_feedback", "List viewer feedback", (
            "List feedback viewers left on shared documents, newest first: open by default, or resolved / "
            "all; optionally for one document_id. Each item has the message, the quoted passage (if any) "
            "and the version it was written on. Page with next_cursor."), read_only=True),
            Tool("wait_for_feedback", "Wait for feedback", (
                "Wait (up to timeout_seconds, at most 25) until a viewer leaves feedback or replies to a thread, "
                "optionally on one document_id, and return those threads (with anchor: the exact passage "
                "commented on, and replies). Returns at once if there is already something newer than `since`; "
                "an empty list when the time ran out. Always pass the returned `since` to the next call so "
                "nothing is missed or seen twice. Typical loop: publish, wait_for_feedback, edit_document, "
                "reply_to_feedback, wait again."), read_only=True))),
    Operation(
        "resolve_feedback", "POST", "/api/v1/feedback/{feedback_id}/resolve", "resolveFeedback",
        "Resolve (or reopen) a feedback entry.",
        lambda c: wiring.feedback().resolve(c.credentials, c.path["feedback_id"], c.body.resolved),
        models.Feedback, request=models.ResolveFeedbackRequest, body_optional=True, errors=(404,),
        scope=FEEDBACK, tag="feedback", example={"resolved": True},
        tools=(Tool("resolve_feedback", "Resolve feedback", (
            "Mark a feedback item resolved (or reopen it with resolved=false), e.g. after fixing the "
            "document with edit_document. Returns the updated feedback item."), idempotent=True),)),
    Operation(
        "reply_to_feedback", "POST", "/api/v1/feedback/{feedback_id}/replies", "replyToFeedback",
        "Answer a feedback thread as the owner (the viewer sees it on the share page).",
        lambda c: wiring.feedback().reply(c.credentials, c.path["feedback_id"], c.body.message),
        models.Reply, status=201, request=models.ReplyRequest, errors=(403, 404), scope=FEEDBACK,
        tag="feedback", example={"message": "Fixed in version 3, thanks!"},
        tools=(Tool("reply_to_feedback", "Reply to feedback", (
            "Answer a viewer's feedback thread; the reply shows in the thread on the share page (and the "
            "viewer can answer back). Replying does not resolve the thread: call resolve_feedback for that. "
            "Returns the Reply.")),)),
    Operation(
        "accept_suggestion", "POST", "/api/v1/feedback/{feedback_id}/accept", "acceptSuggestion",
        "Apply a suggested edit as one literal edit of the latest version; the thread is resolved in it.",
        _accept_suggestion,
        models.SuggestionAccepted, request=models.AcceptSuggestionRequest, body_optional=True,
        errors=(403, 404, 409, 413, 422, 429), scope=WRITE, write=True, response_headers=RATE_HEADERS,
        tag="feedback", example={},
        tools=(Tool("accept_suggestion", "Accept a suggested edit", (
            "Apply a viewer's suggested edit (feedback whose `suggestion` is set): its quoted passage is "
            "replaced by the suggestion's replacement in the latest version, as one literal edit (the same "
            "rules and errors as edit_document: edit_not_found with closest_match when the passage is no "
            "longer there, edit_ambiguous). Creates a new version and resolves the thread in it "
            "(resolved_in_version). Accepting twice is already_resolved. To reject a suggestion, "
            "resolve_feedback it.")),)),
    # Reviews (contract 7e): decisions, review requests, waiting for a decision.
    Operation(
        "submit_review", "POST", "/api/v1/documents/{document_id}/reviews", "submitReview",
        "Approve, request changes on, or comment on a version of a document (default: the latest).",
        lambda c: wiring.reviews().submit(c.credentials, c.path["document_id"], c.body),
        models.Review, status=201, request=models.ReviewSubmission, errors=(403, 404), scope=FEEDBACK,
        tag="reviews", example={"decision": "approved", "message": "Reads well; ship it."},
        tools=(Tool("submit_review", "Review a document", (
            "Record a decision on a document's latest version (or version_number): approved, "
            "changes_requested, or commented (a remark that leaves the review state as it is), with an "
            "optional message. Returns the Review; the document's review_state follows (approved once "
            "someone approves and nobody's latest decision on the version is changes_requested).")),)),
    Operation(
        "list_reviews", "GET", "/api/v1/documents/{document_id}/reviews", "listReviews",
        "A document's reviews (newest first) and review state; with `since` and `wait`, waits for a review, "
        "feedback or a viewer reply.",
        lambda c: wiring.reviews().list(c.credentials, c.path["document_id"], c.query.since, c.query.wait),
        models.ReviewList, query=models.ReviewsQuery, errors=(404, 429), scope=FEEDBACK, tag="reviews",
        tools=(Tool("list_reviews", "List reviews", (
            "List a document's reviews (decision, message, reviewer, version_number), newest first, and its "
            "review_state: none, pending, changes_requested or approved (of the latest version)."),
            read_only=True),
            Tool("wait_for_review", "Wait for a review", (
                "Wait (up to timeout_seconds, at most 25) until someone reviews the document, comments on it or "
                "replies to a thread, and return {{review_state, reviews, feedback, since}}: what is newer than "
                "`since`. Returns at once if there is already something; empty lists when the time ran out "
                "(call it again). Always pass the returned `since` to the next call. Loop: publish_document, "
                "request_review, wait_for_review; on changes_requested or feedback, edit_document or "
                "accept_suggestion, reply, wait again; stop when review_state is approved."), read_only=True))),
    Operation(
        "request_review", "POST", "/api/v1/documents/{document_id}/review-requests", "requestReview",
        "Ask members of the workspace (or the link's recipients) to review the latest version; each is mailed a "
        "link to the share page.",
        lambda c: wiring.reviews().request(c.credentials, c.path["document_id"], c.body),
        models.ReviewsRequested, status=202, request=models.ReviewRequestBody, errors=(403, 404, 429), scope=WRITE,
        tag="reviews", example={"reviewers": ["ana@example.com"], "message": "Could you check the numbers?"},
        tools=(Tool("request_review", "Ask for a review", (
            "Ask 1 to 20 people (email addresses of members of this workspace, or recipients its recipients "
            "link admits) to review a document's latest version: each is mailed a link to the share page, where "
            "they approve, request changes or comment, and review_state becomes pending. Mail to recipients "
            "outside the workspace: at most 100 a day per workspace (rate_limited). Then call wait_for_review "
            "for their decision.")),)),
    # Webhooks: REST only (a workspace's integrations, set up by people, not agents).
    Operation(
        "create_webhook", "POST", "/api/v1/webhooks", "createWebhook",
        "Add a webhook (at most 5 per workspace); the answer is the only time the secret is shown.",
        lambda c: wiring.webhooks().create(c.credentials, c.body),
        models.WebhookCreated, status=201, request=models.WebhookCreateRequest, errors=(403,), scope=WRITE,
        tag="webhooks", example={"url": "https://hooks.example.com/docpub", "events": ["feedback.created"]}),
    Operation(
        "list_webhooks", "GET", "/api/v1/webhooks", "listWebhooks", "The workspace's webhooks (never their secrets).",
        lambda c: wiring.webhooks().list(c.credentials), models.WebhookList, scope=READ, tag="webhooks"),
    Operation(
        "delete_webhook", "DELETE", "/api/v1/webhooks/{webhook_id}", "deleteWebhook", "Remove a webhook.",
        lambda c: wiring.webhooks().delete(c.credentials, c.path["webhook_id"]),
        status=204, errors=(404,), scope=WRITE, tag="webhooks"),
    Operation(
        "test_webhook", "POST", "/api/v1/webhooks/{webhook_id}/test", "testWebhook",
        "Queue a `webhook.test` delivery.",
        lambda c: wiring.webhooks().test(c.credentials, c.path["webhook_id"]),
        models.WebhookTestQueued, status=202, errors=(404,), scope=WRITE, tag="webhooks"),
    Operation(
        "rotate_webhook_secret", "POST", "/api/v1/webhooks/{webhook_id}/rotate-secret", "rotateWebhookSecret",
        "A new secret; the previous one also signs for 24 h.",
        lambda c: wiring.webhooks().rotate_secret(c.credentials, c.path["webhook_id"]),
        models.WebhookSecretRotated, errors=(404,), scope=WRITE, tag="webhooks"),
    Operation(
        "webhook_deliveries", "GET", "/api/v1/webhooks/{webhook_id}/deliveries", "listWebhookDeliveries",
        "The newest 50 deliveries of a webhook.",
        lambda c: wiring.webhooks().deliveries(c.credentials, c.path["webhook_id"]),
        models.WebhookDeliveryList, errors=(404,), scope=READ, tag="webhooks"),
    Operation(
        "document_stats", "GET", "/api/v1/documents/{document_id}/stats", "getDocumentStats",
        "Views of the share link: all time, per version, per UTC day of the window.",
        lambda c: wiring.views().stats(c.credentials, c.path["document_id"], c.query.days),
        models.DocumentStats, query=models.StatsQuery, errors=(404,), scope=READ,
        tools=(Tool("get_document_stats", "View statistics", (
            "How often a document's share link was viewed (never by whom): views_total (all time), views "
            "per UTC day over the last `days` days (1 to 90, default 30; oldest first, zeros included) and "
            "all-time views per version. Bots and prefetches are not counted."), read_only=True),)),
    Operation(
        "list_versions", "GET", "/api/v1/documents/{document_id}/versions", "listVersions",
        "Every version of a document, newest first, a page at a time.",
        lambda c: wiring.documents().list_versions(c.credentials, c.path["document_id"], c.query.limit,
                                                   c.query.cursor),
        models.VersionList, query=models.ListVersionsQuery, errors=(404,), scope=READ,
        tools=(Tool("list_versions", "List versions", (
            "List a document's versions (version_id, number, note, created_at, size_bytes), newest first, "
            "a page at a time; pass next_cursor back as cursor for the next page. get_document with "
            "version_id reads one version's HTML."), read_only=True),)),
    Operation(
        "delete_version", "DELETE", "/api/v1/documents/{document_id}/versions/{version_id}", "deleteVersion",
        "Delete one old version and free its storage (the latest: 409 `version_conflict`).",
        lambda c: wiring.documents().delete_version(c.credentials, c.path["document_id"], c.path["version_id"]),
        status=204, errors=(404, 409), scope=WRITE,
        tools=(Tool("delete_version", "Delete an old version", (
            "Permanently delete one old version of a document (its HTML, source and the files only it "
            "used) to free storage or room under the {free_versions} versions a document keeps on the free "
            "plan. The latest version cannot be deleted (version_conflict: publish a new one first, or "
            "delete the document). Version ids come from list_versions. Cannot be undone."),
            idempotent=True, destructive=True, result=models.VersionDeleted),)),
    Operation(
        "get_provenance", "GET", "/api/v1/documents/{document_id}/versions/{version_number}/provenance",
        "getProvenance",
        "A version's signed statement: who published which bytes when (contract 7g). Keys: "
        "/.well-known/docpub-signing-keys.json. A version made before versions were signed: 404 "
        "with details.reason `provenance_unavailable`.",
        lambda c: wiring.provenance().get(c.credentials, c.path["document_id"], c.path["version_number"]),
        models.Provenance, errors=(404,), scope=READ,
        tools=(Tool("get_provenance", "Get a version's provenance", (
            "The signed statement of one version (version_number from list_versions): document, workspace, "
            "version number, the SHA-256 of its content as downloaded and of a bundle's files, when and by whom "
            "(API key, member or connected app) it was published, and the ES256 signature over the statement's "
            "RFC 8785 canonical JSON. Anyone can check it with `docpub verify` against the public keys at "
            "/.well-known/docpub-signing-keys.json."), read_only=True, idempotent=True),)),
    # REST only (MCP: set_passphrase with passphrase=null; uploads and downloads are files).
    Operation(
        "list_activity", "GET", "/api/v1/activity", "listActivity",
        "Who did what in the workspace (member, API key or connected app), newest first, 90 days.",
        lambda c: wiring.activity().list(c.credentials, c.query.limit, c.query.cursor),
        models.ActivityList, query=models.ActivityQuery, scope=READ, tag="workspace"),
    Operation(
        "create_upload", "POST", "/api/v1/uploads", "createUpload",
        "Start a large upload: PUT the file to upload_url, then publish with upload_id.",
        lambda c: wiring.uploads().create(c.credentials, c.body.filename, c.body.size_bytes),
        models.UploadTicket, status=201, request=models.UploadRequest, errors=(403, 413, 429), scope=WRITE,
        example={"filename": "site.zip", "size_bytes": 12582912}),
    Operation(
        "download_document", "GET", "/api/v1/documents/{document_id}/download", "downloadDocument",
        "The latest version (or `version_id`) as a file: .html, .md, or a .zip of a bundle.",
        _download, query=models.DownloadQuery, errors=(404,), scope=READ, response_content={
            media: {"schema": {"type": "string", "format": "binary"}}
            for media in ("text/html", "text/markdown", "application/zip")},
        redirects={302: "Deployed (AWS store), a file over 4 MiB (what a Lambda response can carry): "
                        "`Location` is a presigned S3 URL valid for 60 s that answers the same file "
                        "(the same Content-Type and `Content-Disposition: attachment; filename=…`) "
                        "without credentials. The embedded store always answers 200."}),
    Operation(
        "clear_passphrase", "DELETE", "/api/v1/documents/{document_id}/passphrase", "removePassphrase",
        "Make the share link public again (Pro).",
        lambda c: wiring.sharing().clear_passphrase(c.credentials, c.path["document_id"]),
        status=204, errors=(403, 404), scope=WRITE),
    Operation(
        "health", "GET", "/api/v1/health", "health",
        "Can the service reach its storage? 503 with `{\"status\": \"degraded\", \"reason\": "
        "\"disk_full\"}` when the embedded store's disk is full (writes are refused with 507).",
        _health, models.Health, auth=False, tag="service"),
    Operation(
        "openapi_document", "GET", "/api/v1/openapi.json", "openapi", "This OpenAPI document.",
        None, response_schema={"type": "object"}, auth=False, tag="service"),  # REST builds it (openapi.py)
)


def tools() -> list[tuple[Operation, Tool]]:
    """Every MCP tool with its operation, in the order tools/list shows them."""
    return [(op, tool) for op in OPERATIONS for tool in op.tools]


# Which OAuth scope each MCP tool needs (a tool missing here is refused: services/oauth.py).
TOOL_SCOPES: dict[str, str] = {tool.name: op.scope or WRITE for op, tool in tools()}


def by_name(name: str) -> Operation:
    return next(op for op in OPERATIONS if op.name == name)
