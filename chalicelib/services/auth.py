"""API keys: format, hashing and verification.

A key is `dpk_` + 43 URL-safe characters (256 bits). Only its SHA-256 is stored
(a fast hash is right for a high-entropy secret; argon2 is for passwords). The
item's key is derived from the hash, so verifying a key is one GetItem.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Mapping, Optional

from chalicelib.ports.records import ApiKey
from chalicelib.errors import InvalidApiKey, Unauthorized

KEY_PREFIX = "dpk_"
_KEY_SHAPE = re.compile(r"^dpk_[A-Za-z0-9_-]{32,128}$")


def generate_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


def key_id_for(key_hash: str) -> str:
    return "key_" + key_hash[:20]


def display_prefix(api_key: str) -> str:
    return api_key[:10] + "…"


@dataclass(frozen=True)
class Credentials:
    """A presented API key, parsed and hashed; verified later against storage."""
    key_id: str
    key_hash: str
    surface: str = "api"  # or "mcp": where the key was presented (the activity log says)
    # The operation a service was asked for (access.requires): checked against the role
    # of the key's creator once the key is read (access.key_actor), in the same read.
    operation: Optional[str] = None


def credentials_from_headers(headers: Mapping[str, str]) -> Credentials:
    """Read `X-Api-Key` or `Authorization: Bearer` (headers are case-insensitive)."""
    header_key = (headers.get("x-api-key") or "").strip()
    authorization = (headers.get("authorization") or "").strip()
    bearer = ""
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise InvalidApiKey("Authorization must be 'Bearer <API key>'.", headers=challenge())
        bearer = value.strip()
    if header_key and bearer and not hmac.compare_digest(header_key, bearer):
        raise InvalidApiKey("X-Api-Key and Authorization carry different keys.", headers=challenge())
    presented = header_key or bearer
    if not presented:
        raise Unauthorized("An API key is required: send 'X-Api-Key: <key>' or "
                           "'Authorization: Bearer <key>'.", headers=challenge())
    return credentials_from_key(presented)


def credentials_from_key(presented: str) -> Credentials:
    if not _KEY_SHAPE.match(presented):
        raise InvalidApiKey("The API key is not valid.", headers=challenge())
    digest = hash_key(presented)
    return Credentials(key_id=key_id_for(digest), key_hash=digest)


def verify(credentials: Credentials, key_item: Optional[ApiKey]) -> ApiKey:
    """The stored key if the presented key is genuine and not revoked."""
    if (key_item is None or not hmac.compare_digest(key_item.key_hash, credentials.key_hash)
            or key_item.revoked_at is not None):
        raise InvalidApiKey("The API key is not valid or has been revoked.", headers=challenge())
    return key_item


def challenge() -> dict[str, str]:
    return {"WWW-Authenticate": 'Bearer realm="docpub"'}
