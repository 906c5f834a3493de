"""What a request may cost before any view runs: the body cap, the authentication
and the refusal's shape of each route, in one table (API contract section 4,
resource bounds). entrypoints/admission.py applies it at the door (the Lambda
handler and the local server); entrypoints/http.py reads it before parsing a body.

- API routes and /mcp take 6 MiB bodies (Lambda's own payload limit), as do the
  dashboard's upload and edit forms; every other form (share page unlock,
  feedback and replies, OAuth, dashboard) 64 KiB.
- A refusal takes the route's shape: the contract's JSON body (API, /mcp, the
  share page's feedback, replies and reviews), an RFC 6749 body (OAuth) or a small HTML
  page (pages and their forms).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from chalicelib import errors

API_BODY_BYTES = 6 * 1024 * 1024
FORM_BODY_BYTES = 64 * 1024
# The largest file an upload may declare: a .zip of a page and its 32 MiB of files.
UPLOAD_BODY_BYTES = 32 * 1024 * 1024 + 4 * 1024 * 1024


@dataclass(frozen=True)
class BodyRule:
    cap_bytes: int
    authenticate: Optional[str] = None  # "api_key", "mcp" (an API key or an OAuth access token), or None
    surface: str = "json"               # how a refusal is shaped: json, oauth, html


# First match wins: (methods or None for any, path pattern, rule).
_RULES: list[tuple[Optional[frozenset], re.Pattern, BodyRule]] = [
    (None, re.compile(r"/api/v1/(health|openapi\.json)"), BodyRule(FORM_BODY_BYTES)),
    (None, re.compile(r"/api/v1/.*"), BodyRule(API_BODY_BYTES, "api_key")),
    (None, re.compile(r"/mcp"), BodyRule(API_BODY_BYTES, "mcp")),
    (None, re.compile(r"/oauth/.*"), BodyRule(FORM_BODY_BYTES, surface="oauth")),
    (frozenset({"POST"}), re.compile(r"/dashboard/(upload|documents/[^/]+/edit)"),
     BodyRule(API_BODY_BYTES, surface="html")),
    # The share page's JSON routes (contract 7c, 7e: their errors use section 3's body), then its forms.
    (frozenset({"POST"}), re.compile(r"/d/[^/]+/(feedback(/[^/]+/replies)?|reviews)"), BodyRule(FORM_BODY_BYTES)),
    (None, re.compile(r"/(dashboard|d)(/.*)?"), BodyRule(FORM_BODY_BYTES, surface="html")),
    # The embedded store's upload_url (contract 7b): the signed URL is the credential, and the
    # body is the declared file (its own check refuses any other size).
    (frozenset({"PUT"}), re.compile(r"/uploads/[^/]+"), BodyRule(UPLOAD_BODY_BYTES)),
]
_DEFAULT = BodyRule(FORM_BODY_BYTES)


def body_rule(method: str, path: str) -> BodyRule:
    path = path.split("?", 1)[0]
    for methods, pattern, rule in _RULES:
        if (methods is None or method.upper() in methods) and pattern.fullmatch(path):
            return rule
    return _DEFAULT


def body_too_large(size_bytes: int, cap_bytes: int) -> errors.DocpubError:
    # Only a route that takes files has a way around its cap (a form's text has none).
    hint = " Larger files go through POST /api/v1/uploads." if cap_bytes >= API_BODY_BYTES else ""
    return errors.DocumentTooLarge(
        f"The request body is {size_bytes:,} bytes; this route takes at most {cap_bytes:,} bytes "
        f"({_human(cap_bytes)}). It was not read.{hint}",
        {"limit_bytes": cap_bytes, "size_bytes": size_bytes})


def _human(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size >= 1024 * 1024 else f"{size // 1024} KiB"
