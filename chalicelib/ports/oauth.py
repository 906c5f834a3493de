"""Storage port for OAuth 2.1 (MCP authorization): clients, codes, grants, tokens.

It speaks the records of chalicelib/ports/records.py (`OAuthClient`,
`AuthorizationCode`, `OAuthGrant`, `AccessToken`, `RefreshToken`). Every expiring
record carries `expires_ms` (checked by the service on every read; adapters may
also clean up on their own, but correctness never depends on it). Secrets (codes,
access and refresh tokens) are only ever handed to a repository as their SHA-256
hex digest.

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

from typing import TYPE_CHECKING, Optional, Protocol

from chalicelib.ports.records import ClientCap

if TYPE_CHECKING:
    from chalicelib.ports.records import AccessToken, AuthorizationCode, OAuthClient, OAuthGrant, RefreshToken


class OAuthRepository(Protocol):
    # clients (dynamic registration, and cached client ID metadata documents)
    def put_client(self, client: OAuthClient, cap: Optional[ClientCap] = None) -> None:
        """Store or replace a client; with `cap`, counted in the cap's window in the same
        atomic step (ClientCapReached past it, and nothing is stored)."""

    def get_client(self, client_id: str) -> Optional[OAuthClient]: ...

    def keep_client(self, client_id: str) -> None:
        """A grant was completed: the client no longer expires (`expires_ms` None)."""

    # authorization codes
    def put_code(self, code: AuthorizationCode) -> None: ...

    def consume_code(self, code_hash: str, now_ms: int) -> tuple[Optional[AuthorizationCode], bool]:
        """(the code, True) if this call consumed it (its `used_ms` is now `now_ms`);
        (the code, False) if it was used already (with `grant_id` when a grant was made
        from it); (None, False) when unknown."""

    # grants and tokens
    def create_grant(self, grant: OAuthGrant, access: AccessToken, refresh: RefreshToken,
                     code_hash: Optional[str]) -> None:
        """Store a grant with its first access and refresh tokens; link the code to it."""

    def get_grant(self, grant_id: str) -> Optional[OAuthGrant]: ...

    def list_grants(self, workspace_id: str) -> list[OAuthGrant]:
        """The workspace's grants, newest first (revoked ones included)."""

    def revoke_grant(self, grant_id: str, now_ms: int) -> Optional[OAuthGrant]:
        """Mark the grant revoked (idempotent: the first `revoked_ms` stays) and return it;
        its tokens stop working at once. None: no such grant."""

    def touch_grant(self, grant_id: str, now_ms: int) -> None:
        """Record the grant's last use."""

    def get_access(self, token_hash: str) -> tuple[Optional[AccessToken], Optional[OAuthGrant]]:
        """(access token, its grant); None where missing."""

    def delete_access(self, token_hash: str) -> None: ...

    def get_refresh(self, token_hash: str) -> Optional[RefreshToken]: ...

    def rotate_refresh(self, old_hash: str, now_ms: int, access: AccessToken, refresh: RefreshToken) -> bool:
        """Mark the old refresh token used and store the new pair, atomically, only if
        the old one was unused and its grant not revoked. False: it was used already
        (or the grant is revoked) and nothing was stored."""
