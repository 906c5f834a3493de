"""Single sign-on with OpenID Connect (contract 7f): every rule, whoever speaks HTTP to
the provider (ports/sso.py; adapters/oidc.py uses Authlib's OAuth 2.0 client).

- The authorization code flow with PKCE (S256). `begin` makes a random `state`, kept
  as a one-time token (kind `sso`, 10 minutes, only its digest stored) and in the
  browser's SSO cookie (the entrypoint's), so a callback is taken only in the browser
  that started it and only once. The `nonce` and the PKCE `code_verifier` are derived
  from the state with the service's secret (HMAC): nothing else is stored, and
  neither can be guessed from what the browser or the provider sees.
- `finish` uses the state (once: a replayed callback finds it used), exchanges the
  code, and verifies the ID token against the issuer's published keys: its signature
  (asymmetric algorithms only, the key set fetched again once for an unknown `kid`),
  `iss` (the configured issuer), `aud` (our client id; `azp` when several), `exp`
  and `iat` (on the injected clock, LEEWAY_SECONDS either way) and `nonce` (this
  state's: an ID token of another sign-in, or one presented again, never matches a
  usable state). Authlib's `CodeIDToken` checks the claims; joserfc (its JOSE library)
  the signature.
- `email_verified` must be `true`. The account is found by that email (a password
  account with the same email is the same account); a new one is made otherwise. An
  account whose email was never confirmed gets a new random password when SSO confirms
  it (whoever signed up with someone else's address loses it), and its other
  sessions end.
- Workspaces whose `sso_auto_join` names the email's domain gain the person as a
  member with that role (an existing member keeps their role), except one that removed
  them (its removal mark: until an invitation or an owner adds them). The session records
  the domain it signed in at (`sso_domain`): only such a session of an owner may set
  `sso_auto_join` to that domain (services/workspaces.py).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any, Optional

from chalicelib import config
from chalicelib.domain import emails, limits
from chalicelib.domain import roles
from chalicelib.errors import Forbidden, ForbiddenRole, NotFound, ServiceUnavailable, Unauthorized, ValidationFailed
from chalicelib.ports import UserExists
from chalicelib.ports.people import MemberExists, Removed
from chalicelib.ports.records import AccountToken, Member
from chalicelib.ports.sso import IdentityProvider, ProviderRefused, ProviderUnavailable
from chalicelib.services import activity, ratelimits
from chalicelib.services.access import Actor
from chalicelib.services.accounts import AccountService, Session, StartedSession, password_hasher
from chalicelib.services.context import Context
from chalicelib.services.tokens import dashboard_url, new_token, normalise_email, token_digest, well_formed

STATE_SECONDS = 600
LEEWAY_SECONDS = 60
# Never "none", never a MAC: the provider's published keys are public.
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
MAX_EMAIL = 254
AUTO_JOIN_ROLES = ("viewer", "editor")
FAILED = "Single sign-on did not complete"


def redirect_uri() -> str:
    return dashboard_url("sso/callback")


def _derive(purpose: str, state: str) -> str:
    mac = hmac.new(config.secret_key().encode("utf-8"), f"docpub-sso:{purpose}:{state}".encode("utf-8"),
                   hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def nonce_for(state: str) -> str:
    return _derive("nonce", state)


def code_verifier_for(state: str) -> str:
    return _derive("pkce", state)  # 43 characters of base64url (RFC 7636: 43 to 128)


def email_domain(email: str) -> str:
    """"@example.com" of "ada@Example.com"; a Unicode domain in its ASCII (IDNA) form, as
    `@domain` entries are kept (domain/emails.py), so the setting and the sign-in compare."""
    domain = "@" + normalise_email(email).rpartition("@")[2]
    return emails.normal_domain_entry(domain) or domain


@dataclass(frozen=True)
class SsoStart:
    url: str  # where the browser goes to sign in
    state: str  # for the browser's SSO cookie


@dataclass(frozen=True)
class Identity:
    email: str
    domain: str
    name: str = ""


class SsoService:
    def __init__(self, ctx: Context, provider: Optional[IdentityProvider]):
        self.ctx = ctx
        self.provider = provider

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    def _provider(self) -> IdentityProvider:
        if self.provider is None:
            raise NotFound("Single sign-on is not set up here.")
        return self.provider

    # ---------------------------------------------------------------- the flow

    def begin(self, client_ip: str) -> SsoStart:
        provider = self._provider()
        ratelimits.hit(self.ctx, ratelimits.scope_key("sso-start", client_ip), limits.SSO_START_PER_IP,
                       limits.REFUSALS["sso-start"])
        state, digest = new_token()
        now_ms = self.ctx.now_ms()
        self.ctx.people.put_token(AccountToken(token_hash=digest, kind="sso", email="", created_ms=now_ms,
                                               expires_ms=now_ms + STATE_SECONDS * 1000,
                                               expires_at=now_ms // 1000 + STATE_SECONDS + 3600))
        try:
            url = provider.authorization_url(redirect_uri(), state, nonce_for(state), code_verifier_for(state))
        except ProviderUnavailable as exc:
            raise ServiceUnavailable("The identity provider is not answering; try again shortly.", 5) from exc
        return SsoStart(url, state)

    def finish(self, state: Optional[str], browser_state: Optional[str], code: Optional[str],
               error: Optional[str] = None) -> StartedSession:
        """The callback: the session of the person the provider vouched for, or Unauthorized."""
        provider = self._provider()
        if not well_formed(state) or not well_formed(browser_state) or not hmac.compare_digest(
                str(state), str(browser_state)):
            raise Unauthorized(f"{FAILED}: it was not started in this browser, or has expired. Try again.")
        assert state is not None
        record = self.ctx.people.use_token(token_digest(state), self.ctx.now_ms())
        if record is None or record.kind != "sso":
            raise Unauthorized(f"{FAILED}: this sign-in was already used or has expired. Try again.")
        if error:
            raise Unauthorized(f"{FAILED}: the identity provider answered {error[:60]!r}.")
        if not code or len(code) > 2000:
            raise Unauthorized(f"{FAILED}: the identity provider sent no code.")
        try:
            token = provider.exchange(code, redirect_uri(), code_verifier_for(state))
        except ProviderRefused as exc:
            raise Unauthorized(f"{FAILED}: the identity provider refused the code ({exc}).") from exc
        except ProviderUnavailable as exc:
            raise ServiceUnavailable("The identity provider is not answering; try again shortly.", 5) from exc
        if not token.id_token:
            raise Unauthorized(f"{FAILED}: the identity provider sent no ID token.")
        claims = self.verify_id_token(token.id_token, nonce_for(state), token.access_token)
        return self.sign_in(self.identity(claims))

    # ---------------------------------------------------------------- the ID token

    def verify_id_token(self, id_token: str, nonce: str, access_token: Optional[str] = None) -> dict[str, Any]:
        """The claims of an ID token this provider signed for this client and this sign-in
        (signature, iss, aud, exp, iat, nonce); Unauthorized otherwise."""
        from authlib.oidc.core import CodeIDToken
        from joserfc import jwt
        from joserfc.errors import InvalidKeyIdError, JoseError
        from joserfc.jwk import KeySet

        provider = self._provider()
        issuer = config.oidc_issuer()
        if provider.issuer() != issuer:
            raise ServiceUnavailable("The identity provider's discovery document names another issuer.", 5)
        algorithms = [a for a in (provider.signing_algorithms() or ["RS256"]) if a in ASYMMETRIC]
        try:
            try:
                decoded = jwt.decode(id_token, KeySet.import_key_set(provider.key_set()), algorithms=algorithms)  # type: ignore[arg-type]
            except InvalidKeyIdError:  # the provider rotated its keys since they were read
                decoded = jwt.decode(id_token, KeySet.import_key_set(provider.key_set(refresh=True)),  # type: ignore[arg-type]
                                     algorithms=algorithms)
        except ProviderUnavailable as exc:
            raise ServiceUnavailable("The identity provider is not answering; try again shortly.", 5) from exc
        except (JoseError, ValueError, TypeError) as exc:
            raise Unauthorized(f"{FAILED}: the ID token's signature is not the provider's.") from exc
        options = {"iss": {"essential": True, "value": issuer},
                   "aud": {"essential": True, "value": provider.client_id},
                   "exp": {"essential": True}, "nonce": {"essential": True}}
        params = {"nonce": nonce, "client_id": provider.client_id}
        if access_token:
            params["access_token"] = access_token
        claims = CodeIDToken(decoded.claims, decoded.header, options, params)
        try:
            claims.validate(now=int(self.ctx.clock()), leeway=LEEWAY_SECONDS)
        except (JoseError, ValueError, TypeError) as exc:
            name = getattr(exc, "claim", None) or getattr(exc, "error", None) or type(exc).__name__
            raise Unauthorized(f"{FAILED}: the ID token is not valid for this sign-in ({name}).") from exc
        return dict(claims)

    @staticmethod
    def identity(claims: dict[str, Any]) -> Identity:
        if claims.get("email_verified") is not True:
            raise Unauthorized(f"{FAILED}: the identity provider has not verified this email address.")
        email = normalise_email(claims.get("email") if isinstance(claims.get("email"), str) else "")
        local, at, host = email.partition("@")
        if not at or not local or "." not in host or len(email) > MAX_EMAIL or any(c.isspace() for c in email):
            raise Unauthorized(f"{FAILED}: the identity provider sent no usable email address.")
        name = claims.get("name") if isinstance(claims.get("name"), str) else ""
        return Identity(email, email_domain(email), (name or "")[:100])

    # ---------------------------------------------------------------- the workspace setting

    def auto_join(self, workspace_id: str) -> Optional[dict[str, str]]:
        """The workspace's `sso_auto_join` ({"domain", "role"}), or None."""
        item = self.ctx.workspaces.get(workspace_id)
        return dict(item.sso_auto_join) if item is not None and item.sso_auto_join else None

    def set_auto_join(self, session: Session, domain: Optional[str], role: Optional[str]) -> dict[str, str]:
        """`sso_auto_join` (dashboard only): the owner's session must have signed in through
        SSO at that very domain (403 otherwise: only the provider can vouch that the owner
        belongs there); 422 naming `sso_auto_join.domain` / `.role` for a bad value."""
        if not roles.allows(session.role, "update_workspace"):
            raise ForbiddenRole(session.role)
        domain = emails.normal_domain_entry(domain or "") or ""
        if not domain:
            raise ValidationFailed.field("sso_auto_join.domain", "must be an email domain written @example.com")
        if role not in AUTO_JOIN_ROLES:
            raise ValidationFailed.field("sso_auto_join.role", 'must be "viewer" or "editor"')
        signed_in_at = session.sso_domain  # the email domain this session signed in at through SSO, if any
        if signed_in_at is None or signed_in_at != domain:
            raise Forbidden("Only a workspace owner signed in through single sign-on with an address at "
                            f"{domain} may let people of {domain} join: sign in with {config.oidc_name()} first.")
        setting = {"domain": domain, "role": role}
        self.ctx.workspaces.set_sso_auto_join(session.workspace_id, domain, role)
        activity.record(self.ctx, session.actor, session.workspace_id, "workspace.sso_auto_join",
                        session.workspace_id, setting)
        return setting

    def clear_auto_join(self, session: Session) -> None:
        """Any owner may turn auto-join off (it only ever narrows who joins)."""
        if not roles.allows(session.role, "update_workspace"):
            raise ForbiddenRole(session.role)
        self.ctx.workspaces.set_sso_auto_join(session.workspace_id, None, None)
        activity.record(self.ctx, session.actor, session.workspace_id, "workspace.sso_auto_join",
                        session.workspace_id, {"domain": None})

    # ---------------------------------------------------------------- the account

    def sign_in(self, who: Identity) -> StartedSession:
        """Find or make the account, join the workspaces that auto-join this domain, and
        start a session that remembers it came through SSO at `who.domain`."""
        accounts = AccountService(self.ctx)
        # A workspace that removed this person does not take them back (the removal mark;
        # add_member checks it again in its own step): only an invitation or an owner does.
        joins = [(workspace_id, role) for workspace_id, role in self.ctx.workspaces.sso_auto_join_for(who.domain)
                 if self.ctx.people.get_removal(workspace_id, who.email) is None]
        now_ms = self.ctx.now_ms()
        user = self.ctx.users.get(who.email)
        if user is None:
            name = f"{who.name or who.email.partition('@')[0]}'s workspace"[:100]
            try:
                accounts.create_verified_account(who.email, password_hasher().hash(secrets.token_urlsafe(32)), name,
                                                 workspace_id=joins[0][0] if joins else None,
                                                 own_workspace=not joins)
            except UserExists:
                pass  # made a moment ago (a second tab): the same account
            user = self.ctx.users.get(who.email)
            if user is None:
                raise Unauthorized(f"{FAILED}: the account could not be made; try again.")
        elif not user.email_verified_ms:
            # Someone may have signed up with this address without owning it: the provider says
            # this person does. Their password (and any session) is not this person's.
            self.ctx.users.set_password(user.email, user.password_hash,
                                        password_hasher().hash(secrets.token_urlsafe(32)), now_ms)
            self.ctx.users.set_fields(user.email, {"email_verified_ms": now_ms})
            self.ctx.sessions.delete_for_user(user.email)
        joined = []
        for workspace_id, role in joins:
            try:
                self.ctx.people.add_member(Member(workspace_id=workspace_id, email=who.email, role=role,
                                                  created_ms=now_ms, added_by="sso"), unless_removed=True)
            except (MemberExists, Removed):
                continue
            joined.append(workspace_id)
            member = Actor(workspace_id, role=role, member=who.email, surface="dashboard")
            activity.record(self.ctx, member, workspace_id, "member.join", who.email,
                            {"role": role, "sso_domain": who.domain})
        if joined:
            self.ctx.users.set_fields(who.email, {"workspace_id": joined[0]})
            return accounts.start_sso(who.email, joined[0], who.domain)
        fresh = self.ctx.users.get(who.email)
        assert fresh is not None
        return accounts.start_in_sso(fresh, who.domain)

