"""The door: what a request may cost, decided before any view runs, by the Lambda
handler (app.py's middleware) and the local server (scripts/serve_local.py, which
decides before reading the body at all), from the table of entrypoints/bounds.py.

API contract section 4, resource bounds:
- a header value the server cannot decode (not Latin-1, as HTTP/1.1 carries
  it) is 400, never a 5xx;
- authentication, where a route needs it, is checked before the body is read;
- a body over the route's cap is 413 without being parsed, in the route's shape.

Deployed, API Gateway has already delivered the body (at most 6 MB) when the
function runs, so "read" means parsed: the key's presence and shape are
checked first, and its existence too when the body is over FORM_BODY_BYTES (a
big body from a stranger is never parsed; small ones keep the usual number of
round trips, the service checking the key before any write).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

from chalicelib import errors
from chalicelib.entrypoints.bounds import API_BODY_BYTES, FORM_BODY_BYTES, body_rule, body_too_large

if TYPE_CHECKING:
    from chalice import Response


def admit(method: str, path: str, headers: Mapping[str, str], size_bytes: int, verify_key: bool,
          routed: bool = True) -> None:
    """Raise the contract's error for a request that must not be read further:
    400 (undecodable header), 401 (no valid credentials, where needed), 413
    (body over the route's cap). `headers` must look names up case-insensitively.
    Credentials are checked here only for a request with a body (the views
    check them for every request). `verify_key`: also look the key up in
    storage (else only its presence and shape, up to FORM_BODY_BYTES).
    `routed`: the route takes this method (else the 404/405 answer comes first)."""
    check_headers(headers)
    rule = body_rule(method, path)
    if rule.authenticate and size_bytes > 0 and routed:
        _authenticate(rule.authenticate, headers, verify_key or size_bytes > FORM_BODY_BYTES)
    if size_bytes > rule.cap_bytes:
        raise body_too_large(size_bytes, rule.cap_bytes)


def check_headers(headers: Mapping[str, str]) -> None:
    for name, value in headers.items():
        try:
            name.encode("latin-1")
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise errors.BadRequest(
                f"The header {_printable(name)} holds characters HTTP headers cannot carry; "
                "send only ASCII (percent-encode anything else).") from None


def _authenticate(kind: str, headers, lookup: bool) -> None:
    from chalicelib import wiring as registry
    from chalicelib.services.auth import credentials_from_headers

    if kind == "mcp":
        from chalicelib.entrypoints.mcp import caller, precheck

        if lookup:
            caller(headers)
        else:
            precheck(headers)
        return
    credentials = credentials_from_headers(headers)
    if lookup:
        registry.workspaces().authenticate(credentials)


def _printable(name: str) -> str:
    return repr(name.encode("latin-1", "replace").decode("latin-1"))


class CaseInsensitive(dict):
    """Header names looked up case-insensitively (http.server's message already
    does; a plain dict of an event's headers does not)."""

    def __init__(self, items):
        super().__init__((k.lower(), v) for k, v in dict(items).items())

    def get(self, key, default=None):
        return super().get(key.lower(), default)


def refusal_response(method: str, path: str, error: errors.DocpubError) -> Response:
    """`error` shaped for the route's surface: the contract's JSON body, an RFC 6749
    body on the OAuth endpoints, or a small HTML page on pages."""
    import json

    from chalice import Response

    from chalicelib.entrypoints.http import JSON_TYPE, error_response, html_response

    rule = body_rule(method, path)
    if rule.surface == "oauth":
        body = {"error": "invalid_request", "error_description": error.message}
        return Response(body=json.dumps(body, ensure_ascii=False), status_code=error.status,
                        headers={"Content-Type": JSON_TYPE, "Cache-Control": "no-store", **error.headers})
    if rule.surface == "html":
        from chalicelib import rendering

        page = rendering.page("bounds/refused.html", message=error.message)
        return html_response(page, error.status, {"Cache-Control": "no-store", **error.headers})
    return error_response(error)


def routed(app, template: Optional[str], method: str) -> bool:
    """Whether `app` has a real view (not a 405 filler) for this route template and method."""
    entry = (app.routes.get(template or "") or {}).get(method.upper())
    return entry is not None and not getattr(entry.view_function, "docpub_method_not_allowed", False)


def admit_event(request, app=None) -> Optional[Response]:
    """The Lambda handler's side (app.py middleware): None to go on, or the refusal."""
    method = request.method or "GET"
    path = ((request.context or {}).get("path")) or request.path or "/"
    headers = CaseInsensitive(request.headers.items()) if request.headers is not None else CaseInsensitive({})
    declared = headers.get("content-length")
    try:
        size = int(declared) if declared and declared.strip().isdigit() else 0
        raw = request.raw_body if size <= API_BODY_BYTES * 4 else None
        size = max(size, len(raw) if raw else 0)
        admit(method, path, headers, size, verify_key=False,
              routed=routed(app, request.path, method) if app is not None else True)
    except errors.DocpubError as exc:
        return refusal_response(method, path, exc)
    return None
