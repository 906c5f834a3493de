"""HTTP plumbing shared by every route: parsing, JSON answers, the contract's
error body, compression that keeps large answers inside Lambda's 6 MB limit."""
from __future__ import annotations

import base64
import functools
import gzip
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from chalice import Response

from chalicelib import errors

if TYPE_CHECKING:  # pydantic is imported by the routes that parse a body, not by every function
    from pydantic import BaseModel, ValidationError

log = logging.getLogger("docpub")

M = TypeVar("M", bound="BaseModel")

JSON_TYPE = "application/json; charset=utf-8"
GZIP_MIN_BYTES = 1024
# Above this, a non-gzip answer goes out base64-encoded raw UTF-8: Python 3.11's
# Lambda runtime would otherwise escape every non-ASCII character (up to 6x).
RAW_BINARY_MIN_BYTES = 1024 * 1024


class EncodedResponse(Response):
    """A response whose body is already bytes and must travel base64-encoded."""

    def to_dict(self, binary_types=None):
        response = super().to_dict(None)
        response["body"] = base64.b64encode(self.body).decode("ascii")
        response["isBase64Encoded"] = True
        return response


def lambda_request_id(app) -> Optional[str]:
    """The Lambda invocation's id, for correlating logs (None outside Lambda)."""
    try:
        context = getattr(app, "lambda_context", None) if app is not None else None
    except RuntimeError:  # a Blueprint not (yet) registered
        return None
    return getattr(context, "aws_request_id", None)


# The viewer's address as the stack's viewer-request CloudFront Function writes it (a bare
# IP, overwriting anything the viewer sent) on the API, MCP and dashboard behaviours: their
# managed origin request policy (AllViewerExceptHostHeader) forwards viewer headers only,
# never CloudFront-Viewer-Address (infra/resources.yaml ViewerAddressFunction, docs/deploy.md).
VIEWER_ADDRESS_HEADER = "x-docpub-viewer-address"


def client_ip(request) -> str:
    """The caller's address for per-IP limits: API Gateway's view of it, or the
    viewer's address CloudFront gives (CloudFront-Viewer-Address on the share paths,
    X-Docpub-Viewer-Address from the stack's function elsewhere) when the stage
    trusts CloudFront and the request carries CloudFront's origin secret (else the
    header is forgeable). IPv6 callers are keyed by their /64, the block one
    subscriber usually holds."""
    import hmac

    from chalicelib import config

    address = ((request.context or {}).get("identity") or {}).get("sourceIp") or "unknown"
    if config.trust_cloudfront_ip_header():
        secret = config.origin_secret()
        presented = request.headers.get("x-docpub-origin-secret") or ""
        viewer = (request.headers.get("cloudfront-viewer-address") or "").strip()
        edge = (request.headers.get(VIEWER_ADDRESS_HEADER) or "").strip()
        if (viewer or edge) and (not secret or hmac.compare_digest(presented.encode(), secret.encode())):
            if viewer:  # "198.51.100.10:46532", "2001:db8::1:46532": the address, then the port
                address = viewer.rsplit(":", 1)[0].strip("[]") if ":" in viewer else viewer
            else:  # the bare address
                address = edge.strip("[]")
    from chalicelib.domain.addresses import limit_key

    return limit_key(address)


def refuse_without_origin_secret(request) -> Optional[Response]:
    """With DOCPUB_ORIGIN_SECRET set, only requests carrying it (CloudFront adds it
    as X-Docpub-Origin-Secret) are served: the API Gateway URL cannot bypass
    CloudFront, its security headers and its per-viewer address. 403 otherwise."""
    import hmac

    from chalicelib import config

    secret = config.origin_secret()
    if not secret:
        return None
    presented = request.headers.get("x-docpub-origin-secret") or ""
    if hmac.compare_digest(presented.encode(), secret.encode()):
        return None
    return error_response(errors.Forbidden("Requests must come through the service's public address."))


