"""The shapes of an email address and of an `@domain` entry: one definition for the
request models (share_recipients, reviewers), the recipients' email step and the single
sign-on auto-join setting. Lengths are checked before the pattern (linear either way).

An address is one that mail goes to as written: a dot-atom local part (RFC 5322 atext:
no comments, quotes, commas or control characters, which a mail header reads as another
address or none) at a host name of letters, digits and hyphens. A Unicode domain is kept
in its ASCII form (IDNA: `münchen.de` is `xn--mnchen-3ya.de`), so an `@domain` entry and
an address at that domain compare equal whichever form was typed."""
from __future__ import annotations

import re
from typing import Optional

MAX_EMAIL = 254
# The loose shape the OpenAPI document states (a JSON Schema pattern cannot say IDNA).
EMAIL_SHAPE = r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$"
DOMAIN_ENTRY = r"^@(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"
_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*")

_DOMAIN = re.compile(DOMAIN_ENTRY)


def _ascii_domain(host: str) -> Optional[str]:
    """`host` in its ASCII (IDNA) form, lowercase, or None when it is no host name."""
    if not host or len(host) > MAX_EMAIL:
        return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    host = host.lower()
    return host if _DOMAIN.fullmatch("@" + host) else None


def normal_email(value: str) -> Optional[str]:
    """The address as compared and stored (lowercase, its domain in ASCII), or None."""
    value = value.strip().lower()
    if len(value) > MAX_EMAIL or value.count("@") != 1:
        return None
    local, host = value.split("@")
    ascii_host = _ascii_domain(host)
    if ascii_host is None or len(local) > 64 or not _LOCAL.fullmatch(local):
        return None
    email = f"{local}@{ascii_host}"
    return email if len(email) <= MAX_EMAIL else None


def normal_domain_entry(value: str) -> Optional[str]:
    """`@example.com` as compared and stored (lowercase, ASCII), or None."""
    value = value.strip().lower()
    if not value.startswith("@"):
        return None
    host = _ascii_domain(value[1:])
    return None if host is None else "@" + host


def written_forms(email: str) -> list[str]:
    """`email` and, when its domain is in IDNA form, the address with the Unicode domain: an
    account may have been made with either (sign-up keeps an address as typed)."""
    local, _, host = email.rpartition("@")
    forms = [email]
    if "xn--" in host:
        try:
            forms.append(f"{local}@{host.encode('ascii').decode('idna')}")
        except UnicodeError:
            pass
    return forms


def is_email(value: str) -> bool:
    """An address as written (the caller lowercases it first)."""
    return normal_email(value) == value


def is_domain_entry(value: str) -> bool:
    """`@example.com`, lowercase."""
    return len(value) <= MAX_EMAIL and _DOMAIN.fullmatch(value) is not None
