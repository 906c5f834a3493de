"""The MCP tools: thin adapters over the same service functions as REST.

Imported only by the `/mcp` route (and tests): importing this module imports the
`mcp` SDK (~0.6 s), which must never happen when app.py is imported.

Each tool:
- takes typed arguments (pydantic constraints from chalicelib.models, so
  `inputSchema` is precise) and validates them into the same request model as
  its REST route;
- calls ONE service function with the caller's `auth.Credentials`, set for the
  duration of a request with `acting_as()` (a context variable: the route sets
  it, asyncio copies it into every task of the request);
- answers structured content with the REST answer's fields (`outputSchema` is
  the REST response model), or `isError: true` with text that starts with the
  contract's error code and says how to fix it.
"""
from __future__ import annotations

import contextlib
import contextvars
import inspect
import json
import logging
import re
import threading
from typing import Annotated, Any, Callable, Iterator, Literal, Optional, Union, get_args, get_origin

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field, StringConstraints, ValidationError

from chalicelib import errors, operations
from chalicelib.domain import limits
from chalicelib.entrypoints.http import as_error, validate, validation_error
from chalicelib.models import (
    MAX_EDITS, Description, DocumentDeleted, DocumentDetail, DocumentStats, DocumentId, DocumentList, EditOperation,
    EditRequest, EditResponse, Feedback, FeedbackList, FileInput, FeedbackListQuery, GetDocumentQuery, Html,
    ListDocumentsQuery, MeResponse, Note, PassphraseRequest, PublishRequest, PublishResponse,
    Reply, ReplyRequest, ResolveFeedbackRequest, ReviewList, ReviewState, ReviewsQuery, ShareRotated, SinceToken,
    StatsQuery, Title, UpdateDocumentRequest, VersionId,
)
from chalicelib.mcp_instructions import instructions, limit_words
from chalicelib import wiring as registry
from chalicelib.services.auth import Credentials
from chalicelib.services.document_shapes import document_exclusions
from chalicelib.services.access import Actor
from chalicelib.services.oauth import OAuthService, Principal

log = logging.getLogger("docpub.mcp")

SERVER_NAME = "docpub"
_who: contextvars.ContextVar[Union[Credentials, Actor]] = contextvars.ContextVar("docpub_mcp_credentials")
_principal: contextvars.ContextVar[Optional[Principal]] = contextvars.ContextVar("docpub_mcp_principal",
                                                                                default=None)


@contextlib.contextmanager
def acting_as(credentials: Union[Credentials, Principal]) -> Iterator[None]:
    """Run tool calls made inside this block on behalf of an API key's `credentials`,
    or of an OAuth access token's `Principal` (its workspace, within its scopes)."""
    if isinstance(credentials, Principal):
        tokens = (_who.set(Actor(credentials.workspace_id, write_limit_scope=credentials.write_limit_scope,
                                 role=credentials.role, member=credentials.user, client=credentials.client_name,
                                 surface="mcp", client_id=credentials.client_id)),
                  _principal.set(credentials))
    else:
        tokens = (_who.set(credentials), _principal.set(None))
    try:
        yield
    finally:
        _who.reset(tokens[0])
        _principal.reset(tokens[1])


def _credentials() -> Union[Credentials, Actor]:
    try:
        return _who.get()
    except LookupError:  # a tool called outside a request: treat like a missing key
        raise errors.Unauthorized("An API key is required: send 'X-Api-Key: <key>'.") from None


# ------------------------------------------------------------------ results

# How to recover, for codes whose service message does not already say it.
_HINTS = {
    "not_found": "check the id: list_documents, find_document and list_feedback return valid ids",
    "unauthorized": "configure the MCP client with the workspace's API key (X-Api-Key header)",
    "insufficient_scope": "the person who connected this app did not allow that; ask them to reconnect it",
    "invalid_api_key": "the API key is unknown or revoked; configure a valid key",
    "version_conflict": "read the document again with get_document, then retry",
    "already_resolved": "nothing to do: list_feedback shows the thread and resolved_in_version",
    "feature_not_in_plan": "this needs the Pro plan",
    "service_unavailable": "retry the same call in a second",
    "internal_error": "retry once; if it fails again, report the request_id",
}


