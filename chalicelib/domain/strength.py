"""Is a secret a person chose easy to guess? One rule for account passwords and
share-link passphrases (contract 4 and 7d): zxcvbn's score must be 2 or more,
judged on the first 72 characters (its cost grows with length; any weakness
shows in the first characters anyway), with what the service knows about the
person (email, name) as context, so `ada.lovelace2024` is weak for Ada."""
from __future__ import annotations

import re
from typing import Iterable, Optional

MIN_SCORE = 2
CHECKED_CHARS = 72


def weakness(secret: str, context: Iterable[str] = ()) -> Optional[str]:
    """None if strong enough, else why not, in a sentence or two."""
    from zxcvbn import zxcvbn  # lazy: only password and passphrase changes pay for its dictionaries

    words: list[str] = []
    for value in context:
        if value:
            words.append(value)
            words.extend(w for w in re.split(r"[^0-9A-Za-z]+", value) if len(w) >= 3)
    result = zxcvbn(secret[:CHECKED_CHARS], user_inputs=words)
    if result["score"] >= MIN_SCORE:
        return None
    feedback = result.get("feedback") or {}
    reasons = [feedback.get("warning") or "It is too easy to guess."] + list(feedback.get("suggestions") or [])
    return " ".join(r.strip().rstrip(".") + "." for r in reasons if r and r.strip())
