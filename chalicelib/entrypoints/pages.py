"""The front door: `GET /` (what Docpub is and how to start), `GET /docs` (the API reference,
rendered on the server from the OpenAPI document) and the favicon.

Pages are jinja2 templates (templates/site/, rendered by chalicelib.rendering,
autoescaped) with the service's strict HTML security headers; they load nothing
from other origins (no CDN, no scripts). jinja2 and the OpenAPI
builder are imported on first use, so REST requests never pay for them.
"""
from __future__ import annotations

import json
import re
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
    found = operations(document)
    return _render(request, "docs.html", info=document["info"], sections=sections(found), operations=found,
                   schemas=schemas(document), errors=error_statuses(found), path_variables=PATH_VARIABLES)


def error_statuses(found: list[dict]) -> list[tuple[str, str]]:
    """Each error status of the REST operations once, with its most common description."""
    from collections import Counter

    seen: dict[str, Counter] = {}
    for op in found:
        if op["tag"] != "oauth":
            for answer in op["responses"]:
                if answer["error"]:
                    seen.setdefault(str(answer["status"]), Counter())[answer["description"]] += 1
    return [(status, counts.most_common(1)[0][0]) for status, counts in sorted(seen.items())]


# ------------------------------------------------------------------ the reference, in the order a user meets it

# (section, what it is for, operationIds in reading order). An operation not named here
# goes to the section of its OpenAPI tag (TAG_SECTIONS), else to "More", before OAuth.
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Publish", "Create a document, or append a version to one. The answer holds its share link.",
     ("publish",)),
    ("Documents", "List, find, read, rename and delete what you published.",
     ("listDocuments", "getDocument", "updateDocument", "getDocumentStats", "listVersions", "deleteVersion",
      "deleteDocument")),
    ("Edits", "Change a document with literal find/replace edits; each batch is one new version.",
     ("editDocument",)),
    ("Feedback", "What viewers left on your share links: read it, wait for it, answer it, resolve it.",
     ("listFeedback", "replyToFeedback", "resolveFeedback")),
    ("Reviews", "Ask members to review, record decisions, wait until a document is approved.",
     ("requestReview", "listReviews", "submitReview")),
    ("Webhooks", "Be called when feedback arrives or a document changes (Standard Webhooks signatures).",
     ("createWebhook", "listWebhooks", "testWebhook", "listWebhookDeliveries", "rotateWebhookSecret",
      "deleteWebhook")),
    ("Sharing", "Replace a leaked link, protect one with a passphrase (Pro).",
     ("rotateShareLink", "setPassphrase", "removePassphrase")),
    ("Workspace and service", "Your plan and limits; the service's health and this document.",
     ("getWorkspace", "health", "openapi")),
    ("More", "", ()),
    ("OAuth", "For MCP clients that sign in instead of sending an API key (docs/mcp.md). "
              "Standard OAuth 2.1 wire formats and RFC 6749 error bodies.", ()),
)
TAG_SECTIONS = {"documents": "Documents", "feedback": "Feedback", "reviews": "Reviews", "webhooks": "Webhooks",
                "workspace": "Workspace and service",
                "service": "Workspace and service", "oauth": "OAuth"}
# Shell variables the curl examples use for path parameters, and where a reader gets one.
PATH_VARIABLES = {"document_id": ("DOC", "a `document_id`, from a publish answer or the list"),
                  "feedback_id": ("FEEDBACK_ID", "a `feedback_id`, from the feedback list"),
                  "webhook_id": ("WEBHOOK_ID", "a `webhook_id`, from creating or listing webhooks"),
                  "version_id": ("VERSION_ID", "an old version's `version_id`, from `versions` of a document"),
                  "export_id": ("EXPORT_ID", "an `export_id`, from starting an export"),
                  "version_number": ("VERSION_NUMBER", "a version's `number`, from `versions` of a document"),
                  "email": ("EMAIL", "a recipient's email address, from `recipients` of a document")}


def sections(found: list[dict]) -> list[dict]:
    by_id = {op["id"]: op for op in found}
    placed: set[str] = set()
    out: list[dict[str, Any]] = [{"name": name, "intro": intro, "anchor": "section-" + re.sub(r"[^a-z]+", "-", name.lower()),
            "operations": [by_id[i] for i in ids if i in by_id]} for name, intro, ids in SECTIONS]
    for section in out:
        placed.update(op["id"] for op in section["operations"])
    index = {section["name"]: section for section in out}
    for op in found:
        if op["id"] not in placed:
            index[TAG_SECTIONS.get(op["tag"], "More")]["operations"].append(op)
    return [section for section in out if section["operations"]]