# A tool whose ids come from somewhere else than the documents and feedback lists.
_TOOL_HINTS = {
    ("get_export", "not_found"): "check the id: start_export returns export_id; an export answers for an hour "
                                 "once ready, then start another",
    ("get_provenance", "not_found"): "check the ids: list_documents gives document ids, list_versions the "
                                     "version numbers; a version made before versions were signed has none",
    ("revoke_recipient", "not_found"): "check the ids: list_documents gives document ids, list_recipients the "
                                       "addresses a link names",
}


def error_result(error: errors.DocpubError, hint: bool = True, tool: Optional[str] = None) -> CallToolResult:
    """`isError: true` with text `<code>: <message> (<hint>) <details as JSON>`; the hint
    is the tool's own when its ids come from another tool."""
    text = f"{error.code}: {error.message}"
    hint_text = _TOOL_HINTS.get((tool or "", error.code)) or _HINTS.get(error.code)
    if hint and hint_text:
        text += f" ({hint_text})"
    if error.details:
        text += " " + json.dumps(error.details, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(is_error=True, content=[TextContent(type="text", text=text)])


def ok_result(model: BaseModel, exclude: Optional[set] = None) -> CallToolResult:
    """Structured content (the REST answer's JSON) plus the same JSON as text for older clients."""
    data = model.model_dump(mode="json", exclude=exclude)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _call(action: Callable[[], BaseModel], exclude: Optional[set] = None) -> CallToolResult:
    try:
        return ok_result(action(), exclude)
    except Exception as exc:  # noqa: BLE001 - mapped by as_error: storage trouble → 503-like, else internal_error
        return error_result(as_error(exc))


# ------------------------------------------------------------------ argument types

# Ids that REST takes in the path are plain strings here too: an id we never
# issued is `not_found` on both surfaces, never a validation error on one.
FeedbackId = Annotated[str, StringConstraints(min_length=1)]
PathDocumentId = Annotated[str, StringConstraints(min_length=1)]
Cursor = Annotated[str, StringConstraints(max_length=2048)]
def _not_a_boolean(value: Any) -> Any:
    """A number or its digits ("1", as REST's path carries it), never true/false: pydantic's lax
    int would read true as 1 (get_provenance(version_number=true) answered version 1)."""
    if isinstance(value, bool):
        raise ValueError("must be a whole number, not true or false")
    return value


# Ends every integer argument of a tool, after its own Field (bounds, description): REST answers
# 422 for a boolean where a number belongs, so does MCP (never true = 1, false = 0). Last, not
# first (Annotated[Annotated[int, NOT_A_BOOLEAN], Field(ge=1)]): bounds given after a validator
# reach the JSON schema as "ge"/"le", which no client reads, instead of minimum/maximum.
NOT_A_BOOLEAN = BeforeValidator(_not_a_boolean)
Limit = Annotated[int, Field(ge=1, le=100)]
DOC_ID = "The document's id (a UUID) as returned by publish_document, list_documents or find_document."


# ------------------------------------------------------------------ the tools

SHARE_ENABLED = ("false: the share link answers 404 until set back to true (the document itself stays); "
                 "true: it works again.")
SHARE_EXPIRES_AT = ("When the share link stops working (it then answers 410 \"expired\"): an RFC 3339 "
                    "timestamp in the future, at most 366 days ahead, e.g. 2026-12-31T23:00:00Z; null or "
                    "\"never\" removes the expiry.")
SHARE_ACCESS = ("\"public\": anyone with the link opens it; \"workspace\": only signed-in members of this "
                "workspace (others are asked to sign in first); \"recipients\": only the people of "
                "share_recipients, who confirm their email address with a 6-digit code (members too).")
SHARE_RECIPIENTS = ("Who may open a \"recipients\" link: 1 to 100 email addresses and/or domains written "
                    "@example.com (any verified address there). Replaces the list; a removed entry loses "
                    "access at once.")
NEVER = "never"


def _link_settings(share_enabled: Optional[bool], share_expires_at: Optional[str],
                   share_access: Optional[str] = None, share_recipients: Optional[list[str]] = None) -> dict:
    """The REST body's link fields: `"never"` is an explicit null (clears the expiry)."""
    given: dict = {}
    if share_access is not None:
        given["share_access"] = share_access
    if share_recipients is not None:
        given["share_recipients"] = share_recipients
    if share_enabled is not None:
        given["share_enabled"] = share_enabled
    if share_expires_at is not None:
        given["share_expires_at"] = None if share_expires_at.strip().lower() == NEVER else share_expires_at
    return given


async def publish_document(
    html: Annotated[Html, Field(description=(
        "The complete HTML of the document (a full page or a fragment), or with format=\"markdown\" its "
        f"Markdown source. At most {limits.html_size_text()} (for Markdown, the source and its page each); "
        "put images in `files` or host them at a URL "
        "instead of inlining base64."))],
    title: Annotated[Optional[Title], Field(description=(
        "Document title, 1 to 500 characters. Omit it to use the page's <title> or first <h1> (for "
        "Markdown, its first heading)."))] = None,
    format: Annotated[Optional[Literal["html", "markdown"]], Field(description=(
        "\"html\" (default) or \"markdown\": send Markdown when you are writing prose, notes or reports "
        "(GFM tables, task lists, fenced code with highlighting); the service renders a typeset, "
        "mobile-friendly page and keeps the source for edits."))] = None,
    files: Annotated[Optional[list[FileInput]], Field(description=(
        "Files beside the page, e.g. [{\"path\": \"img/chart.png\", \"content\": \"<base64>\", "
        "\"encoding\": \"base64\"}, {\"path\": \"style.css\", \"content\": \"body{...}\"}]; the page "
        "references them by relative path (<img src=\"img/chart.png\">). At most 200 files, 32 MiB in all; "
        "a new version replaces the whole set."))] = None,
    document_id: Annotated[Optional[DocumentId], Field(description=(
        "Omit to create a new document. Give an existing document's id to publish this HTML as its next "
        "version (the share_url stays the same)."))] = None,
    note: Annotated[Optional[Note], Field(description="Optional note about this version (up to 2,000 characters).")] = None,
    description: Annotated[Optional[Description], Field(description=(
        "Optional description (up to 5,000 characters); searched by find_document."))] = None,
    share_enabled: Annotated[Optional[bool], Field(description=SHARE_ENABLED)] = None,
    share_expires_at: Annotated[Optional[str], Field(max_length=40, description=SHARE_EXPIRES_AT)] = None,
    share_access: Annotated[Optional[Literal["public", "workspace", "recipients"]],
                            Field(description=SHARE_ACCESS)] = None,
    share_recipients: Annotated[Optional[list[str]], Field(description=SHARE_RECIPIENTS)] = None,
    allow_secrets: Annotated[Optional[bool], Field(description=(
        "Leave unset. The content is scanned for credentials (API keys, tokens, private keys, passwords) "
        "before it is stored; if the workspace blocks them the call fails with secret_detected and the "
        "place of each. Remove them and call again; pass true only when the person you work for confirms "
        "the value must be published (the activity log records it)."))] = None,
) -> Annotated[CallToolResult, PublishResponse]:
    def action():
        request = validate(PublishRequest, {
            **_given(title=title, html=html, document_id=document_id, note=note, description=description,
                     format=format, files=[f.model_dump() for f in files] if files is not None else None,
                     allow_secrets=allow_secrets),
            **_link_settings(share_enabled, share_expires_at, share_access, share_recipients)})
        return registry.documents().publish(_credentials(), request).response

    return _call(action)


async def edit_document(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
    edits: Annotated[list[EditOperation], Field(min_length=1, max_length=MAX_EDITS, description=(
        f"1 to {limits.EDITS_PER_REQUEST} search-and-replace edits, applied in order to the latest version; "
        "each edit sees the result of the previous ones. old_string must occur in the document exactly (literal, "
        "case-sensitive, whitespace included) and exactly once unless replace_all is true."))],
    note: Annotated[Optional[Note], Field(description="Optional note about the new version.")] = None,
    allow_secrets: Annotated[Optional[bool], Field(description=(
        "Leave unset. The content is scanned for credentials (API keys, tokens, private keys, passwords) "
        "before it is stored; if the workspace blocks them the call fails with secret_detected and the "
        "place of each. Remove them and call again; pass true only when the person you work for confirms "
        "the value must be published (the activity log records it)."))] = None,
) -> Annotated[CallToolResult, EditResponse]:
    def action():
        request = validate(EditRequest, _given(edits=[e.model_dump() for e in edits], note=note,
                                               allow_secrets=allow_secrets))
        return registry.documents().edit(_credentials(), document_id, request).response

    return _call(action)


async def get_document(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
    include_html: Annotated[bool, Field(description=(
        f"true to include the HTML (up to {limits.html_size_short()}); leave false when you only need "
        "metadata."))] = False,
    version_id: Annotated[Optional[VersionId], Field(description=(
        "Read this version's HTML instead of the latest (ids are in `versions`)."))] = None,
    include_source: Annotated[bool, Field(description=(
        "true to include `format` and `source`: the Markdown a Markdown document was published from (edit "
        "that text with edit_document), or the HTML of an HTML document."))] = False,
) -> Annotated[CallToolResult, DocumentDetail]:
    def action():
        query = validate(GetDocumentQuery, _given(include_html=include_html, version_id=version_id,
                                                  include_source=include_source))
        return registry.documents().get(_credentials(), document_id, query.include_html, query.version_id,
                                        query.include_source)

    return _call(action, exclude=document_exclusions(include_html, include_source))


async def update_document(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
    title: Annotated[Optional[Title], Field(description="New title, 1 to 500 characters.")] = None,
    description: Annotated[Optional[Description], Field(description="New description, up to 5,000 characters.")] = None,
    share_enabled: Annotated[Optional[bool], Field(description=SHARE_ENABLED)] = None,
    share_expires_at: Annotated[Optional[str], Field(max_length=40, description=SHARE_EXPIRES_AT)] = None,
    share_access: Annotated[Optional[Literal["public", "workspace", "recipients"]],
                            Field(description=SHARE_ACCESS)] = None,
    share_recipients: Annotated[Optional[list[str]], Field(description=SHARE_RECIPIENTS)] = None,
) -> Annotated[CallToolResult, DocumentDetail]:
    def action():
        request = validate(UpdateDocumentRequest, {**_given(title=title, description=description),
                                                   **_link_settings(share_enabled, share_expires_at, share_access, share_recipients)})
        return registry.documents().update(_credentials(), document_id, request)

    return _call(action, exclude=document_exclusions(False, False))


async def rotate_share_link(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
) -> Annotated[CallToolResult, ShareRotated]:
    return _call(lambda: registry.sharing().rotate(_credentials(), document_id))


async def set_passphrase(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
    passphrase: Annotated[Optional[str], Field(description=(
        "The passphrase viewers must enter (8 to 200 characters, not easy to guess: a few uncommon "
        "words work well). null removes the passphrase and makes the link public again."))],
) -> Annotated[CallToolResult, DocumentDetail]:
    def action():
        sharing = registry.sharing()
        if passphrase is None:
            sharing.clear_passphrase(_credentials(), document_id)
        else:
            sharing.set_passphrase(_credentials(), document_id,
                                   validate(PassphraseRequest, {"passphrase": passphrase}).passphrase)
        return registry.documents().get(_credentials(), document_id)

    return _call(action, exclude=document_exclusions(False, False))


async def delete_document(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
) -> Annotated[CallToolResult, DocumentDeleted]:
    def action():
        registry.documents().delete(_credentials(), document_id)
        return DocumentDeleted(document_id=document_id, deleted=True)

    return _call(action)


async def list_documents(
    limit: Annotated[Limit, Field(description="Page size, 1 to 100."), NOT_A_BOOLEAN] = 20,
    cursor: Annotated[Optional[Cursor], Field(description=(
        "next_cursor from the previous page; omit for the first page."))] = None,
    review_state: Annotated[Optional[ReviewState], Field(description=(
        "Only documents in this review state: none, pending, changes_requested or approved."))] = None,
) -> Annotated[CallToolResult, DocumentList]:
    def action():
        query = validate(ListDocumentsQuery, _given(limit=limit, cursor=cursor, review_state=review_state))
        return registry.documents().list(_credentials(), query.limit, query.cursor, None, query.review_state)

    return _call(action)


async def find_document(
    query: Annotated[str, StringConstraints(max_length=500), Field(description=(
        "Words to look for in titles and descriptions (case-insensitive substring; exact title "
        "matches first); an empty query lists every document."))],
    limit: Annotated[Limit, Field(description="Page size, 1 to 100."), NOT_A_BOOLEAN] = 20,
    cursor: Annotated[Optional[Cursor], Field(description="next_cursor from the previous page.")] = None,
) -> Annotated[CallToolResult, DocumentList]:
    def action():
        # A blank query is no filter, as in GET /api/v1/documents?query= (the service decides).
        parsed = validate(ListDocumentsQuery, _given(limit=limit, cursor=cursor, query=query))
        return registry.documents().list(_credentials(), parsed.limit, parsed.cursor, parsed.query)

    return _call(action)


async def get_workspace_info() -> Annotated[CallToolResult, MeResponse]:
    return _call(lambda: registry.workspaces().me(_credentials()))


async def list_feedback(
    document_id: Annotated[Optional[DocumentId], Field(description="Only this document's feedback.")] = None,
    status: Annotated[Literal["open", "resolved", "all"], Field(description=(
        "open (default) for feedback still to handle, resolved, or all."))] = "open",
    limit: Annotated[Limit, Field(description="Page size, 1 to 100."), NOT_A_BOOLEAN] = 20,
    cursor: Annotated[Optional[Cursor], Field(description="next_cursor from the previous page.")] = None,
) -> Annotated[CallToolResult, FeedbackList]:
    def action():
        query = validate(FeedbackListQuery, _given(document_id=document_id, status=status, limit=limit,
                                                   cursor=cursor))
        return registry.feedback().list(_credentials(), document_id=query.document_id, status=query.status,
                                        limit=query.limit, cursor=query.cursor)

    return _call(action)


async def resolve_feedback(
    feedback_id: Annotated[FeedbackId, Field(description="The feedback_id from list_feedback.")],
    resolved: Annotated[bool, Field(description="true (default) marks it resolved; false reopens it.")] = True,
) -> Annotated[CallToolResult, Feedback]:
    def action():
        request = validate(ResolveFeedbackRequest, {"resolved": resolved})
        return registry.feedback().resolve(_credentials(), feedback_id, resolved=request.resolved)

    return _call(action)


async def reply_to_feedback(
    feedback_id: Annotated[FeedbackId, Field(description="The feedback_id from list_feedback or wait_for_feedback.")],
    message: Annotated[str, Field(description="Your answer, 1 to 5,000 characters; the viewer sees it on the page.")],
) -> Annotated[CallToolResult, Reply]:
    def action():
        request = validate(ReplyRequest, {"message": message})
        return registry.feedback().reply(_credentials(), feedback_id, request.message)

    return _call(action)


async def wait_for_feedback(
    document_id: Annotated[Optional[DocumentId], Field(description="Only this document's feedback.")] = None,
    since: Annotated[Optional[SinceToken], Field(description=(
        "`since` from the previous answer of this tool (or list_feedback) for the same document_id; omit the "
        "first time to wait for anything newer than now."))] = None,
    timeout_seconds: Annotated[int, Field(ge=0, le=25, description=(
        "How long to wait, 0 to 25 seconds (default 25).")), NOT_A_BOOLEAN] = 25,
) -> Annotated[CallToolResult, FeedbackList]:
    def action():
        query = validate(FeedbackListQuery, _given(document_id=document_id, since=since, wait=timeout_seconds))
        return registry.feedback().list(_credentials(), document_id=query.document_id, since=query.since,
                                        wait=query.wait if query.wait is not None else 0)

    return _call(action)


async def list_reviews(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
) -> Annotated[CallToolResult, ReviewList]:
    return _call(lambda: registry.reviews().list(_credentials(), document_id))


async def wait_for_review(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
    since: Annotated[Optional[SinceToken], Field(description=(
        "`since` from the previous answer of this tool (or list_reviews) for the same document; omit the first "
        "time to wait for anything newer than now."))] = None,
    timeout_seconds: Annotated[int, Field(ge=0, le=25, description=(
        "How long to wait, 0 to 25 seconds (default 25).")), NOT_A_BOOLEAN] = 25,
) -> Annotated[CallToolResult, ReviewList]:
    def action():
        query = validate(ReviewsQuery, _given(since=since, wait=timeout_seconds))
        return registry.reviews().list(_credentials(), document_id, since=query.since,
                                       wait=query.wait if query.wait is not None else 0, waiting=True)

    return _call(action)


async def get_document_stats(
    document_id: Annotated[PathDocumentId, Field(description=DOC_ID)],
    days: Annotated[int, Field(ge=1, le=90, description="Days of the window, ending today (UTC), 1 to 90."),
                    NOT_A_BOOLEAN] = 30,
) -> Annotated[CallToolResult, DocumentStats]:
    def action():
        query = validate(StatsQuery, {"days": days})
        return registry.views().stats(_credentials(), document_id, query.days)

    return _call(action)


def _given(**values: Any) -> dict:
    """Only the arguments the caller gave (None = not given), as REST would see them."""
    return {k: v for k, v in values.items() if v is not None}


# Tools with a hand-written, typed function (argument descriptions of their own);
# any other tool of the registry gets one built from its operation's models.
HANDWRITTEN: dict[str, Callable] = {fn.__name__: fn for fn in (
    publish_document, edit_document, get_document, update_document, rotate_share_link, set_passphrase,
    delete_document, list_documents, find_document, get_workspace_info, list_feedback, resolve_feedback,
    reply_to_feedback, wait_for_feedback, get_document_stats, list_reviews, wait_for_review)}


def _annotations(tool: operations.Tool) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=tool.destructive,
                           idempotent_hint=tool.read_only or tool.idempotent, open_world_hint=False)


