"""Route-table helpers."""
from __future__ import annotations

from chalicelib import errors
from chalicelib.entrypoints.http import error_response

ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def add_method_not_allowed(app) -> None:
    """Register a 405 answer for each method a path does not define.

    API Gateway answers an undefined method with 403 "Missing Authentication
    Token"; defining it explicitly gives clients the contract's 405 instead.
    """
    for path, methods in list(app.routes.items()):
        missing = [m for m in ALL_METHODS if m not in methods]
        if not missing:
            continue
        allowed = ", ".join(sorted(methods))

        def method_not_allowed(allowed=allowed, **_params):
            error = errors.MethodNotAllowed(f"This route accepts {allowed}.")
            error.headers["Allow"] = allowed
            return error_response(error)

        app.route(path, methods=missing, content_types=["*/*"])(method_not_allowed)
