"""Errors raised by the client, one class per exit-code class.

Every error carries the contract's ``code`` (e.g. ``edit_ambiguous``), a one-line
``message``, the HTTP ``status`` (``None`` when no answer was received) and the
contract's ``details`` object.
"""
from __future__ import annotations

from typing import Any, Optional

# Exit statuses of the `docpub` command, one per class of failure.
EXIT_OK = 0
EXIT_USAGE = 2       # bad command line, or a request the service rejects as invalid (400/405/409/415/422)
EXIT_AUTH = 3        # no key configured, missing/unknown/revoked key (401)
EXIT_NOT_FOUND = 4   # unknown document, version or feedback (404)
EXIT_LIMIT = 5       # plan limit, Pro-only feature, too large, rate limited after retries (403/413/429)
EXIT_SERVER = 6      # 5xx, connection failure, unexpected answer


class DocpubError(Exception):
    """Base class of every error the client raises."""

    exit_code = EXIT_SERVER
    default_code = "error"

    def __init__(self, message: str, code: Optional[str] = None, status: Optional[int] = None,
                 details: Optional[dict[str, Any]] = None):
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.status = status
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        """The contract's error body: ``{"error": {"code", "message", "details"?}}``."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class UsageError(DocpubError):
    """The request is invalid (bad arguments, validation_error, edit_not_found, no_change, …)."""

    exit_code = EXIT_USAGE
    default_code = "usage_error"


class AuthError(DocpubError):
    """No API key, or the key is unknown or revoked."""

    exit_code = EXIT_AUTH
    default_code = "unauthorized"


class NotFoundError(DocpubError):
    exit_code = EXIT_NOT_FOUND
    default_code = "not_found"


class LimitError(DocpubError):
    """Plan limit, Pro-only feature, document too large, or rate limited (after retries)."""

    exit_code = EXIT_LIMIT
    default_code = "limit"


class ServerError(DocpubError):
    """The service failed (5xx) or could not be reached."""

    exit_code = EXIT_SERVER
    default_code = "internal_error"


class ConnectionFailed(ServerError):
    default_code = "connection_error"


_BY_CODE = {
    "unauthorized": AuthError,
    "invalid_api_key": AuthError,
    "plan_limit_reached": LimitError,
    "feature_not_in_plan": LimitError,
    "document_too_large": LimitError,
    "rate_limited": LimitError,
    "not_found": NotFoundError,
}


def error_from_response(status: int, body: Any) -> DocpubError:
    """Build the right error from a non-2xx answer (contract body, or anything else)."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        message = str(error.get("message") or code)
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    else:
        code, message, details = _code_for_status(status), f"HTTP {status} from the service", {}
    cls = _BY_CODE.get(code) or _class_for_status(status)
    return cls(message, code=code, status=status, details=details)


def _class_for_status(status: int) -> type[DocpubError]:
    if status == 401:
        return AuthError
    if status == 404:
        return NotFoundError
    if status in (403, 413, 429):
        return LimitError
    if 400 <= status < 500:
        return UsageError
    return ServerError


def _code_for_status(status: int) -> str:
    return {400: "invalid_json", 401: "unauthorized", 403: "forbidden", 404: "not_found",
            405: "method_not_allowed", 409: "version_conflict", 413: "document_too_large",
            415: "unsupported_media_type", 422: "validation_error", 429: "rate_limited"}.get(
        status, "internal_error" if status >= 500 else "http_error")
