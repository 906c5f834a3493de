"""OpenAPI 3.1 document of the REST API, generated from the operations registry.

chalicelib/operations.py declares every REST operation once (models, statuses,
errors); the routes are made from the same table (entrypoints/rest.py). The
document is built with pydantic's `model_json_schema` (refs point at
`#/components/schemas`) for the routes that exist in `app.routes`; a route
without a declaration makes `document()` fail (tests keep both sides and
docs/openapi.json in step; `make openapi` rewrites the committed copy).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import BaseModel, TypeAdapter

from chalicelib import models
from chalicelib.domain import roles
from chalicelib.operations import API_PREFIX, OPERATIONS, Operation

REF_TEMPLATE = "#/components/schemas/{model}"
# The only view name routing.add_method_not_allowed gives its 405 fillers.
FILLER_VIEW = "method_not_allowed"

# What each error status means (docs/contract.md, Errors); every one is an ErrorBody.
ERROR_TEXT = {
    400: ("`invalid_json`: the body is not valid JSON or not a JSON object; `invalid_request`: a header "
          "value the server cannot decode (not Latin-1)."),
    401: "`unauthorized` (no key) or `invalid_api_key` (unknown, revoked or malformed key).",
    403: ("`forbidden_role`: the key acts with its creator's role (`details.role`), which does not allow "
          "the operation; `plan_limit_reached` (a plan cap; for storage and versions per document "
          "`details.entitlement` names it) or `feature_not_in_plan`. (Deployed behind CloudFront with an origin "
          "secret, any request that bypasses CloudFront is 403 `forbidden`.)"),
    404: "`not_found`: no such document (or it belongs to another workspace).",
    409: ("`version_conflict`: `base_version_id` is not the latest version; `already_resolved`: the "
          "suggestion was already accepted or rejected."),
    413: ("`document_too_large`: the HTML is over the size limit, or the request body is over the route's "
          "cap (6 MiB, refused unread; `details.limit_bytes` is then the cap). For an edit "
          "batch, `details.edit_index` is the first edit whose result would exceed it and "
          "`details.size_bytes` the size that edit would produce (nothing larger is built)."),
    414: ("`uri_too_long`: the request line (method, path and query) is over the server's limit "
          "(`make run`: 65,536 bytes)."),
    431: ("`headers_too_large`: the header block is over the server's limits (`make run`: a header line "
          "over 65,536 bytes, or more than 100 header fields)."),
    415: "`unsupported_media_type`: the body is not `application/json` (publish: nor `multipart/form-data`).",
    422: ("`validation_error` (also for a `cursor` this service did not issue to this workspace and "
          "listing, and for a passphrase that is too easy to guess, with the reason), or for edits "
          "`edit_not_found` / `edit_ambiguous` / `no_change`; for publish and edit `secret_detected` "
          "(the content holds a credential and the workspace blocks them: `details.findings` "
          "[{rule, path?, line, column, preview}], nothing stored; send `allow_secrets: true` to store it "
          "anyway)."),
    429: "`rate_limited`: retry after `Retry-After` seconds.",
    500: ("`internal_error`: unexpected; `details.request_id` (its own for every failure) identifies it "
          "in the logs. A version whose HTML is missing from storage is a 500 with `details.version_id` "
          "(not retryable: publish the document again to repair it)."),
    503: "`service_unavailable`: storage is busy or unreachable; retry after `Retry-After` seconds.",
    507: ("`insufficient_storage`: the embedded store's disk is full; nothing was written (reads and "
          "deletes still work)."),
}

# Answered by the server before any route runs, so every operation (OAuth ones too) lists them.
SERVER_LIMITS = (414, 431)

RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "required": True,
                               "schema": {"type": "integer"}}}
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
KEY_SECURITY: list[dict[str, list[str]]] = [{"ApiKeyHeader": []}, {"BearerAuth": []}]


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
    for status in SERVER_LIMITS:  # the server answers these before any route: section 3's body
        responses[str(status)] = _error_response(status)
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
        model_schema(models.ErrorBody, "serialization", components)
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
    schema = model.model_json_schema(ref_template=REF_TEMPLATE, mode=mode)  # type: ignore[arg-type]
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
    # 400: a header value that cannot be decoded; 414/431: a request line or header block over the
    # server's limits (any request can be).
    statuses = set(op.errors) | {400, 414, 431, 500, 503}
    if op.method in ("POST", "PUT", "PATCH"):
        statuses.add(507)  # a full disk (embedded store)
    if op.auth:
        statuses.add(401)
    if roles.OPERATIONS.get(op.name, roles.ROLES[0]) != roles.ROLES[0]:
        statuses.add(403)  # forbidden_role: a key whose creator's role is below the operation's
    if op.request is not None:
        statuses |= {400, 413, 415, 422}  # 413: bodies over the request size limit
    if op.query is not None:
        statuses.add(422)
    redirects = {str(status): {"description": text,
                               "headers": {"Location": {"required": True, "schema": {"type": "string",
                                                                                      "format": "uri"}}}}
                 for status, text in sorted(op.redirects.items())}
    doc["responses"] = {str(op.status): success, **redirects,
                        **{str(s): _error_response(s) for s in sorted(statuses)}}
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
        raise UndocumentedRoute("no entry in chalicelib/operations.py OPERATIONS for: " + ", ".join(missing))
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
