"""The contract's error vocabulary (docs/contract.md, Errors).

Every failure the service can explain is one of these; adapters (REST, MCP,
dashboard, share pages) turn them into their own shape in one place each.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence


class DocpubError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None, status: int | None = None):
        super().__init__(message)
        if status is not None:  # an answer relayed from a library keeps its own status
            self.status = status
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"error": error}


class InvalidJson(DocpubError):
    status, code = 400, "invalid_json"


class BadRequest(DocpubError):
    """A request the server cannot read at all (e.g. a header value that is not Latin-1)."""
    status, code = 400, "invalid_request"


class Unauthorized(DocpubError):
    status, code = 401, "unauthorized"


class InvalidApiKey(DocpubError):
    status, code = 401, "invalid_api_key"


class PlanLimitReached(DocpubError):
    status, code = 403, "plan_limit_reached"


class FeatureNotInPlan(DocpubError):
    status, code = 403, "feature_not_in_plan"


class Forbidden(DocpubError):
    status, code = 403, "forbidden"


class NotFound(DocpubError):
    status, code = 404, "not_found"


class MethodNotAllowed(DocpubError):
    status, code = 405, "method_not_allowed"


class VersionConflict(DocpubError):
    status, code = 409, "version_conflict"


class AlreadyResolved(DocpubError):
    """Accepting a suggestion that is already resolved (accepted, or rejected) (contract 7e)."""
    status, code = 409, "already_resolved"


class Gone(DocpubError):
    """A share link past its `share_expires_at` (an HTML page on /d/...)."""
    status, code = 410, "gone"


class DocumentTooLarge(DocpubError):
    status, code = 413, "document_too_large"


class BundleTooLarge(DocpubError):
    status, code = 413, "bundle_too_large"


class UnsupportedMediaType(DocpubError):
    status, code = 415, "unsupported_media_type"


class ValidationFailed(DocpubError):
    status, code = 422, "validation_error"

    @classmethod
    def field(cls, field: str, message: str) -> "ValidationFailed":
        return cls(f"{field}: {message}", {"fields": [{"field": field, "message": message}]})

    @classmethod
    def from_pydantic(cls, problems: Sequence[Mapping[str, Any]]) -> "ValidationFailed":
        """pydantic's `ValidationError.errors()` said in Docpub's words (`title: must not be blank`).
        The one place where validation wording is decided: REST, MCP and the dashboard use it."""
        fields = [{"field": ".".join(str(p) for p in problem.get("loc", ())) or "body",
                   "message": plain_message(dict(problem))} for problem in problems] or [
                  {"field": "body", "message": "is not valid"}]
        first = fields[0]
        return cls(f"{first['field']}: {first['message']}", {"fields": fields})


# Field-specific wording where the generic one would be vague (field path -> message).
_FIELD_MESSAGES = {
    "edits": "give 1 to 100 edits",
    "document_id": "must be a document id (a UUID such as 3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60)",
}


def _plural(count: Any, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _each(kinds: tuple[str, ...], phrase: str) -> dict[str, str]:
    return dict.fromkeys(kinds, phrase)


# pydantic error type -> plain phrase (a string, or a function of the error's ctx).
_PHRASES: dict[str, Any] = {
    **_each(("missing", "missing_argument", "missing_keyword_only_argument", "missing_positional_only_argument"),
            "is required"),
    **_each(("extra_forbidden", "unexpected_keyword_argument", "unexpected_positional_argument"),
            "is not a field of this request"),
    "string_too_short": lambda c: "must not be empty" if c.get("min_length") == 1
    else f"must be at least {_plural(c.get('min_length'), 'character')}",
    "string_too_long": lambda c: f"must be at most {_plural(c.get('max_length'), 'character')}",
    "too_short": lambda c: f"must have at least {_plural(c.get('min_length'), 'item')}",
    "too_long": lambda c: f"must have at most {_plural(c.get('max_length'), 'item')}",
    "string_pattern_mismatch": "is not in the expected format",
    **_each(("string_type", "string_sub_type"), "must be a string"),
    **_each(("int_type", "int_parsing", "int_from_float", "int_parsing_size"), "must be a whole number"),
    **_each(("float_type", "float_parsing"), "must be a number"),
    **_each(("bool_type", "bool_parsing"), "must be true or false"),
    **_each(("list_type", "tuple_type", "set_type"), "must be a list"),
    **_each(("dict_type", "model_type", "model_attributes_type", "dataclass_type"), "must be an object"),
    "none_required": "must be null",
    "greater_than_equal": lambda c: f"must be at least {c.get('ge')}",
    "greater_than": lambda c: f"must be more than {c.get('gt')}",
    "less_than_equal": lambda c: f"must be at most {c.get('le')}",
    "less_than": lambda c: f"must be less than {c.get('lt')}",
    "literal_error": lambda c: f"must be one of {c.get('expected', '')}".rstrip(),
    **_each(("string_unicode", "unicode_error"), "must be valid text (UTF-8)"),
}
_PHRASES["enum"] = _PHRASES["literal_error"]


def plain_message(problem: dict[str, Any]) -> str:
    """One pydantic error (a dict of `ValidationError.errors()`) as a short plain phrase,
    without library phrasing ("Value error, …", "Input should …", "List should have …")."""
    kind = problem.get("type", "")
    ctx = problem.get("ctx") or {}
    field = ".".join(str(p) for p in problem.get("loc", ()))
    if kind in ("too_short", "too_long", "string_pattern_mismatch") and field in _FIELD_MESSAGES:
        return _FIELD_MESSAGES[field]
    phrase = _PHRASES.get(kind)
    if phrase is not None:
        return phrase(ctx) if callable(phrase) else phrase
    if kind in ("value_error", "assertion_error") and ctx.get("error") is not None:
        return str(ctx["error"])  # our own validators already speak plainly ("must not be blank")
    text = str(problem.get("msg") or "is not valid")
    for prefix in ("Value error, ", "Assertion failed, "):
        text = text.removeprefix(prefix)
    return text[:1].lower() + text[1:]


class SecretDetected(DocpubError):
    """The content holds a credential and the workspace blocks them (contract 7g):
    details `{"findings": [{"rule", "path"?, "line", "column", "preview"}]}`."""
    status, code = 422, "secret_detected"


class EditNotFound(DocpubError):
    status, code = 422, "edit_not_found"


class EditAmbiguous(DocpubError):
    status, code = 422, "edit_ambiguous"


class NoChange(DocpubError):
    status, code = 422, "no_change"


class UriTooLong(DocpubError):
    """The request line is over the server's limit (the local server: 65,536 bytes)."""
    status, code = 414, "uri_too_long"


