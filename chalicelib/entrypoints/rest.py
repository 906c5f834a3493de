"""REST v1: one Chalice view per entry of chalicelib/operations.py, all alike.

A view parses the input with the operation's models (the key judged first: a
missing or unknown key is 401 whatever the input; a multipart body read here, its
fields shaped by the operation's `form`), runs the operation's `call` (one service
function) and shapes its answer (a file: http.download_response); failures go
through the one error mapping (entrypoints/http.handles_errors → as_error). The
OpenAPI document, which has no `call`, is built here from the app's routes.
"""
from __future__ import annotations

from typing import Any, Callable

from chalice import Response

from chalicelib import wiring
from chalicelib.entrypoints.http import (
    download_response, empty_response, handles_errors, is_multipart, json_response, parse_body, parse_multipart,
    parse_query, validate,
)
from chalicelib.errors import DocpubError
from chalicelib.operations import OPERATIONS, Answer, Call, Operation, Reply
from chalicelib.services.auth import credentials_from_headers


def register(app: Any, operations: tuple[Operation, ...] = OPERATIONS) -> None:
    """Add a route for every operation to `app` (a Chalice app)."""
    api = handles_errors(app)
    for op in operations:
        # A write judges its body's type in the view (parse_body, after the key), so its 415 carries
        # the X-RateLimit-* headers like every other publish and edit answer (contract section 4).
        content_types = ["*/*"] if op.write else list(op.content_types)
        app.route(op.path, methods=[op.method], name=op.name, content_types=content_types)(api(_view(app, op)))


def _answered_here(app: Any, op: Operation) -> Callable[[Call], Answer]:
    """The call of an operation that declares none: the OpenAPI document, built from the
    app's routes (chalicelib/openapi.py reads the operations; they never import it)."""
    if op.name != "openapi_document":
        raise ValueError(f"{op.name} declares no call")

    def openapi_document(c: Call) -> Answer:
        from chalicelib import openapi  # built on first request only

        return openapi.document(dict(app.routes))

    return openapi_document


def _view(app: Any, op: Operation) -> Callable[..., Any]:
    call = op.call or _answered_here(app, op)

    def view(**path: str) -> Any:
        request = app.current_request
        credentials = credentials_from_headers(request.headers) if op.auth else None
        body = query = upload = None
        try:
            if op.request is not None and op.body_optional and not request.raw_body:
                body = op.request()
            elif op.request is not None and op.form is not None and is_multipart(request):
                fields, upload = parse_multipart(request)
                body = validate(op.request, op.form(fields, upload is not None))
            elif op.request is not None:
                body = parse_body(request, op.request)
            elif request.raw_body and request.raw_body.strip():  # a body where none is taken: `{}` only
                from chalicelib.models import NoBody

                parse_body(request, NoBody)
            if op.query is not None:
                query = parse_query(request, op.query)
        except DocpubError as exc:
            if credentials is not None:  # the key is judged first; only looked up here, when the input is invalid
                key_item = wiring.workspaces().authenticate(credentials)
                if op.write:  # every publish/edit answer carries the rate-limit headers
                    exc.headers.update(wiring.documents().rate_limit_headers(key_item))
            raise
        answer = call(Call(credentials, path, body, query, request.headers, upload))
        return respond(op, answer)

    view.__name__ = op.name
    return view


def respond(op: Operation, answer: Any) -> Any:
    if answer is None or op.status == 204:
        return empty_response(op.status)
    if isinstance(answer, Reply):
        if answer.body is None:
            return empty_response(op.status, dict(answer.headers))
        return json_response(answer.body, answer.status or op.status, dict(answer.headers), answer.exclude)
    if isinstance(answer, dict) or hasattr(answer, "model_dump_json"):  # a pydantic model (not imported here)
        return json_response(answer, op.status)
    if isinstance(answer, Response):  # an answer made by the call
        return answer
    from chalicelib.services.downloads import Download

    if isinstance(answer, Download):  # a file to save
        return download_response(answer)
    raise TypeError(f"{op.name} answered {type(answer).__name__}")
