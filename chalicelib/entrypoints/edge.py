"""The public share path as its own function (infra/resources.yaml `ShareFunction`).

CloudFront sends `/d/*` (share pages, document content, the view beacon, unlock,
feedback) to a Lambda function URL instead of API Gateway: a flood of viewers then
runs on this function's reserved concurrency, never on the API's and the
dashboard's, and the view beacon pays no API Gateway request price
(docs/scaling.md, "Views: a viral link").

The app is its own Chalice app (`share_app`: the share routes and app.py's middleware,
built by the same code). A function URL
hands the function an HTTP API payload 2.0 event, and Chalice routes API Gateway REST
proxy events, so `handle` translates one into the other and the answer back: the
route template and its parameters are matched against the app's own route table,
cookies join the Cookie header, multi-valued answers keep every value (Set-Cookie goes
out as the payload's `cookies`). Anything outside `/d/` is 404 here: this function
serves the share paths only. Requests must still carry CloudFront's origin secret
(the app refuses others with 403), which is why the URL's AuthType can be NONE (origin
access control would sign requests, but Lambda then refuses a POST whose body hash a
browser cannot send: every beacon and feedback form).
"""
from __future__ import annotations

import functools
import json
from typing import Optional
from urllib.parse import parse_qs, unquote

SHARE_PREFIX = "/d/"
NOT_FOUND = {"error": {"code": "not_found", "message": "No such route."}}
SET_COOKIE_NAMES = frozenset({"set-cookie"})


def share_app():
    """The share function's own Chalice app: app.py's configuration and middleware
    (entrypoints/apps.py) and the share pages' routes, nothing else: its cold start
    never imports the REST operations, the dashboard, MCP or OAuth
    (tests/http/test_cold_start.py, bench/cold_start.py)."""
    from chalicelib.entrypoints import routing
    from chalicelib.entrypoints.apps import new_app
    from chalicelib.entrypoints.share import bp

    built = new_app()
    built.register_blueprint(bp)
    routing.add_method_not_allowed(built)  # last: 405 for every method a route lacks
    return built


# Built at import: Lambda's init phase, before the first viewer waits.
app = share_app()


def _app():
    return app


@functools.lru_cache(maxsize=1)
def _templates() -> list[tuple[tuple[str, ...], str]]:
    """The app's share routes as (segments, template), most literal segments first."""
    found = [(tuple(path.strip("/").split("/")), path) for path in _app().routes if path.startswith(SHARE_PREFIX)]
    return sorted(found, key=lambda t: (-sum(not s.startswith("{") for s in t[0]), t[1]))


def match(path: str) -> Optional[tuple[str, dict]]:
    """(route template, path parameters) of the app's route for `path`, or None."""
    segments = path.strip("/").split("/")
    for template, name in _templates():
        if len(template) != len(segments):
            continue
        captured = {}
        for pattern, segment in zip(template, segments):
            if pattern.startswith("{") and pattern.endswith("}"):
                if not segment:
                    break
                captured[pattern[1:-1]] = unquote(segment)
            elif pattern != segment:
                break
        else:
            return name, captured
    return None


def rest_event(event: dict) -> Optional[dict]:
    """The REST proxy event (what API Gateway would send) for a function URL event, or
    None when no share route matches."""
    http = event["requestContext"]["http"]
    path = event.get("rawPath") or http.get("path") or "/"
    found = match(path) if path.startswith(SHARE_PREFIX) else None
    if found is None:
        return None
    template, parameters = found
    headers = dict(event.get("headers") or {})
    if event.get("cookies"):
        headers["cookie"] = "; ".join(event["cookies"])
    query = parse_qs(event.get("rawQueryString") or "", keep_blank_values=True)
    method = http["method"].upper()
    return {
        "resource": template, "path": path, "httpMethod": method,
        "headers": headers, "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": parameters or None, "stageVariables": None,
        "requestContext": {"resourcePath": template, "httpMethod": method, "path": path, "stage": "$default",
                           "requestId": event["requestContext"].get("requestId", ""),
                           "domainName": event["requestContext"].get("domainName", ""),
                           "identity": {"sourceIp": http.get("sourceIp", ""), "userAgent": http.get("userAgent")}},
        "body": event.get("body"), "isBase64Encoded": bool(event.get("isBase64Encoded")),
    }


def url_response(answer: dict) -> dict:
    """A REST proxy answer as a function URL answer (payload 2.0)."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    values: dict[str, list[str]] = {}
    for name, value in (answer.get("headers") or {}).items():
        values.setdefault(name, []).append(value)
    for name, many in (answer.get("multiValueHeaders") or {}).items():
        values.setdefault(name, []).extend(many)
    for name, many in values.items():
        if name.lower() in SET_COOKIE_NAMES:  # a header name, not a secret
            cookies.extend(many)
        else:
            headers[name] = ", ".join(many)
    out = {"statusCode": answer["statusCode"], "headers": headers, "body": answer.get("body") or "",
           "isBase64Encoded": bool(answer.get("isBase64Encoded"))}
    if cookies:
        out["cookies"] = cookies
    return out


def handle(event, context) -> dict:
    """Lambda handler for the share function's URL."""
    translated = rest_event(event)
    if translated is None:
        return {"statusCode": 404, "body": json.dumps(NOT_FOUND),
                "headers": {"Content-Type": "application/json", "Cache-Control": "no-store"}}
    return url_response(_app()(translated, context))