def refuse_cross_site(request) -> None:
    """403 for a browser request made by another site, or by sandboxed user HTML
    (an opaque origin): viewer forms must not be posted from elsewhere. Requests
    without browser headers (curl, scripts) are not browser CSRF and pass."""
    from urllib.parse import urlsplit

    from chalicelib import config

    fetch_site = (request.headers.get("sec-fetch-site") or "").lower()
    if fetch_site:
        cross = fetch_site not in ("same-origin", "none")
    else:
        origin = request.headers.get("origin")
        base = urlsplit(config.base_url())
        host = request.headers.get("host")
        allowed = {f"{base.scheme}://{base.netloc}"} | ({f"https://{host}", f"http://{host}"} if host else set())
        cross = origin is not None and origin not in allowed
    if cross:
        raise errors.Forbidden("This form can only be sent from the document's own page.")


def parse_cookies(header: Optional[str]) -> dict[str, str]:
    """Cookies from a Cookie header, tolerantly: one malformed cookie set by some
    other site on the parent domain must not hide the others (SimpleCookie
    drops them all)."""
    found: dict[str, str] = {}
    for part in (header or "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name and name not in found:
            found[name] = value.strip().strip('"')
    return found


def viewer_cookie(name: str, value: str, path: str, max_age: int) -> str:
    """A Set-Cookie value for a share link's viewer pass (unlock, recipient, member):
    that link's path only, HttpOnly, SameSite=Lax, Secure when the service is on https."""
    from chalicelib import config

    secure = "; Secure" if config.base_url().startswith("https://") else ""
    return f"{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}"


# ------------------------------------------------------------------ parsing

def check_body_size(request) -> None:
    """413 for a body over its route's cap (entrypoints/bounds.py), before any parsing.
    The middleware has already refused such requests; this keeps parse_body safe alone."""
    if request is None:
        return
    from chalicelib.entrypoints import bounds

    rule = bounds.body_rule(request.method or "POST", (request.context or {}).get("path") or request.path or "/")
    raw = request.raw_body
    if raw and len(raw) > rule.cap_bytes:
        raise bounds.body_too_large(len(raw), rule.cap_bytes)


def parse_body(request, model: type[M]) -> M:
    check_body_size(request)
    content_type = (request.headers.get("content-type") or "application/json").lower()
    if not content_type.startswith("application/json"):
        raise errors.UnsupportedMediaType("Send the body as application/json.")
    data = _decode_json(_body_text(request))
    return validate(model, data)


def body_bytes(request) -> bytes:
    """The request body as bytes (chalice types `raw_body` as str or bytes; it is bytes)."""
    raw = request.raw_body
    return raw.encode("utf-8") if isinstance(raw, str) else (raw or b"")


def _body_text(request) -> bytes | str | None:
    """The body without copies: API Gateway hands Lambda a str, which
    `request.raw_body` would encode to bytes (and we decode again): two
    copies of a 4 MiB document. Base64 and bytes bodies go through raw_body."""
    event = request.to_original_event()
    body = event.get("body") if isinstance(event, dict) else None
    if isinstance(body, str) and not event.get("isBase64Encoded"):
        return body
    return request.raw_body


def _decode_json(raw: bytes | str | None) -> Any:
    if not raw:
        raise errors.InvalidJson("The request body must be a JSON object.")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, object_pairs_hook=_object_without_lone_surrogates)
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.InvalidJson(f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise errors.InvalidJson("The request body is nested too deeply.") from None
    if not isinstance(data, dict):
        raise errors.InvalidJson("The request body must be a JSON object.")
    return data


# A `\ud800` escape without its pair decodes to a lone surrogate, which cannot
# be encoded to UTF-8: refuse it at the door (400), checking each decoded
# string as its object is built. ASCII strings cannot hold one (str.isascii()
# is O(1)). The document fields are left to the service, which encodes them to
# UTF-8 anyway and refuses a lone surrogate with the same error
# (domain/limits.encoded_html, domain/edits): no extra scan of 4 MiB here.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ENCODED_BY_SERVICE = frozenset({"html", "old_string", "new_string"})
LONE_SURROGATE_MESSAGE = "The request body contains an unpaired UTF-16 surrogate."


def _object_without_lone_surrogates(pairs: list) -> dict:
    for key, value in pairs:
        if _has_lone_surrogate(key) or (key not in _ENCODED_BY_SERVICE and _has_lone_surrogate(value)):
            raise errors.InvalidJson(LONE_SURROGATE_MESSAGE)
    return dict(pairs)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isascii() and _LONE_SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False  # numbers, booleans, null; objects were checked when built


def validate(model: type[M], data: Any) -> M:
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc) from None


