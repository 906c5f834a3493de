"""OAuth 2.1 for MCP: Docpub is both the authorization server and the protected resource.

Every rule of the MCP authorization specification (2025-11-25) that Docpub
enforces lives here; the HTTP endpoints (chalicelib/entrypoints/oauth.py), the
consent page (dashboard) and `/mcp` are thin adapters.

- Clients: dynamic client registration (RFC 7591; public clients only, redirect
  URIs https or loopback http, exact match later) and client ID metadata
  documents (an https `client_id` URL, fetched by chalicelib/services/cimd.py).
  A registered client that never completes a grant expires.
- Authorization code + PKCE S256 (required; `plain` refused), `state` echoed,
  `resource` (RFC 8707) must be `{base_url}/mcp`, `iss` in the answer (RFC 9207).
- Codes: single use (a conditional update), short-lived, bound to client,
  redirect URI, PKCE challenge and resource; a reused code revokes the grant
  made from it.
- Tokens: opaque, only their SHA-256 stored. Access tokens live at most an
  hour and carry workspace, scopes and the `/mcp` audience; refresh tokens
  rotate, and a reused one revokes its whole grant.
- Errors are RFC 6749 bodies (`OAuthError.body()`), never the REST contract's.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Mapping, Optional, Union
from urllib.parse import urlencode, urlsplit

from chalicelib.ports.oauth import OAuthRepository
from chalicelib.ports.records import AccessToken, AuthorizationCode, ClientCap, OAuthClient, OAuthGrant, RefreshToken
from chalicelib.ports.errors import ClientCapReached
from chalicelib import config, models
from chalicelib.domain import limits, roles
from chalicelib.domain.clients import MAX_CLIENT_NAME, MAX_PARAM, MAX_REDIRECT_URIS, valid_redirect_uri
from chalicelib.errors import DocpubError, RateLimited
from chalicelib.services import access, activity, cimd, members, ratelimits
from chalicelib.services.access import Actor, Who
from chalicelib.services.context import Context, rfc3339

SCOPES = ("docs:read", "docs:write", "feedback")
SCOPE_DESCRIPTIONS = {
    "docs:read": "Read your documents: list, find and open them, and see the workspace's plan",
    "docs:write": "Publish, edit, rename and delete documents",
    "feedback": "Read viewer feedback, wait for it, reply to it and mark it resolved",
}
# Which scope each MCP tool needs is declared with its operation (chalicelib/operations.py TOOL_SCOPES).

# The parameters of an authorization request: what the consent page answers, and what the
# welcome page of a person in no workspace carries until they join or make one (resume).
AUTHORIZATION_PARAMS = ("client_id", "redirect_uri", "response_type", "code_challenge", "code_challenge_method",
                        "resource", "scope", "state")
GRANT_TYPES = ("authorization_code", "refresh_token")
ACCESS_TOKEN_PREFIX = "dpa_"
REFRESH_TOKEN_PREFIX = "dpr_"
CODE_SECONDS = 120
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 24 * 3600
UNUSED_CLIENT_SECONDS = 24 * 3600
TOUCH_EVERY_MS = 60_000

# per-IP limits: chalicelib/domain/limits.py (OAUTH_*_PER_IP)
LIMIT_ERRORS = {"register": "temporarily_unavailable", "authorize": "temporarily_unavailable",
                "token": "slow_down", "consent": "temporarily_unavailable", "metadata": "temporarily_unavailable"}


class OAuthError(DocpubError):
    """An RFC 6749 error: `{"error": …, "error_description": …}` on the OAuth endpoints."""

    def __init__(self, error: str, description: str, status: int = 400, headers: Optional[dict[str, str]] = None):
        super().__init__(description, headers=headers)
        self.error = error
        self.code = error
        self.status = status

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.message}


class InsufficientScope(DocpubError):
    status, code = 403, "insufficient_scope"


class NotRedirectable(OAuthError):
    """An authorization request whose client or redirect URI cannot be trusted: the
    error is shown to the person, never sent to the redirect URI (RFC 6749 4.1.2.1)."""


@dataclass(frozen=True)
class Principal:
    """Who an access token acts for: one workspace, some scopes, one grant, with the
    role its approver has now (the scopes are cut to what that role may hold)."""
    workspace_id: str
    grant_id: str
    client_id: str
    scopes: tuple[str, ...]
    role: str = "editor"
    user: Optional[str] = None
    client_name: Optional[str] = None

    @property
    def write_limit_scope(self) -> str:
        return ratelimits.scope_key("grant-writes", self.grant_id)


@dataclass(frozen=True)
class AuthorizationRequest:
    """A validated authorization request, ready for the consent page."""
    client: OAuthClient
    redirect_uri: str
    state: Optional[str]
    code_challenge: str
    resource: str
    scopes: tuple[str, ...]

    @property
    def redirect_host(self) -> str:
        return urlsplit(self.redirect_uri).netloc

    @property
    def client_name(self) -> str:
        return self.client.client_name or self.client.client_id

    def params(self) -> dict[str, str]:
        """The request's parameters, as the consent form posts them back."""
        return {"client_id": self.client.client_id, "redirect_uri": self.redirect_uri,
                "response_type": "code", "code_challenge": self.code_challenge,
                "code_challenge_method": "S256", "resource": self.resource, "scope": " ".join(self.scopes),
                **({"state": self.state} if self.state is not None else {})}


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def resource_url() -> str:
    return config.base_url() + "/mcp"


