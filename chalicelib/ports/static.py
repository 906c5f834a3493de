"""The static site port (issue 38): what a public share link looks like to a viewer,
kept as plain objects a CDN can serve with no function and no database.

A link that is public (enabled, no passphrase, no expiry, public access) has its
share page, its latest version's content and its view beacon written here by
services/static_pages.py; anything else has nothing here. Two sites: `main` (the
share pages, and the content too without a content domain) and `content` (the
content domain's). Paths are the public ones (`/d/<share>`, `/d/<share>/v/<version>`,
`/d/<share>/seen`). Deployed: objects under `static/<site>/` in the documents bucket,
CloudFront's first origin for `/d/*` (adapters/aws/static.py); embedded: files under
the data folder (adapters/sqlite/static.py), which nothing serves (`make run` keeps
every share answer on the function).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

SITES = ("main", "content")


@dataclass(frozen=True)
class StaticObject:
    """One object as the CDN serves it: its public path, bytes and the two headers a
    store can keep with it (the rest come from the CDN's response-headers policies)."""
    path: str
    body: bytes
    content_type: str
    cache_control: str


class StaticSite(Protocol):
    # False: nothing is written (local runs, tests that do not ask for it).
    enabled: bool

    def put(self, site: str, obj: StaticObject) -> None:
        """Write (or replace) `obj` on `site`."""

    def get(self, site: str, path: str) -> Optional[StaticObject]:
        """The object at `path` as the CDN's origin would serve it, or None."""

    def delete_link(self, site: str, share_id: str) -> int:
        """Remove every object of the link (`/d/<share>` and everything under it); the
        number removed. No error when there is nothing."""


class NoStaticSite:
    """No static copies (the default): every share answer comes from the function."""

    enabled = False

    def put(self, site: str, obj: StaticObject) -> None:
        return None

    def get(self, site: str, path: str) -> Optional[StaticObject]:
        return None

    def delete_link(self, site: str, share_id: str) -> int:
        return 0