def validation_error(exc: ValidationError) -> errors.ValidationFailed:
    """pydantic's error in the contract's shape and Docpub's words (errors.plain_message)."""
    return errors.ValidationFailed.from_pydantic(exc.errors(include_url=False, include_input=False))


FORM_TYPE = "application/x-www-form-urlencoded"
MULTIPART_TYPE = "multipart/form-data"


def download_response(download, extra_headers: Optional[dict] = None) -> Response:
    """A file to save (never shown inline): `Content-Disposition: attachment` with the
    title's slug, sandboxed and unsniffed in case a browser renders it anyway; or, for a
    file too large for a Lambda response, a 302 to where storage serves it (presigned,
    short-lived, naming the same file: services/downloads.py)."""
    if download.url is not None:
        return Response(body="", status_code=302, headers={
            "Location": download.url, "Cache-Control": "private, no-store", "Referrer-Policy": "no-referrer",
            **{k: v for k, v in (extra_headers or {}).items() if k.lower() != "content-type"}})
    headers = {"Content-Type": download.content_type,
               "Content-Disposition": f'attachment; filename="{download.filename}"',
               "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
               "Cache-Control": "private, no-store", **(extra_headers or {})}
    return EncodedResponse(body=download.data, status_code=200, headers=headers)


def is_multipart(request) -> bool:
    return (request.headers.get("content-type") or "").lower().startswith(MULTIPART_TYPE)


def multipart_parts(content_type: str, body: bytes, strict_text: bool = True
                    ) -> tuple[list[tuple[str, str]], list[tuple[str, str, bytes]]]:
    """([(name, text)], [(name, filename, bytes)]) of a multipart/form-data body, read with
    python-multipart (Starlette's parser) from memory: the one multipart reader of the
    API and the dashboard (dashboard/forms.py). A malformed body is 422 naming `file`;
    a text field that is not UTF-8 is 422 naming it (`strict_text`) or has its bad
    bytes replaced."""
    from python_multipart import FormParser
    from python_multipart.exceptions import FormParserError
    from python_multipart.multipart import parse_options_header

    kind, params = parse_options_header(content_type or "")
    boundary = params.get(b"boundary")
    if not boundary:
        raise errors.ValidationFailed.field("file", "the multipart body has no boundary in its Content-Type")
    fields: list[tuple[str, str]] = []
    files: list[tuple[str, str, bytes]] = []

    def on_field(part) -> None:
        name = (part.field_name or b"").decode("utf-8", "replace")
        try:
            fields.append((name, (part.value or b"").decode("utf-8", "strict" if strict_text else "replace")))
        except UnicodeDecodeError:
            raise errors.ValidationFailed.field(name, "is not UTF-8 text") from None

    def on_file(part) -> None:
        part.file_object.seek(0)
        data = part.file_object.read()
        filename = (part.file_name or b"").decode("utf-8", "replace")
        if filename or data:  # an empty file input sends a part with neither
            files.append(((part.field_name or b"").decode("utf-8", "replace"), filename, data))

    parser = FormParser(kind.decode("latin-1"), on_field, on_file, boundary=boundary,
                        config={"MAX_MEMORY_FILE_SIZE": len(body) + 1, "MAX_BODY_SIZE": len(body) + 1})
    try:
        parser.write(body)
        parser.finalize()
    except FormParserError:
        raise errors.ValidationFailed.field("file", "the multipart body could not be read") from None
    return fields, files