def issuer() -> str:
    return config.base_url()


def protected_resource_metadata_url() -> str:
    return config.base_url() + "/.well-known/oauth-protected-resource/mcp"


def challenge_header(error: Optional[str] = None, description: Optional[str] = None) -> str:
    """`WWW-Authenticate` for /mcp: where to discover the authorization server (RFC 9728)."""
    parts = [f'resource_metadata="{protected_resource_metadata_url()}"', f'scope="{" ".join(SCOPES)}"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append('error_description="' + description.replace('"', "'") + '"')
    return "Bearer " + ", ".join(parts)


def protected_resource_metadata() -> models.ProtectedResourceMetadata:
    return models.ProtectedResourceMetadata(
        resource=resource_url(), authorization_servers=[issuer()], scopes_supported=list(SCOPES),
        bearer_methods_supported=["header"], resource_name="Docpub",
        resource_documentation=config.base_url() + "/dashboard")


def authorization_server_metadata() -> models.AuthorizationServerMetadata:
    base = config.base_url()
    return models.AuthorizationServerMetadata(
        issuer=issuer(),
        authorization_endpoint=base + "/oauth/authorize",
        token_endpoint=base + "/oauth/token",
        registration_endpoint=base + "/oauth/register",
        revocation_endpoint=base + "/oauth/revoke",
        scopes_supported=list(SCOPES),
        response_types_supported=["code"],
        response_modes_supported=["query"],
        grant_types_supported=["authorization_code", "refresh_token"],
        code_challenge_methods_supported=["S256"],
        token_endpoint_auth_methods_supported=["none"],
        revocation_endpoint_auth_methods_supported=["none"],
        client_id_metadata_document_supported=True,
        authorization_response_iss_parameter_supported=True,
    )


def redirect_with(redirect_uri: str, **params: Optional[str]) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return redirect_uri + ("&" if "?" in redirect_uri else "?") + query


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).decode().rstrip("=")


def _scopes(value: Optional[str], allowed: Iterable[str] = SCOPES) -> tuple[str, ...]:
    """Requested scopes (space-separated), in canonical order; none given = all."""
    if value is None or not value.strip():
        return tuple(s for s in SCOPES if s in set(allowed))
    requested = value.split()
    unknown = [s for s in requested if s not in SCOPES]
    if len(unknown) == len(requested):
        raise OAuthError("invalid_scope", f"Unknown scope {unknown[0]!r}; the scopes are {', '.join(SCOPES)}.")
    # Others beside ours (offline_access, openid…) are ignored, as RFC 6749 3.3 allows:
    # some clients always ask for them, and refresh tokens are issued anyway.
    requested = [s for s in requested if s in SCOPES]
    outside = [s for s in requested if s not in set(allowed)]
    if outside:
        raise OAuthError("invalid_scope", f"Scope {outside[0]!r} was not registered for this client.")
    return tuple(s for s in SCOPES if s in requested)


