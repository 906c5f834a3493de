"""Workspace exports (contract 7g): their records, and the rule of one running export
per workspace, decided in one atomic step by the store (SQLite under its write lock,
DynamoDB with a transaction conditional on the workspace's running-export item): of two
concurrent starts, exactly one is stored."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from chalicelib.ports.records import Export



class ExportRepository(Protocol):
    def start(self, export: Export, now_ms: int) -> Optional[Export]:
        """Store `export` (running) unless another export of its workspace is running at
        `now_ms` (`Export.running_at`): then nothing is written and that export is
        returned. None: stored."""

    def get(self, export_id: str) -> Optional[Export]:
        """The export, or None (unknown, or its record expired)."""

    def finish(self, export: Export) -> bool:
        """Store the outcome (`export` as finished: `ready` or `failed`, with its fields)
        only if the stored export is still `running`, and free its workspace's place;
        False (nothing written) if it is not running any more."""


__all__ = ["ExportRepository"]
