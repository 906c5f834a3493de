"""Route-table helpers."""
from __future__ import annotations

from chalicelib import errors
from chalicelib.entrypoints.http import EncodedResponse, error_response

FILLED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def method_not_allowed_view(view):
    """Mark a view as a 405 answer, so it never counts as an allowed method."""
    view.docpub_method_not_allowed = True
    return view


def add_method_not_allowed(app) -> None:
    """Answer HEAD like GET without a body, and 405 for every other method a
    path does not define.

    API Gateway answers an undefined method with 403 "Missing Authentication
    Token"; defining it explicitly gives clients the contract's 405 instead,
    with an `Allow` header that lists only the methods that really work.
    """
    for path, entries in list(app.routes.items()):
        real = sorted(m for m, entry in entries.items()
                      if not getattr(entry.view_function, "docpub_method_not_allowed", False))
        if "GET" in real and "HEAD" not in entries:
            app.route(path, methods=["HEAD"], content_types=["*/*"])(_head_of(entries["GET"].view_function))
            real = sorted(set(real) | {"HEAD"})
        missing = [m for m in FILLED_METHODS if m not in entries]
        if not missing:
            continue
        allowed = ", ".join(real)

        @method_not_allowed_view
        def method_not_allowed(allowed=allowed, **_params):
            error = errors.MethodNotAllowed(f"This route accepts {allowed}.")
            error.headers["Allow"] = allowed
            return error_response(error)

        app.route(path, methods=missing, content_types=["*/*"])(method_not_allowed)


def _head_of(get_view):
    def head(**params):
        response = get_view(**params)
        response.body = b"" if isinstance(response, EncodedResponse) else ""
        return response

    return head
