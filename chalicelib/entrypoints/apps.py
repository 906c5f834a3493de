"""The Chalice apps of Docpub's functions, and what every one of them shares.

Two apps run the same routes' code: app.py's (the API function: every route) and
the share function's (chalicelib/entrypoints/edge.py: `/d/*` only, so its cold
start never imports the REST operations, the dashboard, MCP or OAuth). Both are
made by `new_app`: the same logging, binary types and the contract's middleware
(origin secret, separate content site, resource bounds, Chalice's own errors in
the contract's shape).

A blueprint both apps register (the share pages) is a `blueprints.SharedBlueprint`:
the middleware here names the app dispatching each request.
"""
from __future__ import annotations

from typing import Any

from chalice import Chalice

from chalicelib.entrypoints.blueprints import dispatching


def new_app() -> Chalice:
    """A Chalice app with Docpub's configuration check, logging and middleware; the
    caller registers its routes, then calls routing.add_method_not_allowed last."""
    from chalicelib import config, logs
    from chalicelib.entrypoints import admission
    from chalicelib.entrypoints.http import (
        MULTIPART_TYPE, forget_content_type_without_body, normalise_chalice_error, refuse_without_origin_secret,
    )
    from chalicelib.entrypoints.share import separate_sites

    config.check_startup()  # deployed without DOCPUB_SECRET_KEY: refuse to start (no public default)
    # configure_logs=False: Chalice would add its own plain handler to the "docpub" logger, and every
    # line came out twice, plain and as JSON (issue 33); chalicelib/logs.py owns the one handler.
    app = Chalice(app_name="docpub", configure_logs=False)
    # Uploads (multipart) reach the function as bytes, base64-encoded by API Gateway.
    app.api.binary_types.append(MULTIPART_TYPE)
    logs.configure()

    @app.middleware("http")
    def contract_errors(event: Any, get_response: Any) -> Any:
        with dispatching(app):
            # Only CloudFront may call the origin (when it has a secret): 403 otherwise.
            refused = refuse_without_origin_secret(event)
            if refused is not None:
                return refused
            # With DOCPUB_CONTENT_URL: that origin serves document content only, and only it does.
            elsewhere = separate_sites(event)
            if elsewhere is not None:
                return elsewhere
            # Undecodable headers, credentials where needed, the route's body cap: before any view reads the body.
            refused = admission.admit_event(event, app)
            if refused is not None:
                return refused
            # Chalice answers 405/415 itself, in its own shape; reshape to the contract's. A request
            # without a body is not refused for its Content-Type.
            forget_content_type_without_body(event)
            return normalise_chalice_error(get_response(event))

    return app
