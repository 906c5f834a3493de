"""Ports for edge coherence: telling the CDN to drop a withdrawn link, and
remembering the requests it did not accept (services/cdn.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from chalicelib.ports.records import PendingInvalidation


class CdnInvalidator(Protocol):
    # False: no CDN in front of the share pages (nothing to invalidate, nothing to retry).
    enabled: bool

    def invalidate(self, paths: list[str]) -> None:
        """Ask the CDN to forget cached answers under these paths (`*` wildcards
        allowed). Raises on any failure; the caller records it for a retry."""


class NoCdn:
    """Nothing caches share answers (local runs, tests): nothing to invalidate."""

    enabled = False

    def invalidate(self, paths: list[str]) -> None:
        return None


class PendingInvalidationRepository(Protocol):
    def add(self, path: str, reason: str, now_ms: int, error: str) -> None:
        """Record (or, if already pending, count one more failed attempt at) `path`;
        the first `created_ms` is kept."""

    def list(self, limit: int) -> list[PendingInvalidation]:
        """Pending paths, oldest first."""

    def remove(self, path: str) -> None:
        """Forget `path` (accepted by the CDN); no error if it is not pending."""