def parse_multipart(request, file_field: str = "file") -> tuple[dict[str, str], Optional[tuple[str, bytes]]]:
    """(text fields, (filename, bytes) of the `file` part or None) of an API request's
    multipart/form-data body. A repeated field or a second file is 422 naming it; empty
    text fields count as absent."""
    check_body_size(request)
    parts, files = multipart_parts(request.headers.get("content-type") or "", body_bytes(request))
    fields: dict[str, str] = {}
    for name, value in parts:
        if name in fields:
            raise errors.ValidationFailed.field(name, "is given more than once")
        if value != "":
            fields[name] = value
    upload = None
    for name, filename, data in files:
        if name != file_field:
            raise errors.ValidationFailed.field(name, f"is not a field of this request; send the file as `{file_field}`")
        if upload is not None:
            raise errors.ValidationFailed.field(file_field, "send one file per request (a folder as a .zip)")
        upload = (filename, data)
    return fields, upload


def parse_form_or_json(request, model: type[M]) -> M:
    """A body sent as JSON or as an HTML form (urlencoded), validated the same way.
    Empty form fields count as absent (a blank optional input sends "")."""
    content_type = (request.headers.get("content-type") or "").lower()
    if content_type.startswith(FORM_TYPE):
        return validate(model, form_fields(request.raw_body))
    return parse_body(request, model)


def form_fields(raw: bytes | str | None) -> dict[str, str]:
    from urllib.parse import parse_qsl

    try:
        text = (raw or b"").decode("utf-8") if isinstance(raw, (bytes, bytearray)) else (raw or "")
    except UnicodeDecodeError:
        raise errors.InvalidJson("The form body is not valid UTF-8.") from None
    fields: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        if value != "":
            fields[name] = value  # last value wins, like most form readers
    return fields


def parse_query(request, model: type[M]) -> M:
    params = dict(request.query_params or {})
    return validate(model, params)


# ------------------------------------------------------------------ answers

def json_response(body: BaseModel | dict, status: int = 200, headers: Optional[dict] = None,
                  exclude: Optional[set] = None) -> Response:
    if hasattr(body, "model_dump_json"):  # a pydantic model (pydantic itself is not imported here)
        text = body.model_dump_json(exclude=exclude)
    else:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return Response(body=text, status_code=status, headers={"Content-Type": JSON_TYPE, **(headers or {})})


HTML_TYPE = "text/html; charset=utf-8"
# Every HTML page the service itself renders (share-link chrome, unlock form,
# dashboard, error pages). A shared document's own HTML gets a sandboxing CSP
# on top (docs/contract.md, Share links); tests/http/test_security.py checks all HTML answers.
HTML_SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def html_response(body: str, status: int = 200, headers: Optional[dict] = None) -> Response:
    return Response(body=body, status_code=status,
                    headers={"Content-Type": HTML_TYPE, **HTML_SECURITY_HEADERS, **(headers or {})})


def error_response(error: errors.DocpubError) -> Response:
    return json_response(error.body(), error.status, dict(error.headers))


def empty_response(status: int = 204, headers: Optional[dict] = None) -> Response:
    return Response(body="", status_code=status, headers=headers or {})


def compress(request, response: Response) -> Response:
    """gzip text answers for clients that accept it; keep big ones binary-safe."""
    body = response.body
    if isinstance(body, (dict, list)) or body is None or isinstance(response, EncodedResponse):
        return response
    data = body.encode("utf-8") if isinstance(body, str) else body
    accepts_gzip = "gzip" in (request.headers.get("accept-encoding") or "").lower() if request else False
    headers = dict(response.headers)
    if accepts_gzip and len(data) >= GZIP_MIN_BYTES and "Content-Encoding" not in headers:
        headers["Content-Encoding"] = "gzip"
        headers["Vary"] = _vary(headers)
        return EncodedResponse(body=gzip.compress(data, 6), status_code=response.status_code, headers=headers)
    if len(data) >= RAW_BINARY_MIN_BYTES or isinstance(body, bytes):
        return EncodedResponse(body=data, status_code=response.status_code, headers=headers)
    return response


