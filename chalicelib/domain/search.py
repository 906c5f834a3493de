"""Text search folding: `Café`, `CAFE` and `cafe\\u0301` are the same word.

One function, used on both sides of every text match (documents' title and
description against `query`), so both stores and every surface agree."""
from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Case-insensitive, accent-insensitive, normalisation-form-insensitive key:
    compatibility decomposition, combining marks dropped, case folded."""
    if text.isascii():
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", stripped.casefold())