def ip_scope(kind: str, client_ip: str) -> str:
    """Rate-log scope per client IP; the IP is stored only as a keyed hash."""
    key = hmac.new(config.secret_key().encode(), client_ip.encode(), hashlib.sha256).hexdigest()[:32]
    return ratelimits.scope_key(f"oauth-{kind}", key)


# A client ID metadata document fetcher (tests inject one): the document, or (document,
# seconds to cache it).
MetadataFetcher = Callable[[str], Union[cimd.Document, tuple[cimd.Document, int]]]


@dataclass(frozen=True)
class ConnectedApp:
    """A line of "Connected apps" (the dashboard): a grant not revoked."""
    grant_id: str
    client_name: str
    client_id: str
    scopes: tuple[str, ...]
    user: Optional[str]
    created_at: str
    last_used_at: Optional[str]


class OAuthService:
    def __init__(self, ctx: Context, fetch_metadata: Optional[MetadataFetcher] = None):
        self.ctx = ctx
        self._fetch_metadata = fetch_metadata  # tests may inject the CIMD fetcher

    @property
    def repo(self) -> OAuthRepository:
        return self.ctx.oauth

    def _fetch_document(self, url: str) -> tuple[cimd.Document, int]:
        if self.ctx.outbound is None:
            raise cimd.MetadataError("this server makes no outbound requests")
        return cimd.fetch_with_lifetime(self.ctx.outbound, url)

    # ---------------------------------------------------------------- limits

    def limit(self, kind: str, client_ip: str) -> None:
        rate = {"register": limits.OAUTH_REGISTER_PER_IP, "authorize": limits.OAUTH_AUTHORIZE_PER_IP,
                "token": limits.OAUTH_TOKEN_PER_IP, "consent": limits.OAUTH_CONSENT_PER_IP,
                "metadata": limits.OAUTH_METADATA_FETCHES_PER_IP}[kind]
        try:
            ratelimits.hit(self.ctx, ip_scope(kind, client_ip), rate, limits.REFUSALS[f"oauth-{kind}"])
        except RateLimited as exc:
            raise OAuthError(LIMIT_ERRORS[kind], exc.message, status=429, headers=exc.headers) from None

    # ---------------------------------------------------------------- clients

    def register(self, metadata: object) -> models.ClientRegistration:
        """RFC 7591 dynamic registration of a public client. Returns the registration answer."""
        if not isinstance(metadata, dict):
            raise OAuthError("invalid_client_metadata", "The body must be a JSON object of client metadata.")
        uris = metadata.get("redirect_uris")
        if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
            raise OAuthError("invalid_redirect_uri",
                             f"redirect_uris must be a list of 1 to {MAX_REDIRECT_URIS} URIs.")
        bad = [u for u in uris if not valid_redirect_uri(u)]
        if bad:
            raise OAuthError("invalid_redirect_uri",
                             f"Redirect URI {str(bad[0])[:200]!r} is refused: use https, or http on a loopback "
                             "address (127.0.0.1, [::1], localhost), without a fragment.")
        grant_types = metadata.get("grant_types") or ["authorization_code", "refresh_token"]
        if not isinstance(grant_types, list) or "authorization_code" not in grant_types or any(
                g not in ("authorization_code", "refresh_token") for g in grant_types):
            raise OAuthError("invalid_client_metadata",
                             "grant_types must include authorization_code and may add refresh_token only.")
        response_types = metadata.get("response_types") or ["code"]
        if response_types != ["code"]:
            raise OAuthError("invalid_client_metadata", "response_types must be [\"code\"].")
        method = metadata.get("token_endpoint_auth_method") or "none"
        if method not in ("none", "client_secret_post", "client_secret_basic"):
            raise OAuthError("invalid_client_metadata", "token_endpoint_auth_method must be none.")
        scope = metadata.get("scope")
        if scope is not None and not isinstance(scope, str):
            raise OAuthError("invalid_client_metadata", "scope must be a space-separated string.")
        try:
            scopes = _scopes(scope)
        except OAuthError as exc:
            raise OAuthError("invalid_client_metadata", exc.message) from None
        name = metadata.get("client_name")
        name = name.strip()[:MAX_CLIENT_NAME] if isinstance(name, str) and name.strip() else None
        now_ms = self.ctx.now_ms()

        def https_uri(member: str) -> Optional[str]:
            value = metadata.get(member)
            return value if isinstance(value, str) and value.startswith("https://") and len(value) <= MAX_PARAM \
                else None

        client = OAuthClient(client_id="dpc_" + secrets.token_urlsafe(18), kind="registered", client_name=name,
                             redirect_uris=tuple(uris), scopes=scopes, grant_types=GRANT_TYPES,
                             client_uri=https_uri("client_uri"), logo_uri=https_uri("logo_uri"),
                             created_ms=now_ms, expires_ms=now_ms + UNUSED_CLIENT_SECONDS * 1000)
        self._store_new_client(client, lambda description, retry: OAuthError(
            "temporarily_unavailable", description, status=503, headers={"Retry-After": str(retry)}))
        # The server assigns a public client: no secret, whatever was asked (RFC 7591 3.2.1).
        return models.ClientRegistration(
            client_id=client.client_id, client_id_issued_at=now_ms // 1000,
            redirect_uris=list(uris), client_name=name, grant_types=list(GRANT_TYPES),
            response_types=["code"], token_endpoint_auth_method="none", scope=" ".join(scopes))

    def client(self, client_id: Optional[str], client_ip: Optional[str] = None) -> Optional[OAuthClient]:
        """A usable client: registered and not expired, or a client ID metadata document
        (fetched when not cached: counted against `client_ip`'s fetch limit)."""
        if not client_id or len(client_id) > MAX_PARAM:
            return None
        if client_id.startswith("https://"):
            return self._metadata_client(client_id, client_ip)
        client = self.repo.get_client(client_id)
        if client is None or client.kind != "registered":
            return None
        if client.expires_ms is not None and client.expires_ms <= self.ctx.now_ms():
            return None
        return client

    def _metadata_client(self, client_id: str, client_ip: Optional[str] = None) -> OAuthClient:
        now_ms = self.ctx.now_ms()
        cached = self.repo.get_client(client_id)
        if cached is not None and cached.kind == "metadata" and (cached.expires_ms or 0) > now_ms:
            return cached
        if client_ip is not None:
            self.limit("metadata", client_ip)  # a fetch is a request to an address a stranger chose
        try:
            fetched = (self._fetch_metadata or self._fetch_document)(client_id)
            document, lifetime = fetched if isinstance(fetched, tuple) else (fetched, cimd.CACHE_SECONDS)
            client = replace(cimd.client_from_document(client_id, document), created_ms=now_ms,
                             expires_ms=now_ms + lifetime * 1000)
        except cimd.MetadataError as exc:
            raise NotRedirectable("invalid_client", f"The client ID metadata document could not be used: {exc}")
        self._store_new_client(client, lambda description, retry: NotRedirectable(
            "temporarily_unavailable", description, status=503, headers={"Retry-After": str(retry)}))
        return client

    def _store_new_client(self, client: OAuthClient, refusal: Callable[[str, int], OAuthError]) -> None:
        """Store a new client under the service-wide cap (limits.OAUTH_NEW_CLIENTS): past it,
        `refusal(description, seconds until the window turns)` is raised and nothing is stored."""
        rate = limits.OAUTH_NEW_CLIENTS
        now = self.ctx.now_ms() // 1000
        window = now // rate.window_seconds
        retry = (window + 1) * rate.window_seconds - now
        cap = ClientCap(window, rate.limit, (window + 2) * rate.window_seconds)
        try:
            self.repo.put_client(client, cap)
        except ClientCapReached:
            raise refusal(f"{limits.REFUSALS['oauth-clients']} ({rate.limit:,} per "
                          f"{limits.human_wait(rate.window_seconds)}); try again in {limits.human_wait(retry)}, "
                          "or connect an app that is already registered.", retry) from None

    # ---------------------------------------------------------------- authorization

    def check_authorization(self, params: Mapping[str, object], client_ip: Optional[str] = None
                            ) -> AuthorizationRequest:
        """Validate an authorization request. NotRedirectable when the client or the
        redirect URI is wrong (shown to the person); RedirectError otherwise (sent
        back to the client's redirect URI with `state`)."""
        given = {k: v for k, v in params.items() if isinstance(v, str)}
        if any(len(v) > MAX_PARAM for v in given.values()):
            raise NotRedirectable("invalid_request", "A parameter of the authorization request is too long.")
        client = self.client(given.get("client_id"), client_ip)
        if client is None:
            raise NotRedirectable("invalid_client", "This application is not registered (or its registration "
                                  "expired): ask it to connect again.", status=401)
        redirect_uri = given.get("redirect_uri")
        if redirect_uri is None and len(client.redirect_uris) == 1:
            redirect_uri = client.redirect_uris[0]
        if redirect_uri not in client.redirect_uris:
            raise NotRedirectable("invalid_request", "redirect_uri does not exactly match a redirect URI "
                                  "registered for this application.")
        state = given.get("state")

        assert isinstance(redirect_uri, str)  # it is one of the client's

        def refuse(error: str, description: str) -> RedirectError:
            return RedirectError(error, description, redirect_uri, state)

        if given.get("response_type") != "code":
            raise refuse("unsupported_response_type", "response_type must be code.")
        challenge = given.get("code_challenge")
        if not challenge:
            raise refuse("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256.")
        if given.get("code_challenge_method", "plain") != "S256":
            raise refuse("invalid_request", "code_challenge_method must be S256 (plain is not accepted).")
        if not 43 <= len(challenge) <= 128:
            raise refuse("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters).")
        resource = given.get("resource") or resource_url()
        if resource.rstrip("/") != resource_url():
            raise refuse("invalid_target", f"resource must be {resource_url()}.")
        try:
            scopes = _scopes(given.get("scope"), client.scopes or SCOPES)
        except OAuthError as exc:
            raise refuse(exc.error, exc.message) from None
        return AuthorizationRequest(client, redirect_uri, state, challenge, resource_url(), scopes)

    def resume(self, fields: Mapping[str, object], client_ip: str) -> Optional[AuthorizationRequest]:
        """The authorization request a page carries in `fields` (the welcome page of a person
        in no workspace keeps it in its forms while they join or make one), checked again
        like a new one: the browser may have changed any of it. None when it carries none;
        NotRedirectable or RedirectError (never followed: the page tells the person) when it
        is no longer valid. Only its checked parameters (`params()`) go on to the consent page."""
        given = {name: fields[name] for name in AUTHORIZATION_PARAMS if name in fields}
        if not given:
            return None
        self.limit("consent", client_ip)  # a check may fetch a client's metadata document
        return self.check_authorization(given, client_ip)

    def decide(self, request: AuthorizationRequest, allow: bool, workspace_id: str, user: str,
               scopes: Optional[Iterable[str]] = None, by: Optional[Who] = None) -> str:
        """The person's answer on the consent page: where to send the browser."""
        if by is not None:
            access.authorize(by, "approve_app")
        if not allow:
            return redirect_with(request.redirect_uri, error="access_denied",
                                 error_description="The person declined the request.", state=request.state,
                                 iss=issuer())
        # A grant never exceeds its approver's role (a viewer's gets docs:read and feedback).
        ceiling = set(roles.ROLE_SCOPES.get(members.role_in(self.ctx, workspace_id, user) or "", ()))
        granted = tuple(s for s in request.scopes if (scopes is None or s in set(scopes)) and s in ceiling)
        if not granted:
            return redirect_with(request.redirect_uri, error="access_denied",
                                 error_description="No access was granted.", state=request.state, iss=issuer())
        code = secrets.token_urlsafe(32)
        self.repo.put_code(AuthorizationCode(
            code_hash=digest(code), client_id=request.client.client_id, client_name=request.client_name,
            redirect_uri=request.redirect_uri, code_challenge=request.code_challenge, resource=request.resource,
            scopes=granted, workspace_id=workspace_id, user=user,
            expires_ms=self.ctx.now_ms() + CODE_SECONDS * 1000))
        return redirect_with(request.redirect_uri, code=code, state=request.state, iss=issuer())

    # ---------------------------------------------------------------- token endpoint

    def token(self, form: Mapping[str, str]) -> models.TokenResponse:
        grant_type = form.get("grant_type")
        client_id = form.get("client_id")
        if not client_id:
            raise OAuthError("invalid_request", "client_id is required (public clients send it in the body).")
        if form.get("client_secret"):
            raise OAuthError("invalid_client", "Docpub's clients are public: send no client_secret.", status=401)
        try:
            client = self.client(client_id)
        except NotRedirectable as exc:
            raise OAuthError("invalid_client", exc.message, status=401) from None
        if client is None:
            raise OAuthError("invalid_client", "Unknown or expired client_id: register again.", status=401)
        handlers = {"authorization_code": self._exchange_code, "refresh_token": self._refresh}
        if grant_type not in handlers:
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
        return handlers[grant_type](client, form)

    def _exchange_code(self, client: OAuthClient, form: Mapping[str, str]) -> models.TokenResponse:
        code, verifier = form.get("code"), form.get("code_verifier")
        if not code:
            raise OAuthError("invalid_request", "code is required.")
        if not verifier:
            raise OAuthError("invalid_request", "code_verifier is required (PKCE).")
        now_ms = self.ctx.now_ms()
        record, consumed = self.repo.consume_code(digest(code), now_ms)
        if record is None or record.client_id != client.client_id:
            raise OAuthError("invalid_grant", "The authorization code is not valid.")
        if not consumed:
            if record.grant_id:  # RFC 6749 4.1.2: a replayed code revokes what it granted
                self.repo.revoke_grant(record.grant_id, now_ms)
            raise OAuthError("invalid_grant", "The authorization code was already used.")
        if record.expires_ms <= now_ms:
            raise OAuthError("invalid_grant", "The authorization code has expired.")
        if form.get("redirect_uri", record.redirect_uri) != record.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request.")
        if not hmac.compare_digest(s256(verifier) if verifier.isascii() else "", record.code_challenge):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge (PKCE).")
        if (form.get("resource") or record.resource).rstrip("/") != record.resource:
            raise OAuthError("invalid_target", f"resource must be {record.resource}.")
        grant = OAuthGrant(grant_id="gr_" + secrets.token_urlsafe(12), workspace_id=record.workspace_id,
                           user=record.user, client_id=client.client_id,
                           client_name=record.client_name or client.client_name or client.client_id,
                           scopes=record.scopes, resource=record.resource, created_ms=now_ms)
        access, refresh, answer = self._mint(grant, now_ms)
        self.repo.create_grant(grant, access, refresh, digest(code))
        if client.kind == "registered" and client.expires_ms is not None:
            self.repo.keep_client(client.client_id)
        approver = Actor(grant.workspace_id, member=grant.user, surface="dashboard")
        activity.record(self.ctx, approver, grant.workspace_id, "app.connect", grant.grant_id,
                        {"client": grant.client_name, "scopes": " ".join(grant.scopes)})
        return answer

    def _refresh(self, client: OAuthClient, form: Mapping[str, str]) -> models.TokenResponse:
        presented = form.get("refresh_token")
        if not presented:
            raise OAuthError("invalid_request", "refresh_token is required.")
        now_ms = self.ctx.now_ms()
        old_hash = digest(presented)
        record = self.repo.get_refresh(old_hash)
        if record is None or record.client_id != client.client_id:
            raise OAuthError("invalid_grant", "The refresh token is not valid.")
        grant = self.repo.get_grant(record.grant_id)
        if grant is None or grant.revoked_ms is not None:
            raise OAuthError("invalid_grant", "This access was revoked; connect again.")
        if record.used_ms is not None:
            self.repo.revoke_grant(grant.grant_id, now_ms)
            raise OAuthError("invalid_grant", "The refresh token was already used; the access it belonged to "
                             "is revoked for safety. Connect again.")
        if record.expires_ms <= now_ms:
            raise OAuthError("invalid_grant", "The refresh token has expired; connect again.")
        if (form.get("resource") or grant.resource).rstrip("/") != grant.resource:
            raise OAuthError("invalid_target", f"resource must be {grant.resource}.")
        scopes = grant.scopes
        if form.get("scope"):
            scopes = _scopes(form["scope"], grant.scopes)
        access, refresh, answer = self._mint(replace(grant, scopes=scopes), now_ms)
        if not self.repo.rotate_refresh(old_hash, now_ms, access, refresh):
            self.repo.revoke_grant(grant.grant_id, now_ms)  # lost a race with a reuse: same rule
            raise OAuthError("invalid_grant", "The refresh token was already used; the access it belonged to "
                             "is revoked for safety. Connect again.")
        return answer

    def _mint(self, grant: OAuthGrant, now_ms: int) -> tuple[AccessToken, RefreshToken, models.TokenResponse]:
        """New access and refresh tokens of `grant` (with the scopes it carries): the
        records to store (their hashes) and the answer (the tokens themselves)."""
        access_token = ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)
        refresh_token = REFRESH_TOKEN_PREFIX + secrets.token_urlsafe(32)
        access = AccessToken(token_hash=digest(access_token), grant_id=grant.grant_id,
                             workspace_id=grant.workspace_id, client_id=grant.client_id, scopes=grant.scopes,
                             audience=grant.resource, expires_ms=now_ms + ACCESS_SECONDS * 1000)
        refresh = RefreshToken(token_hash=digest(refresh_token), grant_id=grant.grant_id,
                               client_id=grant.client_id, created_ms=now_ms,
                               expires_ms=now_ms + REFRESH_SECONDS * 1000)
        answer = models.TokenResponse(access_token=access_token, token_type="Bearer", expires_in=ACCESS_SECONDS,
                                      refresh_token=refresh_token, scope=" ".join(grant.scopes))
        return access, refresh, answer

    # ---------------------------------------------------------------- revocation (RFC 7009)

    def revoke(self, form: Mapping[str, str]) -> None:
        """Always succeeds for the caller (RFC 7009 2.2); a refresh token ends its grant."""
        token = form.get("token")
        if not token:
            raise OAuthError("invalid_request", "token is required.")
        hashed = digest(token)
        now_ms = self.ctx.now_ms()
        client_id = form.get("client_id")
        if token.startswith(REFRESH_TOKEN_PREFIX):
            refresh = self.repo.get_refresh(hashed)
            if refresh is not None and (client_id is None or client_id == refresh.client_id):
                self.repo.revoke_grant(refresh.grant_id, now_ms)
        elif token.startswith(ACCESS_TOKEN_PREFIX):
            access, _grant = self.repo.get_access(hashed)
            if access is not None and (client_id is None or client_id == access.client_id):
                self.repo.delete_access(hashed)

    # ---------------------------------------------------------------- the protected resource

    @staticmethod
    def is_access_token(value: str) -> bool:
        return value.startswith(ACCESS_TOKEN_PREFIX)

    def authenticate(self, access_token: str) -> Principal:
        """The principal of a valid access token for /mcp; 401 invalid_token otherwise."""
        record, grant = self.repo.get_access(digest(access_token))
        now_ms = self.ctx.now_ms()
        if record is None or grant is None:
            raise _invalid_token("The access token is not valid.")
        if record.expires_ms <= now_ms:
            raise _invalid_token("The access token has expired; refresh it.")
        if grant.revoked_ms is not None:
            raise _invalid_token("This access was revoked in the dashboard.")
        if record.audience != resource_url():
            raise _invalid_token("The access token was issued for another resource.")
        member = members.membership(self.ctx, record.workspace_id, grant.user)
        if member is None or member.created_ms > grant.created_ms:
            # The approver left the workspace: their grants went with them (also when they
            # joined again since: a grant of an earlier membership does not come back).
            self.repo.revoke_grant(grant.grant_id, now_ms)
            raise _invalid_token("The person who connected this app is no longer a member of the workspace.")
        role = member.role
        if now_ms - (grant.last_used_ms or 0) >= TOUCH_EVERY_MS:
            self.repo.touch_grant(grant.grant_id, now_ms)
        allowed = set(roles.ROLE_SCOPES[role])
        return Principal(record.workspace_id, record.grant_id, record.client_id,
                         tuple(s for s in record.scopes if s in allowed), role, grant.user,
                         grant.client_name or grant.client_id)

    @staticmethod
    def require_scope(principal: Optional[Principal], tool: str, needed: Optional[str]) -> None:
        """A token acts within its scopes only (API keys have every scope). `needed`: the
        scope the tool's operation declares; None (undeclared) fails closed: docs:write."""
        if principal is None:
            return
        needed = needed or "docs:write"
        if needed not in principal.scopes:
            raise InsufficientScope(
                f"{tool} needs the {needed} scope; this connection was granted "
                f"{' '.join(principal.scopes) or 'no scopes'}. Reconnect the app and allow {needed}.",
                {"required_scope": needed})

    # ---------------------------------------------------------------- dashboard: connected apps

    def connected_apps(self, workspace_id: str, by: Optional[Who] = None) -> list[ConnectedApp]:
        if by is not None:
            access.authorize(by, "list_apps")
        return [ConnectedApp(grant_id=g.grant_id, client_name=g.client_name or g.client_id, client_id=g.client_id,
                             scopes=g.scopes, user=g.user, created_at=rfc3339(g.created_ms),
                             last_used_at=rfc3339(g.last_used_ms))
                for g in self.repo.list_grants(workspace_id) if g.revoked_ms is None]

    def disconnect(self, workspace_id: str, grant_id: str, by: Optional[Who] = None) -> Optional[OAuthGrant]:
        from chalicelib.errors import NotFound

        grant = self.repo.get_grant(grant_id) if isinstance(grant_id, str) and len(grant_id) < 64 else None
        if grant is not None and grant.workspace_id != workspace_id:
            grant = None
        if by is not None and (grant is None or grant.user != getattr(by, "member", None)):
            access.authorize(by, "disconnect_app")  # anyone may disconnect their own app
        if grant is None:
            raise NotFound("No such connected app.")
        revoked = self.repo.revoke_grant(grant_id, self.ctx.now_ms())
        if by is not None:
            activity.record(self.ctx, by, workspace_id, "app.disconnect", grant_id,
                            {"client": grant.client_name or grant.client_id})
        return revoked

    def revoke_grants_of(self, workspace_id: str, user: str) -> int:
        """A member left: every grant they approved for the workspace ends now."""
        revoked = 0
        for grant in self.repo.list_grants(workspace_id):
            if grant.user == user and grant.revoked_ms is None:
                self.repo.revoke_grant(grant.grant_id, self.ctx.now_ms())
                revoked += 1
        return revoked


class RedirectError(OAuthError):
    """An authorization error the client hears about at its redirect URI."""

    def __init__(self, error: str, description: str, redirect_uri: str, state: Optional[str]):
        super().__init__(error, description)
        self.redirect_uri = redirect_uri
        self.state = state

    def location(self) -> str:
        return redirect_with(self.redirect_uri, error=self.error, error_description=self.message,
                             state=self.state, iss=issuer())


def _invalid_token(description: str) -> OAuthError:
    return OAuthError("invalid_token", description, status=401,
                      headers={"WWW-Authenticate": challenge_header("invalid_token", description)})
