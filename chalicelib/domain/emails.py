"""The shapes of an email address and of an `@domain` entry: one definition for the
request models (share_recipients, reviewers), the recipients' email step and the single
sign-on auto-join setting. Lengths are checked before the pattern (linear either way)."""
from __future__ import annotations

import re

MAX_EMAIL = 254
EMAIL_SHAPE = r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$"
DOMAIN_ENTRY = r"^@(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"

_EMAIL = re.compile(EMAIL_SHAPE)
_DOMAIN = re.compile(DOMAIN_ENTRY)


def is_email(value: str) -> bool:
    """An address as written (the caller lowercases it first)."""
    return len(value) <= MAX_EMAIL and _EMAIL.fullmatch(value) is not None


def is_domain_entry(value: str) -> bool:
    """`@example.com`, lowercase."""
    return len(value) <= MAX_EMAIL and _DOMAIN.fullmatch(value) is not None