class HeadersTooLarge(DocpubError):
    """The header block is over the server's limits (the local server: a line over 65,536
    bytes, or more than 100 header fields)."""
    status, code = 431, "headers_too_large"


class RateLimited(DocpubError):
    status, code = 429, "rate_limited"

    def __init__(self, retry_after_seconds: int, message: str | None = None):
        retry_after_seconds = max(1, int(retry_after_seconds))
        super().__init__(
            message or f"Rate limit exceeded; retry in {retry_after_seconds} s.",
            {"retry_after_seconds": retry_after_seconds},
            {"Retry-After": str(retry_after_seconds)},
        )
        self.retry_after_seconds = retry_after_seconds


class ServiceUnavailable(DocpubError):
    status, code = 503, "service_unavailable"

    def __init__(self, message: str = "Storage is temporarily unavailable; retry shortly.",
                 retry_after_seconds: int = 1):
        super().__init__(message, {"retry_after_seconds": retry_after_seconds},
                         {"Retry-After": str(retry_after_seconds)})


class InsufficientStorage(DocpubError):
    """The embedded store's disk is full; nothing was written (reads and deletes still work)."""
    status, code = 507, "insufficient_storage"


class InternalError(DocpubError):
    status, code = 500, "internal_error"


class VersionContentMissing(InternalError):
    """A committed version whose HTML object is gone: not storage trouble that a
    retry fixes (never a 503 forever), but a clear, logged 500 that says how to repair."""

    def __init__(self, version_id: str):
        import uuid

        super().__init__(
            f"The HTML of version {version_id} is missing from storage; it has been logged. "
            "Publish the document again (or restore another version) to repair it.",
            {"version_id": version_id, "request_id": str(uuid.uuid4())})


class ForbiddenRole(DocpubError):
    """A member's role does not allow the action (contract 7d)."""
    status, code = 403, "forbidden_role"

    def __init__(self, role: str, message: str | None = None):
        super().__init__(message or f"Your role in this workspace ({role}) does not allow this.", {"role": role})
        self.role = role