def curl_example(method: str, path: str, op: dict, auth: bool, components: dict) -> str:
    """A curl command that runs as shown once BASE, KEY and the path's variables are set."""
    url = "$BASE" + re.sub(r"\{(\w+)\}", lambda m: "$" + PATH_VARIABLES.get(m.group(1), (m.group(1).upper(),))[0],
                           path)
    query = [(p["name"], _sample(p.get("schema") or {}, p["name"], components)) for p in op.get("parameters", [])
             if p.get("in") == "query" and p.get("required")]
    if query:
        from urllib.parse import urlencode

        url += "?" + urlencode(query, safe="$:/<>")
    content = (op.get("requestBody") or {}).get("content") or {}
    implied = "GET" if method == "GET" else "POST" if content else None  # what curl sends unasked
    parts = ["curl -s" + ("" if method == implied else f" -X {method}") + f' "{url}"']
    if auth:
        parts.append('-H "X-Api-Key: $KEY"')
    for p in op.get("parameters", []):
        if p.get("in") == "header" and p.get("required"):
            parts.append(f"-H '{p['name']}: {_sample(p.get('schema') or {}, p['name'], components)}'")
    content = (op.get("requestBody") or {}).get("content") or {}
    if "application/json" in content:
        body = content["application/json"]
        example = body.get("example", _sample(body.get("schema") or {}, "body", components))
        parts.append("-H 'Content-Type: application/json'")
        parts.append("-d " + _shell_quote(json.dumps(example, ensure_ascii=False)))
    elif "application/x-www-form-urlencoded" in content:
        form = content["application/x-www-form-urlencoded"]
        example = form.get("example") or _sample(form.get("schema") or {}, "form", components)
        for name, value in (example or {}).items():
            parts.append("-d " + _shell_quote(f"{name}={value}"))
    if len(" ".join(parts)) <= 100:
        return " ".join(parts)
    return " \\\n  ".join(parts)


def _sample(schema: dict, name: str, components: dict):
    """A plausible value for a schema: its example, default, first enum value, const, or by type."""
    if "$ref" in schema:
        return _sample(components.get(schema["$ref"].rsplit("/", 1)[-1], {}), name, components)
    for key in ("example", "const"):
        if key in schema:
            return schema[key]
    if schema.get("examples"):
        return schema["examples"][0]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("default") is not None:
        return schema["default"]
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        return _sample(options[0], name, components) if options else None
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", []))
        return {field: _sample(spec, field, components) for field, spec in (schema.get("properties") or {}).items()
                if field in required}
    if kind == "array":
        return [_sample(schema.get("items") or {}, name, components)]
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    if schema.get("format") == "uri":
        return "https://example.com/callback"
    return "<" + name + ">"  # a placeholder in the curl text (escaped by the template), not markup


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# ------------------------------------------------------------------ OpenAPI → plain data for the template

def operations(document: dict) -> list[dict]:
    """Every operation, grouped by path order then method, with its parameters, body and answers."""
    components = (document.get("components") or {}).get("schemas") or {}
    found = []
    for path, methods in sorted(document.get("paths", {}).items()):
        for method, op in sorted(methods.items(), key=lambda item: METHOD_ORDER.get(item[0].upper(), 9)):
            if not isinstance(op, dict) or method.upper() not in METHOD_ORDER:
                continue
            body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json") or {}
            auth = bool(op.get("security", document.get("security")))
            found.append({
                "id": op.get("operationId") or f"{method}-{path}",
                "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                "description": op.get("description", ""), "tag": (op.get("tags") or [""])[0],
                "auth": auth, "curl": curl_example(method.upper(), path, op, auth, components),
                "parameters": [{"name": p.get("name"), "in": p.get("in"), "required": p.get("required", False),
                                "type": type_of(p.get("schema") or {}),
                                "rules": rules_of(p.get("schema") or {}),
                                "description": p.get("description", "")} for p in op.get("parameters", [])],
                "body": type_of(body["schema"]) if body.get("schema") else None,
                "body_ref": ref_name(body.get("schema") or {}),
                "example": _json(body["example"]) if "example" in body else None,
                "responses": [{"status": status, "description": answer.get("description", ""),
                               "type": _answer_type(answer), "ref": _answer_ref(answer),
                               "error": str(status)[:1] in "45"}
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
    return json.dumps(value, ensure_ascii=False, indent=2)


__all__ = ["landing", "api_reference", "favicon", "HTML_SECURITY_HEADERS"]