PATH_DESCRIPTIONS = {"document_id": DOC_ID, "feedback_id": "The feedback_id from list_feedback.",
                     "email": "The recipient's email address (from list_recipients)."}
# Path parameters that are numbers to an agent (REST carries them as path text).
PATH_TYPES: dict[str, Any] = {
    "version_number": Annotated[int, Field(ge=1, description="The version's number (from list_versions)."),
                                NOT_A_BOOLEAN]}



def _integer(annotation: Any) -> bool:
    """int, Annotated[int, ...] or an Optional of them: an argument that must refuse true/false
    (the SDK would read true as 1 before the request model, strict as REST, sees it)."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Union:
        members = [a for a in get_args(annotation) if a is not type(None)]
        return len(members) == 1 and _integer(members[0])
    return annotation is int


def generated_tool(op: operations.Operation, tool: operations.Tool) -> Callable:
    """A tool function for `op` whose arguments are its path parameters and the fields
    of its query and request models (same names, constraints and descriptions as REST),
    validated into those models and handed to the operation's `call`."""
    response = op.response or tool.result
    if response is None:
        raise TypeError(f"{op.name}: a generated tool needs a response model (or Tool.result for a 204)")
    call = op.call
    if call is None:
        raise TypeError(f"{op.name}: a generated tool needs the operation's call")
    path_names = re.findall(r"\{([^}]+)\}", op.path)
    parameters = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=PATH_TYPES.get(name) or Annotated[
        str, StringConstraints(min_length=1), Field(description=PATH_DESCRIPTIONS.get(name, name))])
        for name in path_names]
    fields: dict[str, list[str]] = {"query": [], "body": []}
    for where, model in (("query", op.query), ("body", op.request)):
        for name, info in (model.model_fields.items() if model is not None else ()):
            refusals = (NOT_A_BOOLEAN,) if _integer(info.annotation) else ()
            annotation = Annotated[(info.annotation, *info.metadata, Field(description=info.description),  # type: ignore[name-defined]
                                    *refusals)]
            default = inspect.Parameter.empty if info.is_required() else info.get_default()
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                                default=default))
            fields[where].append(name)

    async def run(**arguments: Any) -> CallToolResult:
        def action():
            query = validate(op.query, _given(**{n: arguments.get(n) for n in fields["query"]})) \
                if op.query is not None else None
            body = validate(op.request, _given(**{n: arguments.get(n) for n in fields["body"]})) \
                if op.request is not None else None
            return call(operations.Call(_credentials(), {n: str(arguments[n]) for n in path_names}, body, query))

        try:
            answer = action()
        except Exception as exc:  # noqa: BLE001 - mapped by as_error, like every tool
            return error_result(as_error(exc), tool=tool.name)
        if isinstance(answer, operations.Reply):
            if not isinstance(answer.body, BaseModel):
                raise TypeError(f"{op.name} answered no model")
            return ok_result(answer.body, answer.exclude)
        if answer is None and tool.result is not None:
            done = {"deleted": True} if "deleted" in tool.result.model_fields else {}
            return ok_result(tool.result(**{n: arguments[n] for n in path_names}, **done))
        return ok_result(answer)

    run.__name__ = tool.name
    run.__doc__ = tool.description
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=Annotated[CallToolResult, response])
    return run


