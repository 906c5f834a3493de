"""OpenAPI 3.1 document of the REST API, generated from the pydantic models.

`OPERATIONS` is the one declarative table beside app.py's route table: per REST
operation its request body, query and response models, success status and the
contract's error statuses. The document is built from it with pydantic's
`model_json_schema` (refs point at `#/components/schemas`), and only for the
routes that actually exist in `app.routes`: an operation declared here before
its route is merged is simply left out, and a route without a declaration makes
`document()` fail (tests/test_openapi.py keeps both sides and docs/openapi.json
in step; `make openapi` rewrites the committed copy).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import BaseModel, TypeAdapter

from chalicelib import models

REF_TEMPLATE = "#/components/schemas/{model}"
API_PREFIX = "/api/v1"
# The only view name routing.add_method_not_allowed gives its 405 fillers.
FILLER_VIEW = "method_not_allowed"

# What each error status means (docs/contract.md, Errors); every one is an ErrorBody.
ERROR_TEXT = {
    400: ("`invalid_json`: the body is not valid JSON or not a JSON object; `invalid_request`: a header "
          "value the server cannot decode (not Latin-1)."),
    401: "`unauthorized` (no key) or `invalid_api_key` (unknown, revoked or malformed key).",
    403: ("`plan_limit_reached` (a plan cap; for storage and versions per document "
          "`details.entitlement` names it) or `feature_not_in_plan`. (Deployed behind CloudFront with an origin "
          "secret, any request that bypasses CloudFront is 403 `forbidden`.)"),
    404: "`not_found`: no such document (or it belongs to another workspace).",
    409: "`version_conflict`: `base_version_id` is not the latest version.",
    413: ("`document_too_large`: the HTML is over the size limit, or the request body is over the route's "
          "cap (6 MiB, refused unread; `details.limit_bytes` is then the cap). For an edit "
          "batch, `details.edit_index` is the first edit whose result would exceed it and "
          "`details.size_bytes` the size that edit would produce (nothing larger is built)."),
    415: "`unsupported_media_type`: the body is not `application/json` (publish: nor `multipart/form-data`).",
    422: ("`validation_error` (also for a `cursor` this service did not issue to this workspace and "
          "listing, and for a passphrase that is too easy to guess, with the reason), or for edits "
          "`edit_not_found` / `edit_ambiguous` / `no_change`."),
    429: "`rate_limited`: retry after `Retry-After` seconds.",
    500: ("`internal_error`: unexpected; `details.request_id` (its own for every failure) identifies it "
          "in the logs. A version whose HTML is missing from storage is a 500 with `details.version_id` "
          "(not retryable: publish the document again to repair it)."),
    503: "`service_unavailable`: storage is busy or unreachable; retry after `Retry-After` seconds.",
    507: ("`insufficient_storage`: the embedded store's disk is full; nothing was written (reads and "
          "deletes still work)."),
}

INT_HEADER = {"schema": {"type": "integer"}}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "required": True,
                               **INT_HEADER}}
RATE_HEADERS = {
    "X-RateLimit-Limit": {"description": "Accepted writes allowed per window.", **INT_HEADER},
    "X-RateLimit-Remaining": {"description": "Writes left in the current rolling window.", **INT_HEADER},
    "X-RateLimit-Reset": {"description": "Seconds until a write slot frees.", **INT_HEADER},
}
ERROR_HEADERS = {
    401: {"WWW-Authenticate": {"description": "`Bearer realm=\"docpub\"`", "required": True,
                               "schema": {"type": "string"}}},
    429: RETRY_AFTER,
    503: RETRY_AFTER,
}

# Path parameters by name: the schema says what the service can ever find.
PATH_PARAMETERS: dict[str, tuple[Any, str]] = {
    "document_id": (models.DocumentId, "A document's id (UUID)."),
    "feedback_id": (str, "A feedback entry's id."),
    "webhook_id": (str, "A webhook's id."),
    "version_id": (str, "A version's id."),
    "upload_id": (str, "An upload's id (`up_…`)."),
}

SECURITY_SCHEMES = {
    "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-Api-Key",
                     "description": "An API key (`dpk_…`). Missing: 401 `unauthorized`; "
                                    "unknown or revoked: 401 `invalid_api_key`."},
    "BearerAuth": {"type": "http", "scheme": "bearer",
                   "description": "The same API key as `Authorization: Bearer <key>`."},
}
KEY_SECURITY = [{"ApiKeyHeader": []}, {"BearerAuth": []}]


def _link(operation_id: str, description: str) -> dict:
    return {"operationId": operation_id, "description": description,
            "parameters": {"document_id": "$response.body#/document_id"}}


DOCUMENT_LINKS = {
    "GetDocument": _link("getDocument", "Read the document just written."),
    "EditDocument": _link("editDocument", "Edit the document just written."),
    "UpdateDocument": _link("updateDocument", "Change its title or description."),
    "DeleteDocument": _link("deleteDocument", "Delete it."),
}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    response: Optional[type[BaseModel]] = None  # None: no body (204) or `response_schema`
    status: int = 200
    request: Optional[type[BaseModel]] = None
    query: Optional[type[BaseModel]] = None
    errors: tuple[int, ...] = ()
    auth: bool = True
    tag: str = "documents"
    response_schema: Optional[dict] = None
    response_headers: dict = field(default_factory=dict)
    header_parameters: tuple[dict, ...] = ()
    links: dict = field(default_factory=dict)
    example: Optional[dict] = None  # a valid request body (also used by the authorization matrix)
    response_content: Optional[dict] = None  # a non-JSON answer: {media type: {"schema": …}}
    extra_request_content: Optional[dict] = None  # other request media types beside JSON


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": "A retry with the same key and body within 24 h returns the first answer.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
}

OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/api/v1/health", "health",
              "Can the service reach its storage? 503 with `{\"status\": \"degraded\", \"reason\": "
              "\"disk_full\"}` when the embedded store's disk is full (writes are refused with 507).",
              models.Health, auth=False, tag="service"),
    Operation("GET", "/api/v1/openapi.json", "openapi", "This OpenAPI document.",
              response_schema={"type": "object"}, auth=False, tag="service"),
    Operation("GET", "/api/v1/me", "getWorkspace", "The key's workspace, plan and entitlements.",
              models.MeResponse, tag="workspace"),
    Operation("POST", "/api/v1/publish", "publish", "Create a document or append a version.",
              models.PublishResponse, request=models.PublishRequest, errors=(403, 404, 409, 413, 429),
              response_headers=RATE_HEADERS, header_parameters=(IDEMPOTENCY_KEY,), links=DOCUMENT_LINKS,
              extra_request_content={"multipart/form-data": {"schema": {
                  "type": "object", "required": ["file"], "properties": {
                      "file": {"type": "string", "format": "binary", "description": (
                          ".html, .htm, .md, .markdown, or a .zip whose root (or single top folder) holds "
                          "index.html or index.md")},
                      **{name: {"type": "string"} for name in ("title", "document_id", "note", "description")}}}}},
              example={"title": "Release notes", "html": "<h1>Release notes</h1><p>Draft</p>",
                       "note": "first draft"}),
    Operation("POST", "/api/v1/uploads", "createUpload",
              "Start a large upload: PUT the file to upload_url, then publish with upload_id.",
              models.UploadTicket, status=201, request=models.UploadRequest, errors=(413,),
              example={"filename": "site.zip", "size_bytes": 12582912}),
    Operation("GET", "/api/v1/documents/{document_id}/download", "downloadDocument",
              "The latest version (or `version_id`) as a file: .html, .md, or a .zip of a bundle.",
              query=models.DownloadQuery, errors=(404,), response_content={
                  media: {"schema": {"type": "string", "format": "binary"}}
                  for media in ("text/html", "text/markdown", "application/zip")}),
    Operation("GET", "/api/v1/documents", "listDocuments", "List (or find) the workspace's documents.",
              models.DocumentList, query=models.ListDocumentsQuery),
    Operation("GET", "/api/v1/documents/{document_id}", "getDocument", "A document and its versions.",
              models.DocumentDetail, query=models.GetDocumentQuery, errors=(404,)),
    Operation("PATCH", "/api/v1/documents/{document_id}", "updateDocument",
              "Change title and/or description (no new version).",
              models.DocumentDetail, request=models.UpdateDocumentRequest, errors=(404,),
              example={"title": "Release notes (final)"}),
    Operation("DELETE", "/api/v1/documents/{document_id}", "deleteDocument",
              "Delete a document, its versions, feedback and share link.", status=204, errors=(404,)),
    Operation("GET", "/api/v1/documents/{document_id}/versions", "listVersions",
              "Every version of a document, newest first, a page at a time.", models.VersionList,
              query=models.ListVersionsQuery, errors=(404,)),
    Operation("DELETE", "/api/v1/documents/{document_id}/versions/{version_id}", "deleteVersion",
              "Delete one old version and free its storage (the latest: 409 `version_conflict`).",
              status=204, errors=(404, 409)),
    Operation("POST", "/api/v1/documents/{document_id}/edit", "editDocument",
              "Apply a batch of literal edits as one new version.",
              models.EditResponse, request=models.EditRequest, errors=(403, 404, 409, 413, 429),
              response_headers=RATE_HEADERS, links=DOCUMENT_LINKS,
              example={"edits": [{"old_string": "Draft", "new_string": "Final"}], "note": "final"}),
    # Declared ahead of their routes: documented as soon as the routes exist.
    Operation("GET", "/api/v1/activity", "listActivity",
              "Who did what in the workspace (member, API key or connected app), newest first, 90 days.",
              models.ActivityList, query=models.ActivityQuery, tag="workspace"),
    Operation("GET", "/api/v1/feedback", "listFeedback",
              "Viewer feedback, newest first; with `since` and `wait`, waits for new feedback or viewer replies.",
              models.FeedbackList, query=models.FeedbackListQuery, errors=(404,), tag="feedback"),
    Operation("POST", "/api/v1/feedback/{feedback_id}/resolve", "resolveFeedback",
              "Resolve (or reopen) a feedback entry.", models.Feedback,
              request=models.ResolveFeedbackRequest, errors=(404,), tag="feedback",
              example={"resolved": True}),
    Operation("POST", "/api/v1/feedback/{feedback_id}/replies", "replyToFeedback",
              "Answer a feedback thread as the owner (the viewer sees it on the share page).", models.Reply,
              status=201, request=models.ReplyRequest, errors=(403, 404), tag="feedback",
              example={"message": "Fixed in version 3, thanks!"}),
    Operation("POST", "/api/v1/webhooks", "createWebhook",
              "Add a webhook (at most 5 per workspace); the answer is the only time the secret is shown.",
              models.WebhookCreated, status=201, request=models.WebhookCreateRequest, errors=(403,), tag="webhooks",
              example={"url": "https://hooks.example.com/docpub", "events": ["feedback.created"]}),
    Operation("GET", "/api/v1/webhooks", "listWebhooks", "The workspace's webhooks (never their secrets).",
              models.WebhookList, tag="webhooks"),
    Operation("DELETE", "/api/v1/webhooks/{webhook_id}", "deleteWebhook", "Remove a webhook.", status=204,
              errors=(404,), tag="webhooks"),
    Operation("POST", "/api/v1/webhooks/{webhook_id}/test", "testWebhook",
              "Queue a `webhook.test` delivery.", models.WebhookTestQueued, status=202, errors=(404,),
              tag="webhooks"),
    Operation("POST", "/api/v1/webhooks/{webhook_id}/rotate-secret", "rotateWebhookSecret",
              "A new secret; the previous one also signs for 24 h.", models.WebhookSecretRotated, errors=(404,),
              tag="webhooks"),
    Operation("GET", "/api/v1/webhooks/{webhook_id}/deliveries", "listWebhookDeliveries",
              "The newest 50 deliveries of a webhook.", models.WebhookDeliveryList, errors=(404,), tag="webhooks"),
    Operation("PUT", "/api/v1/documents/{document_id}/passphrase", "setPassphrase",
              "Protect the share link with a passphrase (Pro).", status=204,
              request=models.PassphraseRequest, errors=(403, 404), example={"passphrase": "correct horse"}),
    Operation("DELETE", "/api/v1/documents/{document_id}/passphrase", "removePassphrase",
              "Make the share link public again (Pro).", status=204, errors=(403, 404)),
    Operation("POST", "/api/v1/documents/{document_id}/share/rotate", "rotateShareLink",
              "Give the document a new share link; the old one answers 404 at once.",
              models.ShareRotated, errors=(404,)),
    Operation("GET", "/api/v1/documents/{document_id}/stats", "getDocumentStats",
              "Views of the share link: all time, per version, per UTC day of the window.",
              models.DocumentStats, query=models.StatsQuery, errors=(404,)),
)


# OAuth 2.1 for MCP clients (docs/mcp.md): standard OAuth wire formats, with RFC 6749
# error bodies (OAuthErrorBody) instead of the REST contract's ErrorBody.
@dataclass(frozen=True)
class OAuthOperation:
    method: str
    path: str
    operation_id: str
    summary: str
    response: Optional[type[BaseModel]] = None
    status: int = 200
    request: Optional[type[BaseModel]] = None
    request_type: str = "application/x-www-form-urlencoded"
    errors: tuple[int, ...] = ()
    redirect: bool = False


OAUTH_QUERY = ("response_type", "client_id", "redirect_uri", "code_challenge", "code_challenge_method",
               "state", "scope", "resource")
OAUTH_OPERATIONS: tuple[OAuthOperation, ...] = (
    OAuthOperation("GET", "/.well-known/oauth-protected-resource", "protectedResourceMetadata",
                   "RFC 9728 protected resource metadata of /mcp.", models.ProtectedResourceMetadata),
    OAuthOperation("GET", "/.well-known/oauth-protected-resource/mcp", "protectedResourceMetadataMcp",
                   "The same, at the path-suffixed address MCP clients try first.",
                   models.ProtectedResourceMetadata),
    OAuthOperation("GET", "/.well-known/oauth-authorization-server", "authorizationServerMetadata",
                   "RFC 8414 authorization server metadata.", models.AuthorizationServerMetadata),
    OAuthOperation("POST", "/oauth/register", "registerClient",
                   "RFC 7591 dynamic registration of a public client.", models.ClientRegistration, status=201,
                   request=models.ClientRegistrationRequest, request_type="application/json",
                   errors=(400, 413, 429)),
    OAuthOperation("GET", "/oauth/authorize", "authorize",
                   "Authorization code request (PKCE S256 required); redirects to the consent page, or "
                   "an error page (400) whose link carries the error back to the client (never an automatic "
                   "redirect).", status=302, errors=(400, 401), redirect=True),
    OAuthOperation("POST", "/oauth/token", "token",
                   "Exchange a code (PKCE verifier) or rotate a refresh token. The body must be "
                   "application/x-www-form-urlencoded (no or another Content-Type: 400 invalid_request).",
                   models.TokenResponse,
                   request=models.TokenRequest, errors=(400, 401, 413, 429)),
    OAuthOperation("POST", "/oauth/revoke", "revokeToken", "RFC 7009 token revocation (always 200).",
                   request=models.RevokeRequest, errors=(400, 413, 429)),
)


def _oauth_operation(op: OAuthOperation, components: dict) -> dict:
    doc: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary, "tags": ["oauth"],
                           "security": []}
    if op.redirect:
        doc["parameters"] = [{"name": name, "in": "query", "required": name in ("response_type", "client_id",
                                                                                 "code_challenge"),
                              "schema": {"type": "string"}} for name in OAUTH_QUERY]
    if op.request is not None:
        doc["requestBody"] = {"required": True, "content": {
            op.request_type: {"schema": model_schema(op.request, "validation", components)}}}
    if op.redirect:
        success: dict[str, Any] = {"description": "To the consent page, or to the client's redirect URI "
                                                  "with `error`, `state` and `iss`.",
                                   "headers": {"Location": {"required": True, "schema": {"type": "string"}}}}
    else:
        success = {"description": "Success."}
        success["content"] = {"application/json": {"schema": model_schema(op.response, "serialization", components)
                                                    if op.response else {"type": "object"}}}
    error_body = {"application/json": {"schema": {"$ref": REF_TEMPLATE.format(model="OAuthErrorBody")}}}
    responses = {str(op.status): success}
    for status in sorted(set(op.errors) | {500}):
        if op.redirect and status in (400, 401):
            content = {"text/html": {"schema": {"type": "string"}}}
            text = "The client or its redirect URI cannot be trusted: an HTML page for the person."
        else:
            content, text = error_body, "RFC 6749 error body (`error`, `error_description`)."
        responses[str(status)] = {"description": text, "content": content}
    doc["responses"] = responses
    return doc


def oauth_paths(routes: dict, components: dict) -> dict:
    """The OAuth operations whose routes exist in `routes`."""
    paths: dict[str, dict] = {}
    for op in OAUTH_OPERATIONS:
        if op.method in routes.get(op.path, {}):
            paths.setdefault(op.path, {})[op.method.lower()] = _oauth_operation(op, components)
    if paths:
        model_schema(models.OAuthErrorBody, "serialization", components)
    return paths


class UndocumentedRoute(LookupError):
    pass


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def rest_routes(routes: dict) -> list[tuple[str, str]]:
    """(method, path) of every real REST operation in a Chalice route table."""
    found = []
    for path, methods in routes.items():
        if not path.startswith(API_PREFIX):
            continue
        for method, entry in methods.items():
            if method in ("OPTIONS", "HEAD") or entry.view_name == FILLER_VIEW:  # HEAD mirrors GET
                continue
            found.append((method, path))
    return sorted(found)


def operation_for(method: str, path: str) -> Optional[Operation]:
    shape = _shape(path)
    return next((op for op in OPERATIONS if op.method == method and _shape(op.path) == shape), None)


def model_schema(model: type[BaseModel], mode: str, components: dict) -> dict:
    """The model's JSON schema as a $ref; its definitions go into components."""
    schema = model.model_json_schema(ref_template=REF_TEMPLATE, mode=mode)
    for name, definition in schema.pop("$defs", {}).items():
        components[name] = definition
    components[model.__name__] = schema
    return {"$ref": REF_TEMPLATE.format(model=model.__name__)}


