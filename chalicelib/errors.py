"""The contract's error vocabulary (API-CONTRACT.md section 3).

Every failure the service can explain is one of these; adapters (REST, MCP,
dashboard, share pages) turn them into their own shape in one place each.
"""
from __future__ import annotations

from typing import Any


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


class DocumentTooLarge(DocpubError):
    status, code = 413, "document_too_large"


class UnsupportedMediaType(DocpubError):
    status, code = 415, "unsupported_media_type"


class ValidationFailed(DocpubError):
    status, code = 422, "validation_error"

    @classmethod
    def field(cls, field: str, message: str) -> "ValidationFailed":
        return cls(f"{field}: {message}", {"fields": [{"field": field, "message": message}]})


class EditNotFound(DocpubError):
    status, code = 422, "edit_not_found"


class EditAmbiguous(DocpubError):
    status, code = 422, "edit_ambiguous"


class NoChange(DocpubError):
    status, code = 422, "no_change"


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
