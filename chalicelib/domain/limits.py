"""Size rule shared by publish, edit and dashboard upload."""
from __future__ import annotations

from chalicelib.errors import DocumentTooLarge, InvalidJson
from chalicelib.models import MAX_HTML_BYTES


def encoded_html(html: str) -> bytes:
    """UTF-8 bytes of a document, refusing anything over the limit with 413."""
    try:
        data = html.encode("utf-8")
    except UnicodeEncodeError:
        # Only reachable with a lone surrogate the JSON parse let through.
        raise InvalidJson("The request body contains an unpaired UTF-16 surrogate.") from None
    return checked_size(data)


def checked_size(data: bytes) -> bytes:
    """`data` if within the limit, else 413 `document_too_large`."""
    if len(data) > MAX_HTML_BYTES:
        raise too_large(len(data))
    return data


def too_large(size_bytes: int, edit_index: int | None = None) -> DocumentTooLarge:
    """The contract's 413; for an edit batch it names the first edit whose result
    would exceed the limit and the size that edit would produce."""
    details = {"limit_bytes": MAX_HTML_BYTES, "size_bytes": size_bytes}
    if edit_index is None:
        return DocumentTooLarge(
            f"The HTML is {size_bytes:,} bytes; the limit is {MAX_HTML_BYTES:,} bytes (4 MiB). "
            "Inlined base64 images are the usual cause: host images at a URL instead.", details)
    details["edit_index"] = edit_index
    return DocumentTooLarge(
        f"edits[{edit_index}] would make the HTML {size_bytes:,} bytes; the limit is "
        f"{MAX_HTML_BYTES:,} bytes (4 MiB). Nothing was changed.", details)