def _vary(headers: dict) -> str:
    existing = headers.get("Vary")
    if existing and "accept-encoding" in existing.lower():
        return existing
    return f"{existing}, Accept-Encoding" if existing else "Accept-Encoding"


# ------------------------------------------------------------------ errors → answers
#
# One mapping from any exception to the contract's vocabulary (`as_error`), and one
# function per surface that shapes it: `error_response` (JSON: REST, /mcp, share
# feedback), share.py `_error_page`, dashboard.py `error_page`, mcp_tools.py
# `error_result`. Every surface's catch-all calls `as_error`; nothing else maps.

def as_error(exc: BaseException, app=None) -> errors.DocpubError:
    """`exc` as the contract's error: a DocpubError as it is; storage trouble as a
    503; anything else a 500 with its own request id (logged with the stack)."""
    if isinstance(exc, errors.DocpubError):
        return exc
    return _unexpected(app, exc)


def _unexpected(app, exc: BaseException) -> errors.DocpubError:
    # A fresh id per failure: the Lambda context can be shared (threads of the
    # local server) or stale, and two failures must never share an id.
    import uuid  # not at import: uuid loads platform

    rid = str(uuid.uuid4())
    context = {"request_id": rid, "aws_request_id": lambda_request_id(app)}
    from chalicelib.ports import StorageFull, StorageUnavailable

    if isinstance(exc, StorageFull):
        log.warning("storage full", extra={**context, "error_code": exc.code})
        return errors.InsufficientStorage("The server's disk is full: nothing was written. Reading and deleting "
                                          "still work; try again once space has been freed.")
    if isinstance(exc, StorageUnavailable):
        log.warning("storage busy", extra={**context, "error_code": exc.code})
        return errors.ServiceUnavailable()
    log.error("unexpected error", extra=context, exc_info=(type(exc), exc, exc.__traceback__))
    return errors.InternalError("An unexpected error occurred; it has been logged.", {"request_id": rid})


def handles_errors(app) -> Callable:
    """Decorator for JSON views: any failure → the contract's error body."""

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            request = app.current_request
            try:
                response = view(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - mapped by as_error, never a stack trace
                response = error_response(as_error(exc, app))
            return compress(request, response)

        return wrapper

    return decorator


# Chalice answers some failures itself (wrong method, unsupported media type)
# in its own shape; this rewrites them into the contract's.
_CHALICE_CODES = {400: errors.InvalidJson, 404: errors.NotFound, 405: errors.MethodNotAllowed,
                  415: errors.UnsupportedMediaType, 500: errors.InternalError}


BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})


def forget_content_type_without_body(request: Any) -> None:
    """A GET, HEAD, DELETE or OPTIONS without a body has no media type to refuse (415 is
    for a body sent with a type the route does not take, contract section 3), but Chalice
    judges the Content-Type header of every request: drop it there. httpx, for one,
    keeps a form's Content-Type when it follows the dashboard's 303 to a page."""
    if (request.method or "").upper() not in BODYLESS_METHODS or "content-type" not in request.headers:
        return
    if request.raw_body:
        return
    from chalice.app import CaseInsensitiveMapping

    request.headers = CaseInsensitiveMapping(
        {name: value for name, value in request.headers.items() if name.lower() != "content-type"})


def normalise_chalice_error(response: Response) -> Response:
    body = response.body
    if response.status_code >= 400 and isinstance(body, dict) and "Code" in body and "error" not in body:
        error_class = _CHALICE_CODES.get(response.status_code, errors.InternalError)
        message = {405: "This route does not accept that method.",
                   415: "Send the body as application/json."}.get(response.status_code, str(body.get("Message")))
        headers = {k: v for k, v in response.headers.items() if k.lower() == "allow"}
        return json_response(error_class(message).body(), response.status_code, headers)
    return response
