"""OAuth 2.1 endpoints for MCP clients (a chalice Blueprint; rules in services/oauth.py).

- `GET /.well-known/oauth-protected-resource[/mcp]` (RFC 9728)
- `GET /.well-known/oauth-authorization-server` (RFC 8414)
- `POST /oauth/register` (RFC 7591), `GET /oauth/authorize` (validates, then sends
  the browser to the dashboard's consent page), `POST /oauth/token`,
  `POST /oauth/revoke` (RFC 7009).

Errors on these endpoints are RFC 6749 bodies (`{"error", "error_description"}`),
which OAuth clients parse; the REST contract's error body is not used here.
"""
from __future__ import annotations

import json
import logging
from urllib.parse import urlencode
from typing import Mapping

from chalice import Blueprint, Response

from chalicelib import config
from chalicelib.entrypoints.http import JSON_TYPE, as_error, body_bytes, client_ip, compress, form_fields, html_response
from chalicelib import wiring

log = logging.getLogger("docpub.oauth")

bp = Blueprint(__name__)
FORM = ["application/x-www-form-urlencoded"]
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
MAX_REGISTRATION_BYTES = 64 * 1024


def _compressed(response: Response) -> Response:
    """gzip for a client that asks (behind CloudFront these routes are not cached, so
    the origin compresses: http.compress)."""
    try:
        request = bp.current_request
    except RuntimeError:  # not inside a request of an app
        request = None
    return compress(request, response)


def _json(body, status: int = 200, headers: dict | None = None) -> Response:
    if not isinstance(body, dict):  # a pydantic model
        body = body.model_dump(mode="json", exclude_none=True)
    return _compressed(Response(body=json.dumps(body, ensure_ascii=False, separators=(",", ":")), status_code=status,
                                headers={"Content-Type": JSON_TYPE, **NO_STORE, **(headers or {})}))


def oauth_errors(view):
    """OAuthError → RFC 6749 body; anything else goes through the one error mapping
    (as_error) and is shaped the RFC 6749 way: 4xx `invalid_request`, 503
    `temporarily_unavailable`, else 500 `server_error` with its request id."""
    import functools

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        from chalicelib.services.oauth import OAuthError

        try:
            return view(*args, **kwargs)
        except OAuthError as exc:
            return _json(exc.body(), exc.status, dict(exc.headers))
        except Exception as exc:  # noqa: BLE001 - mapped by as_error, never a stack trace
            error = as_error(exc, bp)
            if error.status < 500:  # e.g. a body that is not UTF-8
                return _json({"error": "invalid_request", "error_description": error.message}, 400)
            code = "temporarily_unavailable" if error.status == 503 else "server_error"
            return _json({"error": code, "error_description": error.message, **(error.details or {})}, error.status)

    return wrapper


def _metadata(body) -> Response:
    return _json(body, headers={"Cache-Control": "public, max-age=300", "Access-Control-Allow-Origin": "*"})


@bp.route("/.well-known/oauth-protected-resource", methods=["GET"])
def protected_resource():
    from chalicelib.services import oauth

    return _metadata(oauth.protected_resource_metadata())


@bp.route("/.well-known/oauth-protected-resource/mcp", methods=["GET"])
def protected_resource_mcp():
    from chalicelib.services import oauth

    return _metadata(oauth.protected_resource_metadata())


@bp.route("/.well-known/oauth-authorization-server", methods=["GET"])
def authorization_server():
    from chalicelib.services import oauth

    return _metadata(oauth.authorization_server_metadata())


@bp.route("/oauth/register", methods=["POST"], content_types=["application/json"])
@oauth_errors
def register():
    from chalicelib.services.oauth import OAuthError

    request = bp.current_request
    wiring.oauth().limit("register", client_ip(request))
    body = body_bytes(request)
    if len(body) > MAX_REGISTRATION_BYTES:
        raise OAuthError("invalid_client_metadata", f"Client metadata is limited to {MAX_REGISTRATION_BYTES} bytes.")
    try:
        metadata = json.loads(body)
    except ValueError:
        raise OAuthError("invalid_client_metadata", "The body is not valid JSON.") from None
    return _json(wiring.oauth().register(metadata), 201)


@bp.route("/oauth/authorize", methods=["GET"])
def authorize():
    """Check the request; a good one goes on to the consent page (sign-in first if needed)."""
    from chalicelib.services.oauth import NotRedirectable, OAuthError, RedirectError

    request = bp.current_request
    query: Mapping[str, str] = request.query_params or {}
    params = {name: query.get(name) for name in query}
    try:
        wiring.oauth().limit("authorize", client_ip(request))
        wiring.oauth().check_authorization(params, client_ip(request))
    except RedirectError as exc:
        return redirect_error_page(exc)
    except (NotRedirectable, OAuthError) as exc:
        return authorization_error_page(exc.error, exc.message, exc.status, dict(exc.headers))
    consent = config.base_url() + "/dashboard/oauth/authorize?" + urlencode(params)
    return Response(body="", status_code=302, headers={"Location": consent, **NO_STORE})


def authorization_error_page(error: str, message: str, status: int = 400, headers: dict | None = None,
                             back: str | None = None, back_host: str | None = None) -> Response:
    from chalicelib import rendering

    body = rendering.page("oauth/error.html", error=error, message=message, back=back, back_host=back_host)
    return _compressed(html_response(body, status, headers={**NO_STORE, **(headers or {})}))


def redirect_error_page(exc) -> Response:
    """An erroneous request of a known client: its error for the client's redirect URI,
    behind a link the person follows, never an automatic redirect. Anyone can register
    a client with any https redirect URI, so redirecting at once would make Docpub an
    open redirector for phishing (RFC 9700 4.11.2)."""
    from urllib.parse import urlsplit

    return authorization_error_page(exc.error, exc.message, 400, back=exc.location(),
                                    back_host=urlsplit(exc.redirect_uri).netloc)


def _form(request) -> dict:
    """The form body of a token or revocation request (RFC 6749 section 3.2: the
    body is application/x-www-form-urlencoded). Anything else, a missing
    Content-Type included, is the RFC's `invalid_request`, not an HTTP 415."""
    from chalicelib.services.oauth import OAuthError

    content_type = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type != FORM[0]:
        raise OAuthError("invalid_request", "Send the parameters as an application/x-www-form-urlencoded "
                         "body (RFC 6749).")
    return form_fields(request.raw_body)


# content_types */*: the type is checked in the view, so a wrong one answers RFC 6749's error.
@bp.route("/oauth/token", methods=["POST"], content_types=["*/*"])
@oauth_errors
def token():
    request = bp.current_request
    wiring.oauth().limit("token", client_ip(request))
    return _json(wiring.oauth().token(_form(request)))


@bp.route("/oauth/revoke", methods=["POST"], content_types=["*/*"])
@oauth_errors
def revoke():
    request = bp.current_request
    wiring.oauth().limit("token", client_ip(request))
    wiring.oauth().revoke(_form(request))
    return _json({})
