"""`/mcp`: the Model Context Protocol over Streamable HTTP (stateless, JSON responses).

The API key, or an OAuth access token (`Authorization: Bearer dpa_…`, see
services/oauth.py), is checked here, before the `mcp` SDK is imported: a request
without valid credentials costs one GetItem and never the SDK's ~0.6 s import. The SDK and the
tools live in chalicelib.entrypoints.mcp_tools, imported on the first valid call.

Errors: answers of our own (401, 405, 415, malformed JSON) use the contract's
error body. JSON-RPC error answers produced by the MCP SDK (some with a non-2xx
status, as the 2026-07-28 protocol maps error codes to statuses) pass through
unchanged, because MCP clients parse them; any other non-2xx answer of the SDK
is rewritten into the contract's body.
"""
from __future__ import annotations

import dataclasses

import json
from typing import Any

from chalice import Blueprint, Response

from chalicelib import errors
from chalicelib.entrypoints.routing import method_not_allowed_view
from chalicelib.entrypoints.http import JSON_TYPE, body_bytes, error_response, handles_errors
from chalicelib import wiring
from chalicelib.services.auth import credentials_from_headers

bp = Blueprint(__name__)
api = handles_errors(bp)

_STATUS_ERRORS = {400: errors.InvalidJson, 404: errors.NotFound, 405: errors.MethodNotAllowed,
                  413: errors.DocumentTooLarge, 415: errors.UnsupportedMediaType}
_PASS_HEADERS = ("mcp-protocol-version", "mcp-session-id", "allow", "retry-after")


@bp.route("/mcp", methods=["POST"])
@api
def mcp_post():
    request = bp.current_request
    credentials = _caller(request.headers)  # unknown, expired or revoked: 401 before any MCP work
    body = body_bytes(request)
    _check_json(body)
    from chalicelib.entrypoints import mcp_tools  # imports the SDK: only here, only with a valid key

    status, headers, answer = mcp_tools.serve_http(credentials, dict(request.headers.items()), body,
                                                   request.context.get("path") or "/mcp")
    return _response(status, headers, answer)


@bp.route("/mcp", methods=["GET", "DELETE"], content_types=["*/*"])
@method_not_allowed_view
def mcp_not_allowed():
    error = errors.MethodNotAllowed(
        "This MCP endpoint is stateless Streamable HTTP: send JSON-RPC messages with POST "
        "(there is no server-sent event stream to GET and no session to DELETE).")
    error.headers["Allow"] = "POST"
    return error_response(error)


def caller(headers, lookup: bool = True):
    """API-key credentials, or the Principal of an OAuth access token (`Bearer dpa_…`).
    Every 401 tells OAuth clients where to discover the authorization server (RFC 9728).
    `lookup=False` checks only that credentials of a valid shape are present
    (entrypoints/bounds.py, before a body is read)."""
    from chalicelib.services import oauth

    try:
        scheme, _, value = (headers.get("authorization") or "").strip().partition(" ")
        if scheme.lower() == "bearer" and oauth.OAuthService.is_access_token(value.strip()):
            if headers.get("x-api-key"):
                raise errors.InvalidApiKey("Send either an API key or an access token, not both.")
            if not lookup:
                return None
            try:
                return wiring.oauth().authenticate(value.strip())
            except oauth.OAuthError as exc:
                error = errors.Unauthorized(exc.message, headers=dict(exc.headers))
                error.code = "invalid_token"
                raise error from None
        credentials = dataclasses.replace(credentials_from_headers(headers), surface="mcp")
        if lookup:
            wiring.workspaces().authenticate(credentials)
        return credentials
    except errors.DocpubError as exc:
        if exc.status == 401:
            exc.headers["WWW-Authenticate"] = oauth.challenge_header(
                "invalid_token" if exc.code != "unauthorized" else None)
        raise


def precheck(headers) -> None:
    caller(headers, lookup=False)


_caller = caller


def _check_json(body: bytes) -> None:
    try:
        json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.InvalidJson(f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise errors.InvalidJson("The request body is nested too deeply.") from None


def _response(status: int, headers: dict[str, str], body: bytes) -> Response:
    if status >= 400 and not _is_jsonrpc(body):
        error_class = _STATUS_ERRORS.get(status, errors.InternalError)
        message = body.decode("utf-8", "replace").strip() or f"The MCP endpoint answered HTTP {status}."
        return error_response(error_class(message, status=status))
    out: dict[str, Any] = {name.title(): value for name, value in headers.items() if name in _PASS_HEADERS}
    if not body:
        return Response(body="", status_code=status, headers=out)
    out["Content-Type"] = JSON_TYPE if headers.get("content-type", "").startswith("application/json") \
        else headers.get("content-type", "application/octet-stream")
    return Response(body=body.decode("utf-8"), status_code=status, headers=out)


def _is_jsonrpc(body: bytes) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("jsonrpc") == "2.0"