def _error_response(status: int) -> dict:
    response = {"description": ERROR_TEXT[status],
                "content": {"application/json": {"schema": {"$ref": REF_TEMPLATE.format(model="ErrorBody")}}}}
    if status in ERROR_HEADERS:
        response["headers"] = ERROR_HEADERS[status]
    return response


def _query_schema(prop: dict) -> dict:
    """A query parameter is absent or a string: drop the model's `null` branch."""
    branches = [b for b in prop.get("anyOf", []) if b != {"type": "null"}]
    if len(branches) == 1:
        prop = {**{k: v for k, v in prop.items() if k not in ("anyOf", "default")}, **branches[0]}
    return prop


def _operation(op: Operation, path: str, components: dict) -> dict:
    doc: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary, "tags": [op.tag],
                           "security": KEY_SECURITY if op.auth else []}
    parameters = []
    for name in re.findall(r"\{([^}]+)\}", path):
        kind, description = PATH_PARAMETERS.get(name, (str, name))
        parameters.append({"name": name, "in": "path", "required": True, "description": description,
                           "schema": TypeAdapter(kind).json_schema()})
    if op.query is not None:
        schema = op.query.model_json_schema(ref_template=REF_TEMPLATE, mode="validation")
        required = set(schema.get("required", []))
        for name, prop in schema["properties"].items():
            parameters.append({"name": name, "in": "query", "required": name in required,
                               "schema": _query_schema(prop)})
    parameters.extend(op.header_parameters)
    if parameters:
        doc["parameters"] = parameters
    if op.request is not None:
        body: dict[str, Any] = {"schema": model_schema(op.request, "validation", components)}
        if op.example is not None:
            body["example"] = op.example
        doc["requestBody"] = {"required": True, "content": {"application/json": body,
                                                            **(op.extra_request_content or {})}}
    success: dict[str, Any] = {"description": "Success." if op.status != 204 else "Done; no body."}
    if op.response_content is not None:
        success["content"] = op.response_content
    elif op.response is not None:
        success["content"] = {"application/json": {"schema": model_schema(op.response, "serialization",
                                                                          components)}}
    elif op.response_schema is not None:
        success["content"] = {"application/json": {"schema": op.response_schema}}
    if op.response_headers:
        success["headers"] = op.response_headers
    if op.links:
        success["links"] = op.links
    statuses = set(op.errors) | {400, 500, 503}  # 400: a header value that cannot be decoded
    if op.method in ("POST", "PUT", "PATCH"):
        statuses.add(507)  # a full disk (embedded store)
    if op.auth:
        statuses.add(401)
    if op.request is not None:
        statuses |= {400, 413, 415, 422}  # 413: bodies over the request size limit
    if op.query is not None:
        statuses.add(422)
    doc["responses"] = {str(op.status): success, **{str(s): _error_response(s) for s in sorted(statuses)}}
    return doc


