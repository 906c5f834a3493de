"""Opaque listing cursors: base64url JSON of the listing they belong to and the
sort position of the last row returned. A cursor of another listing, or one we
never made, is BadCursor."""
from __future__ import annotations

import base64
import json
from typing import Optional

from chalicelib.ports.errors import BadCursor


def encode(listing: str, position: list) -> str:
    raw = json.dumps({"l": listing, "p": position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: Optional[str], listing: str, types: tuple[type, ...]) -> Optional[list]:
    """The position in `listing`, checked against `types`; None for no cursor."""
    if not cursor:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except (ValueError, TypeError) as exc:
        raise BadCursor("cursor is not valid") from exc
    if not isinstance(data, dict) or set(data) != {"l", "p"} or not isinstance(data["p"], list):
        raise BadCursor("cursor is not valid")
    position = data["p"]
    if len(position) != len(types) or not all(
            isinstance(v, t) and not isinstance(v, bool) for v, t in zip(position, types)):
        raise BadCursor("cursor is not valid")
    if data["l"] != listing:
        raise BadCursor("cursor belongs to another listing")
    return position
