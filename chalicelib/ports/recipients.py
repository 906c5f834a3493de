"""Recipients (contract 7f): the people a `recipients` link admitted, their email codes,
and the links' audiences by entry ("Shared with me").

Records (chalicelib/ports/records.py): `Recipient`, `RecipientCode`, `AudienceEntry`.
Every change that decides access is conditional: a view is counted only on a recipient
that is not revoked, a wrong try only if nobody else tried since it was read, and a code
is used once.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol, Sequence

from chalicelib.ports.records import Recipient, RecipientCode

if TYPE_CHECKING:
    from chalicelib.ports.records import AudienceEntry


class RecipientRepository(Protocol):
    def get(self, document_id: str, email: str) -> Optional[Recipient]:
        """The recipient as recorded, or None (never opened, never revoked)."""

    def list_for_document(self, document_id: str) -> list[Recipient]:
        """Every recorded recipient of a document (revoked ones too), by email."""

    def record_open(self, document_id: str, workspace_id: str, email: str, now_ms: int, views: int = 1) -> bool:
        """Count an opening (views + `views`, last_opened_ms = now, first_opened_ms once),
        creating the record if needed; False (nothing changed) if the recipient is revoked.
        `views=0`: the verification that precedes the first page (recorded, not a view)."""

    def revoke(self, document_id: str, workspace_id: str, email: str, now_ms: int) -> None:
        """Refuse this recipient from now on (kept listed, revoked); safe to repeat."""

    def restore(self, document_id: str, email: str) -> None:
        """Admit a revoked recipient again (listed anew by the owner); safe to repeat."""

    def put_code(self, code: RecipientCode) -> None:
        """Store the code of (document, email), replacing any earlier one (tries 0)."""

    def get_code(self, document_id: str, email: str) -> Optional[RecipientCode]:
        """The code as stored (expired or spent ones too), or None."""

    def spend_try(self, code: RecipientCode) -> bool:
        """Count a wrong try: tries + 1 if the stored code is still `code` (same hash, same
        tries); False if it moved (another try, a new code, used)."""

    def use_code(self, code: RecipientCode) -> bool:
        """Remove the code if it is still `code` (same hash, same tries): True once."""

    def index_audience(self, document_id: str, workspace_id: str, entries: Sequence[str],
                       dropped: Sequence[str], now_ms: int) -> None:
        """The document is listed under each of `entries` (kept time if already there) and
        no longer under `dropped`."""

    def delete_for_document(self, document_id: str, entries: Sequence[str]) -> None:
        """Every recipient and code of a deleted document, and its audience under `entries`
        (its `share_recipients`); safe to repeat."""

    def shared_with(self, entries: Sequence[str]) -> list[AudienceEntry]:
        """What is listed under any of `entries` (an email and its `@domain`), newest first."""