def build(routes: dict) -> dict:
    """The OpenAPI document for the REST routes that exist in `routes`."""
    components: dict[str, Any] = {}
    model_schema(models.ErrorBody, "serialization", components)
    paths: dict[str, dict] = {}
    missing = []
    for method, path in rest_routes(routes):
        op = operation_for(method, path)
        if op is None:
            missing.append(f"{method} {path}")
            continue
        paths.setdefault(path, {})[method.lower()] = _operation(op, path, components)
    if missing:
        raise UndocumentedRoute("no entry in chalicelib/openapi.py OPERATIONS for: " + ", ".join(missing))
    paths.update(oauth_paths(routes, components))
    return {
        "openapi": "3.1.0",
        "info": {"title": "Docpub REST API", "version": "1.0.0",
                 "description": "Publish HTML documents behind shareable links. Generated from the "
                                "pydantic models in chalicelib/models.py; errors follow "
                                "`{\"error\": {\"code\", \"message\", \"details\"?}}`."},
        "tags": [{"name": t} for t in ("documents", "workspace", "feedback", "webhooks", "service", "oauth")],
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(components.items())), "securitySchemes": SECURITY_SCHEMES},
    }


def document(routes: dict) -> dict:
    """The document for a live route table (built once per distinct table)."""
    key = (tuple(rest_routes(routes)), tuple(sorted(p for p in routes if p in OAUTH_PATHS)))
    cached = _CACHE.get(key)
    if cached is None:
        cached = _CACHE[key] = build(routes)
    return cached


_CACHE: dict[tuple, dict] = {}
OAUTH_PATHS = {op.path for op in OAUTH_OPERATIONS}


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
