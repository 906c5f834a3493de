"""Storage port for OAuth 2.1 (MCP authorization): clients, codes, grants, tokens.

Records are plain dicts. Every expiring record carries `expires_ms` (checked by
the service on every read; adapters may also clean up with TTL/DELETE, but
correctness never depends on it). Secrets (codes, access and refresh tokens)
are only ever handed to a repository as their SHA-256 hex digest.

Atomic rules the adapters guarantee:
- `consume_code`: a code is consumed at most once (a conditional update), so two
  racing exchanges of one code can never both win.
- `rotate_refresh`: a refresh token is used at most once; the new access and
  refresh tokens are stored in the same atomic step as the old one's use.
- `put_client` with a cap: the client is stored only while the cap's window
  counter is under its limit, and the counter moves with it (ClientCapReached).
- `create_grant`: the grant, its first tokens and the code's link to the grant
  are one atomic step.
"""
from __future__ import annotations

from typing import Optional, Protocol
from chalicelib.ports.records import ClientCap, Record


class OAuthRepository(Protocol):
    # clients (dynamic registration, and cached client ID metadata documents)
    def put_client(self, client: Record, cap: Optional[ClientCap] = None) -> None:
        """Store or replace a client (`client_id`, `expires_ms` or None, metadata); with
        `cap`, counted in the cap's window in the same atomic step (ClientCapReached)."""

    def get_client(self, client_id: str) -> Optional[Record]: ...

    def keep_client(self, client_id: str) -> None:
        """A grant was completed: the client no longer expires."""

    # authorization codes
    def put_code(self, code: Record) -> None:
        """`code_hash`, client_id, redirect_uri, code_challenge, resource, scopes,
        workspace_id, user, expires_ms."""

    def consume_code(self, code_hash: str, now_ms: int) -> tuple[Optional[Record], bool]:
        """(the code record, True) if this call consumed it; (record, False) if it was
        already used (record includes `grant_id` when a grant was made from it);
        (None, False) when unknown."""

    # grants and tokens
    def create_grant(self, grant: Record, access: Record, refresh: Record, code_hash: Optional[str]) -> None:
        """Store a grant with its first access and refresh tokens; link the code to it."""

    def get_grant(self, grant_id: str) -> Optional[Record]: ...

    def list_grants(self, workspace_id: str) -> list[Record]:
        """The workspace's grants, newest first (revoked ones included)."""

    def revoke_grant(self, grant_id: str, now_ms: int) -> Optional[Record]:
        """Mark the grant revoked (idempotent); its tokens stop working at once."""

    def touch_grant(self, grant_id: str, now_ms: int) -> None:
        """Record the grant's last use."""

    def get_access(self, token_hash: str) -> tuple[Optional[Record], Optional[Record]]:
        """(access token record, its grant) in one round trip; None where missing."""

    def delete_access(self, token_hash: str) -> None: ...

    def get_refresh(self, token_hash: str) -> Optional[Record]: ...

    def rotate_refresh(self, old_hash: str, now_ms: int, access: Record, refresh: Record) -> bool:
        """Mark the old refresh token used and store the new pair, atomically, only if
        the old one was unused and its grant not revoked. False: it was used already
        (or the grant is revoked) and nothing was stored."""
