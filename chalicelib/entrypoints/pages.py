"""The front door: `GET /` (what Docpub is and how to start), `GET /docs` (the API reference,
rendered on the server from the OpenAPI document) and the favicon.

Pages are jinja2 templates (templates/site/, rendered by chalicelib.rendering,
autoescaped) with the service's strict HTML security headers; they load nothing
from other origins (no CDN, no scripts). jinja2 and the OpenAPI
builder are imported on first use, so REST requests never pay for them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from chalice import Response

from chalicelib import config, rendering
from chalicelib.entrypoints.http import HTML_SECURITY_HEADERS, compress, html_response

ROOT = Path(__file__).resolve().parent.parent
FAVICON = ROOT / "static" / "dashboard" / "favicon.svg"
CACHE_PAGE = "public, max-age=300"
METHOD_ORDER = {"GET": 0, "POST": 1, "PUT": 2, "PATCH": 3, "DELETE": 4}


def _render(request, template: str, **context: Any) -> Response:
    body = rendering.page("site/" + template, base_url=config.base_url(), **context)
    return compress(request, html_response(body, headers={"Cache-Control": CACHE_PAGE}))


def landing(request) -> Response:
    return _render(request, "landing.html")


def favicon(request) -> Response:
    return Response(FAVICON.read_text(encoding="utf-8"), status_code=200, headers={
        "Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400",
        "X-Content-Type-Options": "nosniff"})


def api_reference(request, routes: dict) -> Response:
    from chalicelib import openapi

    document = openapi.document(routes)
    return _render(request, "docs.html", info=document["info"], operations=operations(document),
                   schemas=schemas(document))


# ------------------------------------------------------------------ OpenAPI → plain data for the template

def operations(document: dict) -> list[dict]:
    """Every operation, grouped by path order then method, with its parameters, body and answers."""
    found = []
    for path, methods in sorted(document.get("paths", {}).items()):
        for method, op in sorted(methods.items(), key=lambda item: METHOD_ORDER.get(item[0].upper(), 9)):
            if not isinstance(op, dict) or method.upper() not in METHOD_ORDER:
                continue
            body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json") or {}
            found.append({
                "id": op.get("operationId") or f"{method}-{path}",
                "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                "description": op.get("description", ""),
                "auth": bool(op.get("security", document.get("security"))),
                "parameters": [{"name": p.get("name"), "in": p.get("in"), "required": p.get("required", False),
                                "type": type_of(p.get("schema") or {}),
                                "rules": rules_of(p.get("schema") or {}),
                                "description": p.get("description", "")} for p in op.get("parameters", [])],
                "body": type_of(body["schema"]) if body.get("schema") else None,
                "body_ref": ref_name(body.get("schema") or {}),
                "example": _json(body["example"]) if "example" in body else None,
                "responses": [{"status": status, "description": answer.get("description", ""),
                               "type": _answer_type(answer), "ref": _answer_ref(answer)}
                              for status, answer in sorted((op.get("responses") or {}).items())],
            })
    return found


def schemas(document: dict) -> list[dict]:
    out = []
    for name, schema in sorted(((document.get("components") or {}).get("schemas") or {}).items()):
        required = set(schema.get("required", []))
        out.append({"name": name, "description": schema.get("description", ""),
                    "fields": [{"name": field, "type": type_of(spec), "ref": ref_name(spec),
                                "required": field in required, "rules": rules_of(spec),
                                "description": spec.get("description", "")}
                               for field, spec in (schema.get("properties") or {}).items()]})
    return out


def ref_name(schema: dict) -> Optional[str]:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for option in schema.get("anyOf", []):
        if "$ref" in option:
            return option["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return ref_name(schema.get("items") or {})
    return None


def type_of(schema: dict) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(type_of(option) for option in schema["anyOf"]))
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "const" in schema:
        return _json(schema["const"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {type_of(schema.get('items') or {})}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind


def rules_of(schema: dict) -> str:
    rules = []
    options = schema.get("anyOf", [schema])
    for option in options:
        if "minLength" in option or "maxLength" in option:
            rules.append(f"{option.get('minLength', 0)} to {option['maxLength']} characters" if "maxLength" in option
                         else f"at least {option['minLength']} characters")
        if "minimum" in option or "maximum" in option:
            rules.append(f"{option.get('minimum', '…')} to {option.get('maximum', '…')}")
        if "minItems" in option or "maxItems" in option:
            rules.append(f"{option.get('minItems', 0)} to {option.get('maxItems', '…')} items")
        if option.get("pattern") == r"\S":
            rules.append("not blank")
        elif "pattern" in option:
            rules.append(f"pattern {option['pattern']}")
    if "default" in schema and schema["default"] is not None:
        rules.append(f"default {_json(schema['default'])}")
    return "; ".join(rules)


def _answer_type(answer: dict) -> str:
    schema = ((answer.get("content") or {}).get("application/json") or {}).get("schema")
    return type_of(schema) if schema else ""


def _answer_ref(answer: dict) -> Optional[str]:
    schema = ((answer.get("content") or {}).get("application/json") or {}).get("schema")
    return ref_name(schema) if schema else None


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=2)


__all__ = ["landing", "api_reference", "favicon", "HTML_SECURITY_HEADERS"]