# name → (function, title, annotations, description), in the registry's order;
# {placeholders} in a description are filled from the limits table
# (mcp_instructions.limit_words) when a server is built.
TOOLS: dict[str, tuple[Callable, str, ToolAnnotations, str]] = {
    tool.name: (HANDWRITTEN.get(tool.name) or generated_tool(op, tool), tool.title, _annotations(tool),
                tool.description)
    for op, tool in operations.tools()
}


class DocpubMCP(MCPServer):
    """MCPServer whose argument errors read like the contract's `validation_error`."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            # The ids hint of not_found would mislead here: the tool name is what is wrong.
            return error_result(errors.NotFound(f"There is no tool named {name!r}; the tools are "
                                                + ", ".join(TOOLS) + "."), hint=False)
        try:
            OAuthService.require_scope(_principal.get(), name, operations.TOOL_SCOPES.get(name))
        except errors.DocpubError as exc:
            return error_result(exc)
        if arguments.get("share_expires_at", NEVER) is None:
            arguments = {**arguments, "share_expires_at": NEVER}  # an explicit null clears it, as in REST
        unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
        if unknown:
            return error_result(errors.ValidationFailed(
                f"{unknown[0]}: is not an argument of {name}",
                {"fields": [{"field": f, "message": "is not an argument of this tool"} for f in unknown]}))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return error_result(validation_error(exc.__cause__))
            raise


def tool_descriptions() -> dict[str, str]:
    """Each tool's description with today's limits (read from config now, not at import)."""
    words = limit_words()
    return {name: description.format(**words) for name, (_fn, _title, _ann, description) in TOOLS.items()}


def build_server() -> DocpubMCP:
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every request at INFO
    server = DocpubMCP(name=SERVER_NAME, title="Docpub", instructions=instructions(), version="1",
                       log_level="WARNING")
    descriptions = tool_descriptions()
    for name, (fn, title, tool_annotations, _description) in TOOLS.items():
        server.add_tool(fn, name=name, title=title, description=descriptions[name], annotations=tool_annotations)
    return server


# Idle servers by the limit texts they were built with: a changed setting builds new ones.
_idle: dict[tuple, list[DocpubMCP]] = {}
_idle_lock = threading.Lock()


@contextlib.contextmanager
def checked_out() -> Iterator[DocpubMCP]:
    """A server used by one request at a time: never shared by two threads at once
    (chalice local serves each request on a new thread), reused across requests
    (building one costs ~50 ms; Lambda reuses it on every warm invocation)."""
    texts = tuple(sorted(limit_words().items()))
    with _idle_lock:
        pool = _idle.get(texts)
        instance = pool.pop() if pool else None
        if pool is None:
            _idle.clear()  # servers built with other limits are never handed out again
            _idle[texts] = []
    if instance is None:
        instance = build_server()
    try:
        yield instance
    finally:
        with _idle_lock:
            _idle.setdefault(texts, []).append(instance)


# ------------------------------------------------------------------ Streamable HTTP, one request at a time

# Above the SDK's 4 MiB default so a 4 MiB document (plus JSON escaping) reaches
# the service, which answers document_too_large itself; API Gateway caps at 10 MB.
MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024


def serve_http(credentials: Credentials, headers: dict[str, str], body: bytes,
               path: str = "/mcp") -> tuple[int, dict[str, str], bytes]:
    """Answer one Streamable HTTP POST (stateless, JSON responses) on behalf of `credentials`.

    A fresh session manager per request (one cannot be reused after its run,
    SDK issue #3121), driven by its own event loop on the calling thread.
    """
    with checked_out() as instance:
        return _serve(instance, credentials, headers, body, path)


def _serve(instance: DocpubMCP, credentials: Credentials, headers: dict[str, str], body: bytes,
           path: str) -> tuple[int, dict[str, str], bytes]:
    import anyio
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    manager = StreamableHTTPSessionManager(
        app=instance._lowlevel_server, stateless=True, json_response=True,
        # Host/Origin checks protect servers on localhost from DNS rebinding; this one is
        # reached through API Gateway (Host is the gateway's) and every call needs an API key.
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=MAX_REQUEST_BODY_BYTES)
    lowered = {k.lower(): v for k, v in headers.items()}
    lowered.setdefault("accept", "application/json")  # we only ever answer JSON
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "https", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in lowered.items()],
        "server": ("docpub", 443), "client": ("0.0.0.0", 0),
    }
    answer: dict[str, Any] = {"status": 500, "headers": [], "body": bytearray()}
    delivered = False

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # nothing more will come; wait to be cancelled

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = message.get("headers", [])
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    async def run():
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    with acting_as(credentials):
        anyio.run(run)
    out_headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in answer["headers"]}
    return answer["status"], out_headers, bytes(answer["body"])
