"""Dashboard accounts and sessions: sign up, sign in/out, change password, CSRF.

- Passwords: argon2id (argon2-cffi, imported lazily). Unknown emails are verified
  against a dummy hash, so timing does not tell whether an account exists, and
  every failure says the same thing.
- Sessions: a random id in an HttpOnly cookie; only its SHA-256 is stored, with
  an absolute expiry checked on every read (TTL is cleanup only). A new id is
  issued at every sign-in and password change (old ones are dropped).
- CSRF: itsdangerous tokens signed with `config.secret_key()`, bound to the
  session (or, before sign-in, to an anonymous cookie), so a token is useless
  with any other session.
- Sign-in attempts are limited per client IP and per account (sliding logs,
  services/ratelimits.py; the limits are in domain/limits.py), claimed before
  the password is checked.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Optional

from chalicelib import config
from chalicelib.domain import limits
from chalicelib.ports import UserExists
from chalicelib.errors import Unauthorized, ValidationFailed
from chalicelib.services.context import Context, default_context, new_workspace_id
from chalicelib.services import ratelimits
from chalicelib.services.workspaces import MAX_WORKSPACE_NAME, WorkspaceService

MIN_PASSWORD, MAX_PASSWORD = limits.PASSWORD_CHARS
MAX_EMAIL = 254
_EMAIL_SHAPE = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")

# (limit, window seconds), from the limits table; module names so tests can lower them.
SIGN_IN_PER_IP = limits.SIGN_IN_PER_IP
SIGN_IN_PER_ACCOUNT_AND_IP = limits.SIGN_IN_PER_ACCOUNT_AND_IP
SIGN_IN_PER_ACCOUNT = limits.SIGN_IN_PER_ACCOUNT
SIGN_IN_PER_DEVICE = limits.SIGN_IN_PER_DEVICE
DEVICE_SALT = "docpub-device"
DEVICE_MAX_AGE_SECONDS = 180 * 24 * 3600
SIGN_UP_PER_IP = limits.SIGN_UP_PER_IP

BAD_CREDENTIALS = "Email or password is incorrect."
SIGN_UP_REFUSED = ("We could not create an account with these details. "
                   "If you already have an account, sign in instead.")
CSRF_SALT = "docpub.dashboard.csrf"


@dataclass(frozen=True)
class Session:
    session_hash: str
    email: str
    workspace_id: str
    created_ms: int
    expires_ms: int


@dataclass(frozen=True)
class StartedSession:
    session_id: str  # goes into the cookie only; storage keeps its hash
    session: Session
    device_token: Optional[str] = None  # the device cookie: this browser signed in to this account


def hash_session_id(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def normalise_email(email: Optional[str]) -> str:
    return (email or "").strip().lower()


@functools.lru_cache(maxsize=8)
def _hasher(cost: tuple[int, int, int]):
    from argon2 import PasswordHasher, Type

    time_cost, memory_kib, parallelism = cost
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism, type=Type.ID)


def password_hasher():
    return _hasher(config.argon2_cost())


@functools.lru_cache(maxsize=8)
def _dummy_hash(cost: tuple[int, int, int]) -> str:
    return _hasher(cost).hash(secrets.token_urlsafe(16))


def _verify(password_hash: str, password: str) -> bool:
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        return password_hasher().verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


class AccountService:
    def __init__(self, ctx: Optional[Context] = None):
        self.ctx = ctx or default_context()

    # ---------------------------------------------------------------- sign up / in / out

    def sign_up(self, email: str, password: str, workspace_name: str, client_ip: str) -> StartedSession:
        self._hit("signup-ip", client_ip, SIGN_UP_PER_IP)
        email = normalise_email(email)
        fields = []
        if len(email) > MAX_EMAIL or not _EMAIL_SHAPE.match(email):
            fields.append({"field": "email", "message": "must be a valid email address"})
        if not MIN_PASSWORD <= len(password or "") <= MAX_PASSWORD:
            fields.append({"field": "password", "message": f"must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"})
        name = (workspace_name or "").strip()
        if not 1 <= len(name) <= MAX_WORKSPACE_NAME:
            fields.append({"field": "workspace_name", "message": f"must be 1 to {MAX_WORKSPACE_NAME} characters"})
        if fields:
            raise ValidationFailed(f"{fields[0]['field']}: {fields[0]['message']}", {"fields": fields})
        workspace_id = new_workspace_id()
        now_ms = self.ctx.now_ms()
        user = {"email": email, "password_hash": password_hasher().hash(password), "workspace_id": workspace_id,
                "role": "owner", "created_ms": now_ms, "password_changed_ms": now_ms}
        try:
            self.ctx.users.create(user)  # claims the email first: a taken email creates nothing
        except UserExists:
            raise ValidationFailed(SIGN_UP_REFUSED, {"fields": [{"field": "email", "message": SIGN_UP_REFUSED}]})
        try:
            WorkspaceService(self.ctx).create_workspace(name, "free", workspace_id=workspace_id, with_key=False)
        except BaseException:
            self.ctx.users.delete(email)
            raise
        return self._start(email, workspace_id)

    def sign_in(self, email: str, password: str, client_ip: str,
                previous_session_id: Optional[str] = None, device_cookie: Optional[str] = None) -> StartedSession:
        """Failures are limited per (email, address) and per account; a browser
        holding this account's device cookie (it signed in before) is judged on
        its own failures instead, so nobody else's guessing can lock it out."""
        email = normalise_email(email)
        self._hit("signin-ip", client_ip, SIGN_IN_PER_IP)  # attempts from one address (each costs an argon2 check)
        device = self._device(email, device_cookie)
        if device is not None:
            budgets = [("signin-device", device, SIGN_IN_PER_DEVICE)]
        else:
            budgets = [("signin-account-ip", _scope_digest(email + chr(0) + client_ip), SIGN_IN_PER_ACCOUNT_AND_IP),
                       ("signin-account", _scope_digest(email), SIGN_IN_PER_ACCOUNT)]
        for kind, key, rate in budgets:
            ratelimits.check(self.ctx, ratelimits.scope_key(kind, key), rate, limits.REFUSALS[kind])
        user = self.ctx.users.get(email) if email and len(email) <= MAX_EMAIL else None
        password = (password or "")[:MAX_PASSWORD]
        if user is None:
            _verify(_dummy_hash(config.argon2_cost()), password)  # same work as a real check
            ok = False
        else:
            ok = _verify(user["password_hash"], password)
        if not ok:
            for kind, key, rate in budgets:
                ratelimits.record(self.ctx, ratelimits.scope_key(kind, key), rate, limits.REFUSALS[kind])
            raise Unauthorized(BAD_CREDENTIALS)
        if password_hasher().check_needs_rehash(user["password_hash"]):
            self.ctx.users.set_password(email, user["password_hash"], password_hasher().hash(password),
                                        self.ctx.now_ms())
        if previous_session_id:
            self.sign_out(previous_session_id)  # rotation: the pre-sign-in id never becomes valid
        return self._start(email, user["workspace_id"])

    @staticmethod
    def device_token(email: str) -> str:
        """A signed cookie value naming this account (by digest) and this browser (a nonce)."""
        from itsdangerous import URLSafeTimedSerializer

        serializer = URLSafeTimedSerializer(config.secret_key(), salt=DEVICE_SALT)
        return serializer.dumps({"a": _scope_digest(normalise_email(email)), "n": secrets.token_urlsafe(12)})

    @staticmethod
    def _device(email: str, token: Optional[str]) -> Optional[str]:
        """The device's scope key when `token` is this account's valid device cookie."""
        from itsdangerous import BadData, URLSafeTimedSerializer

        if not token or len(token) > 500 or not email:
            return None
        serializer = URLSafeTimedSerializer(config.secret_key(), salt=DEVICE_SALT)
        try:
            data = serializer.loads(token, max_age=DEVICE_MAX_AGE_SECONDS)
        except BadData:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("n"), str):
            return None
        if not hmac.compare_digest(str(data.get("a")), _scope_digest(email)):
            return None
        return _scope_digest(data["a"] + chr(0) + data["n"])

    def sign_out(self, session_id: Optional[str]) -> None:
        if session_id:
            self.ctx.sessions.delete(hash_session_id(session_id))

    def session(self, session_id: Optional[str]) -> Optional[Session]:
        """The live session for a cookie value, or None (unknown, or expired: checked here, not by TTL)."""
        if not session_id or len(session_id) > 200:
            return None
        digest = hash_session_id(session_id)
        item = self.ctx.sessions.get(digest)
        if item is None:
            return None
        if item["expires_ms"] <= self.ctx.now_ms():
            self.ctx.sessions.delete(digest)
            return None
        return Session(digest, item["email"], item["workspace_id"], item["created_ms"], item["expires_ms"])

    def change_password(self, session_id: str, current_password: str, new_password: str,
                        client_ip: str) -> StartedSession:
        session = self.session(session_id)
        if session is None:
            raise Unauthorized("Your session has ended; sign in again.")
        self._hit("signin-account", _scope_digest(session.email), SIGN_IN_PER_ACCOUNT,
                  refusal="password-change")
        user = self.ctx.users.get(session.email)
        if user is None or not _verify(user["password_hash"], (current_password or "")[:MAX_PASSWORD]):
            raise ValidationFailed("The current password is incorrect.",
                                   {"fields": [{"field": "current_password", "message": "is incorrect"}]})
        if not MIN_PASSWORD <= len(new_password or "") <= MAX_PASSWORD:
            raise ValidationFailed.field("new_password", f"must be {MIN_PASSWORD} to {MAX_PASSWORD} characters")
        if not self.ctx.users.set_password(session.email, user["password_hash"],
                                           password_hasher().hash(new_password), self.ctx.now_ms()):
            raise ValidationFailed("The password was changed at the same time; sign in again.")
        # Every session of this person ends (a thief's too); this browser gets a fresh one.
        self.ctx.sessions.delete_for_user(session.email)
        return self._start(session.email, session.workspace_id)

    def _start(self, email: str, workspace_id: str) -> StartedSession:
        session_id = secrets.token_urlsafe(32)
        now_ms = self.ctx.now_ms()
        lifetime = config.dashboard_session_seconds()
        session = Session(hash_session_id(session_id), email, workspace_id, now_ms, now_ms + lifetime * 1000)
        self.ctx.sessions.create({"session_hash": session.session_hash, "email": email,
                                  "workspace_id": workspace_id, "created_ms": now_ms,
                                  "expires_ms": session.expires_ms,
                                  "expires_at": now_ms // 1000 + lifetime + 3600})
        return StartedSession(session_id, session, self.device_token(email))

    # ---------------------------------------------------------------- CSRF

    @staticmethod
    def csrf_token(binding: str) -> str:
        """A token for forms shown to the holder of `binding` (session id or anonymous cookie)."""
        from itsdangerous import URLSafeTimedSerializer

        serializer = URLSafeTimedSerializer(config.secret_key(), salt=CSRF_SALT)
        return serializer.dumps(_binding_digest(binding))

    @staticmethod
    def check_csrf(binding: Optional[str], token: Optional[str]) -> bool:
        from itsdangerous import BadData, URLSafeTimedSerializer

        if not binding or not token or len(token) > 500:
            return False
        serializer = URLSafeTimedSerializer(config.secret_key(), salt=CSRF_SALT)
        try:
            value = serializer.loads(token, max_age=config.dashboard_session_seconds())
        except BadData:
            return False
        return isinstance(value, str) and hmac.compare_digest(value, _binding_digest(binding))

    # ---------------------------------------------------------------- rate limits

    def _hit(self, kind: str, key: str, rate: tuple[int, int], refusal: Optional[str] = None) -> None:
        ratelimits.hit(self.ctx, ratelimits.scope_key(kind, key), rate, limits.REFUSALS[refusal or kind])


def _binding_digest(binding: str) -> str:
    return hashlib.sha256(("csrf:" + binding).encode("utf-8")).hexdigest()[:32]


def _scope_digest(email: str) -> str:
    return hashlib.sha256(email.encode("utf-8")).hexdigest()[:32]

