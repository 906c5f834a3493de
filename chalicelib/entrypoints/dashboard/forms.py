"""Dashboard forms: `application/x-www-form-urlencoded` (stdlib `parse_qs`) and
`multipart/form-data` (python-multipart, the streaming parser Starlette uses;
imported on the first multipart form only).

Field values are text (UTF-8, undecodable bytes replaced); an uploaded file stays
its exact bytes (multipart is read by http.multipart_parts, shared with the API). A repeated field keeps its last value. A body over the form
limit is the contract's 413 before any parsing; a body that is not a form is a
400 with a plain sentence, never a 500.
"""
from __future__ import annotations

from typing import Optional
from urllib.parse import parse_qs

from chalicelib import errors
from chalicelib.domain.limits import MAX_HTML_BYTES

FORM_TYPES = ["application/x-www-form-urlencoded", "multipart/form-data"]
# The largest document plus room for the other fields and the multipart framing.
MAX_FORM_BYTES = MAX_HTML_BYTES + 512 * 1024
UNREADABLE = "The form could not be read; reload the page and try again."

Fields = dict[str, str]
Files = dict[str, tuple[str, bytes]]  # field name -> (file name, exact bytes)


def parse_form(content_type: Optional[str], raw: bytes | str | None) -> tuple[Fields, Files]:
    body = raw or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    if len(body) > MAX_FORM_BYTES:
        from chalicelib.domain.limits import encoded_html

        encoded_html(body.decode("utf-8", "replace"))  # the contract's 413 and message
    if (content_type or "").lower().startswith("multipart/form-data"):
        return parse_multipart(content_type or "", body)
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[-1] for name, values in fields.items()}, {}


def parse_multipart(content_type: str, body: bytes) -> tuple[Fields, Files]:
    """multipart/form-data (RFC 7578) as browsers send it, read by the API's one reader
    (http.multipart_parts, python-multipart). A file input left empty (no file name,
    no bytes) is no file."""
    from chalicelib.entrypoints.http import multipart_parts

    try:
        parts, uploads = multipart_parts(content_type, body, strict_text=False)
    except errors.ValidationFailed:
        raise errors.ValidationFailed(UNREADABLE) from None
    return dict(parts), {name: (filename, data) for name, filename, data in uploads if name}


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")
