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
- No enumeration (contract 7d): sign-up and "forgot password" answer the same
  whether or not the email has an account; the mail tells the owner of the
  address what happened. Both also do the same work for any address, so their
  time says nothing either: sign-up pays for one argon2 hash and makes one
  conditional write (claiming the email, refused when it is taken), "forgot
  password" makes none; whether the address had an account, the workspace, the
  token and the mail run after the answer (`deliver_sign_up`, `deliver_reset`,
  services/quiet_steps.py).
- One-time links (verification 24 h, reset 1 h, sign-in links 1 h): a random
  token in the link, only its SHA-256 stored, used once by a conditional write.
  A reset also needs the password to be unchanged since the link was made, and
  ends every session of the account.
- Passwords: 8 to 200 characters and not weak (domain/strength.py, with the
  email and workspace name as context), the rule passphrases follow.
- Sessions carry the person's role in their current workspace, read on every
  request: a removed member's session ends at once, a demoted one acts with the
  new role.
- A person who belongs to no workspace any more (removed from the only one they
  had) still signs in: the session has no workspace (`NO_WORKSPACE`) and the
  dashboard shows only its welcome page, where an invitation link is accepted or
  a workspace of their own is made (`create_own_workspace`).
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any, Optional, TYPE_CHECKING

from chalicelib import config
from chalicelib.domain import limits, strength
from chalicelib.ports import UserExists
from chalicelib.ports.records import AccountToken, DashboardSession, Member, User
from chalicelib.errors import Unauthorized, ValidationFailed
from chalicelib.services.context import Context, new_workspace_id
from chalicelib.services import mailing, members, quiet_steps, ratelimits
from chalicelib.services.tokens import (  # noqa: F401 - normalise_email and dashboard_url are used by pages too
    LINK_INVALID, dashboard_url, new_token, normalise_email, token_digest,
)
from chalicelib.services import tokens
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

BAD_CREDENTIALS = "Email or password is incorrect."
CSRF_SALT = "docpub.dashboard.csrf"

# The workspace of a session whose person belongs to none (the dashboard's welcome page).
NO_WORKSPACE = ""

if TYPE_CHECKING:
    from argon2 import PasswordHasher
    from chalicelib.services.access import Actor


@dataclass(frozen=True)
class Session:
    session_hash: str
    email: str
    workspace_id: str
    created_ms: int
    expires_ms: int
    role: str = "owner"
    # Signed in through single sign-on at this email domain ("@example.com"; contract 7f), else None.
    sso_domain: Optional[str] = None

    @property
    def actor(self) -> "Actor":
        from chalicelib.services.access import Actor

        return Actor(self.workspace_id, role=self.role, member=self.email, surface="dashboard",
                     write_limit_scope=None)


@dataclass(frozen=True)
class StartedSession:
    session_id: str  # goes into the cookie only; storage keeps its hash
    session: Session
    device_token: Optional[str] = None  # the device cookie: this browser signed in to this account


def hash_session_id(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=8)
def _hasher(cost: tuple[int, int, int]) -> PasswordHasher:
    from argon2 import PasswordHasher, Type

    time_cost, memory_kib, parallelism = cost
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism, type=Type.ID)


def password_hasher() -> PasswordHasher:
    return _hasher(config.argon2_cost())


@functools.lru_cache(maxsize=8)
def _dummy_hash(cost: tuple[int, int, int]) -> str:
    return _hasher(cost).hash(secrets.token_urlsafe(16))


def check_password(password: Optional[str], field: str = "password", context: tuple[Any, ...] = ()) -> None:
    """The account password rule (contract 7d): 8 to 200 characters, not weak."""
    if not MIN_PASSWORD <= len(password or "") <= MAX_PASSWORD:
        raise ValidationFailed.field(field, f"must be {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    reason = strength.weakness(password or "", context)
    if reason:
        raise ValidationFailed.field(field, f"is too easy to guess: {reason}")


def _verify(password_hash: str, password: str) -> bool:
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        return password_hasher().verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


class AccountService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    # ---------------------------------------------------------------- sign up / in / out

    def sign_up(self, email: str, password: str, workspace_name: str, client_ip: str) -> str:
        """Create an account and its workspace, unconfirmed, and mail a confirmation link.
        The answer (the normalised email) and the work before it are the same whether or
        not the email has an account: then the mail says so instead. The workspace and
        either mail come after the answer (`deliver_sign_up`); 503 when that cannot be
        handed off."""
        self._hit("signup-ip", client_ip, limits.sign_up_per_ip())
        email = normalise_email(email)
        name = (workspace_name or "").strip()
        fields = []
        if len(email) > MAX_EMAIL or not _EMAIL_SHAPE.match(email):
            fields.append({"field": "email", "message": "must be a valid email address"})
        if not MIN_PASSWORD <= len(password or "") <= MAX_PASSWORD:
            fields.append({"field": "password", "message": f"must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"})
        if not 1 <= len(name) <= MAX_WORKSPACE_NAME:
            fields.append({"field": "workspace_name", "message": f"must be 1 to {MAX_WORKSPACE_NAME} characters"})
        if fields:
            raise ValidationFailed(f"{fields[0]['field']}: {fields[0]['message']}", {"fields": fields})
        check_password(password, context=(email, name))
        password_hash = password_hasher().hash(password)  # every path pays for one hash
        # The one write, for any address: claim the email for a new, unconfirmed account (a
        # taken email refuses it). Which of the two happened, the workspace, the link or the
        # "you already have an account" mail are `deliver_sign_up`, after the answer.
        workspace_id = new_workspace_id()
        try:
            self._claim_account(email, password_hash, workspace_id)
        except UserExists:
            pass  # never a second password for an existing account (nor a confirmation of the first claimant's)
        quiet_steps.hand_off(self.ctx, quiet_steps.SIGN_UP, email=email, workspace_id=workspace_id,
                             workspace_name=name)
        return email

    def deliver_sign_up(self, email: str, workspace_id: str, workspace_name: str) -> None:
        """The quiet step of `sign_up`. If that sign-up made the account (it is unconfirmed and
        names `workspace_id`, not made yet): its workspace and a confirmation link. Else the
        address had an account: a mail saying so (the owner signs in, or resets to claim it),
        within a silent per-account limit."""
        email = normalise_email(email)
        user = self.ctx.users.get(email)
        if user is None:
            return  # deleted since
        if (user.workspace_id == workspace_id and not user.email_verified_ms
                and self.ctx.workspaces.get(workspace_id) is None):
            try:
                self._own_workspace(email, workspace_id, workspace_name, self.ctx.now_ms())
            except BaseException:
                self.ctx.users.delete(email)  # no account without its workspace: sign up again
                raise
            self._send_verification(email)
            return
        if self._quietly_within("verify-resend", email, limits.VERIFY_RESEND_PER_ACCOUNT):
            self._mail("exists", email, sign_in_link=dashboard_url("sign-in"), reset_link=dashboard_url("forgot"))

    def _create_account(self, email: str, password_hash: str, workspace_name: str,
                        verified_ms: Optional[int] = None, workspace_id: Optional[str] = None,
                        own_workspace: bool = True) -> None:
        now_ms = self.ctx.now_ms()
        workspace_id = workspace_id or new_workspace_id()
        self._claim_account(email, password_hash, workspace_id, verified_ms)  # a taken email creates nothing
        if not own_workspace:
            return
        try:
            self._own_workspace(email, workspace_id, workspace_name, now_ms)
        except BaseException:
            self.ctx.users.delete(email)
            raise

    def _claim_account(self, email: str, password_hash: str, workspace_id: str,
                       verified_ms: Optional[int] = None) -> None:
        """The account's record (UserExists when the email has one)."""
        now_ms = self.ctx.now_ms()
        self.ctx.users.create(User(email=email, password_hash=password_hash, workspace_id=workspace_id, role="owner",
                                   created_ms=now_ms, password_changed_ms=now_ms, email_verified_ms=verified_ms))

    def _own_workspace(self, email: str, workspace_id: str, workspace_name: str, now_ms: int) -> None:
        """A new account's own workspace (free), the account its owner."""
        WorkspaceService(self.ctx).create_workspace(workspace_name, "free", workspace_id=workspace_id, with_key=False)
        self.ctx.people.add_member(Member(workspace_id=workspace_id, email=email, role="owner", created_ms=now_ms))

    def create_verified_account(self, email: str, password_hash: str, workspace_name: str,
                                workspace_id: Optional[str] = None, own_workspace: bool = True) -> None:
        """An account whose email someone trusted has confirmed (single sign-on, services/sso.py)."""
        self._create_account(email, password_hash, workspace_name, self.ctx.now_ms(), workspace_id, own_workspace)

    def start_sso(self, email: str, workspace_id: str, sso_domain: str) -> StartedSession:
        """A session in `workspace_id`, signed in through SSO at `sso_domain`."""
        return self._start(email, workspace_id, sso_domain)

    def start_in_sso(self, user: User, sso_domain: str) -> StartedSession:
        """A session in the person's default (or first) workspace, signed in through SSO."""
        return self._start_in(user, sso_domain)

    def _send_verification(self, email: str) -> None:
        token, digest = new_token()
        now_ms = self.ctx.now_ms()
        self.ctx.people.put_token(self._token("verify", digest, email, limits.VERIFY_LINK_SECONDS, now_ms))
        self._mail("verify", email, link=dashboard_url("verify", token=token),
                   hours=limits.VERIFY_LINK_SECONDS // 3600)

    def _token(self, kind: str, digest: str, email: str, seconds: int, now_ms: int,
               password_changed_ms: Optional[int] = None, workspace_id: Optional[str] = None) -> AccountToken:
        return AccountToken(token_hash=digest, kind=kind, email=email, created_ms=now_ms,
                            expires_ms=now_ms + seconds * 1000, expires_at=now_ms // 1000 + seconds + 3600,
                            password_changed_ms=password_changed_ms, workspace_id=workspace_id)

    def verify_email(self, token: Optional[str]) -> StartedSession:
        """The confirmation link: the email is confirmed and the browser signed in."""
        record = self._use(token, "verify")
        user = self.ctx.users.get(record.email)
        if user is None:
            raise ValidationFailed(LINK_INVALID)
        if not user.email_verified_ms:
            self.ctx.users.set_fields(user.email, {"email_verified_ms": self.ctx.now_ms()})
        return self._start_in(user)

    def _use(self, token: Optional[str], kind: str) -> AccountToken:
        """Use a one-time token of `kind` (once); the one clear answer for any bad link."""
        if not tokens.well_formed(token):
            raise ValidationFailed(LINK_INVALID)
        digest = token_digest(token)  # type: ignore[arg-type]
        record = self.ctx.people.get_token(digest)
        if record is None or record.kind != kind:
            raise ValidationFailed(LINK_INVALID)
        used = self.ctx.people.use_token(digest, self.ctx.now_ms())
        if used is None:
            raise ValidationFailed(LINK_INVALID)
        return used

    def peek_token(self, token: Optional[str], kind: str) -> Optional[AccountToken]:
        """A usable (unused, unexpired) token of `kind`, without using it (forms show it first)."""
        return tokens.peek(self.ctx, token, kind)

    # ---------------------------------------------------------------- forgot / reset

    def forgot_password(self, email: str, client_ip: str) -> str:
        """The same answer and the same work for any address: the per-IP limit, then the step
        handed off. Whether the email has an account, its per-account limit, the token and the
        mail come after the answer (`deliver_reset`, services/quiet_steps.py); 503 when the step
        cannot be handed off."""
        self._hit("reset-ip", client_ip, limits.RESET_PER_IP)
        email = normalise_email(email)
        if len(email) > MAX_EMAIL or not _EMAIL_SHAPE.match(email):
            raise ValidationFailed.field("email", "must be a valid email address")
        quiet_steps.hand_off(self.ctx, quiet_steps.RESET, email=email)
        return email

    def deliver_reset(self, email: str) -> None:
        """The quiet step of `forgot_password`: a reset link to `email` if it has an account and
        its per-account limit allows one more; nothing otherwise (the limit's refusal is told to
        nobody: that would say the account exists)."""
        email = normalise_email(email)
        user = self.ctx.users.get(email)
        if user is None or not self._quietly_within("reset-account", email, limits.RESET_PER_ACCOUNT):
            return
        token, digest = new_token()
        now_ms = self.ctx.now_ms()
        self.ctx.people.put_token(self._token("reset", digest, email, limits.RESET_LINK_SECONDS, now_ms,
                                              password_changed_ms=user.password_changed_ms or 0))
        self._mail("reset", email, link=dashboard_url("reset", token=token),
                   minutes=limits.RESET_LINK_SECONDS // 60)

    def reset_password(self, token: Optional[str], new_password: str) -> StartedSession:
        """A new password from a reset link: every other session of the account ends,
        the email counts as confirmed (the link reached it), and this browser is signed in."""
        record = self.peek_token(token, "reset")
        if record is None:
            raise ValidationFailed(LINK_INVALID)
        check_password(new_password, "new_password", (record.email,))
        user = self.ctx.users.get(record.email)
        changed_at = (user.password_changed_ms if user else None) or 0
        link_made_for = record.password_changed_ms or 0  # the change the link was made after
        if user is None or changed_at != link_made_for:
            raise ValidationFailed(LINK_INVALID)
        self._use(token, "reset")
        now_ms = self.ctx.now_ms()
        if not self.ctx.users.set_password(user.email, user.password_hash,
                                           password_hasher().hash(new_password), now_ms):
            raise ValidationFailed(LINK_INVALID)
        if not user.email_verified_ms:
            self.ctx.users.set_fields(user.email, {"email_verified_ms": now_ms})
        self.ctx.sessions.delete_for_user(user.email)
        return self._start_in(user)

    # ---------------------------------------------------------------- sign-in links (operator)

    def login_link(self, workspace_id: str) -> str:
        """A one-time dashboard sign-in link for the workspace's first owner (`make admin login-link`)."""
        from chalicelib.errors import NotFound

        owners = [m for m in self.ctx.people.list_members(workspace_id) if m.role == "owner"]
        if not owners:
            user_owner = None
        else:
            user_owner = owners[0].email
        if user_owner is None:
            raise NotFound("That workspace has no owner account (or does not exist).")
        token, digest = new_token()
        self.ctx.people.put_token(self._token("login", digest, user_owner, limits.LOGIN_LINK_SECONDS,
                                              self.ctx.now_ms(), workspace_id=workspace_id))
        return dashboard_url("login", token=token)

    def use_login_link(self, token: Optional[str]) -> StartedSession:
        record = self._use(token, "login")
        user = self.ctx.users.get(record.email)
        if (user is None or record.workspace_id is None
                or members.role_in(self.ctx, record.workspace_id, user.email) is None):
            raise ValidationFailed(LINK_INVALID)
        if not user.email_verified_ms:
            self.ctx.users.set_fields(user.email, {"email_verified_ms": self.ctx.now_ms()})
        return self._start(user.email, record.workspace_id)

    # ---------------------------------------------------------------- invitations

    def sign_up_invited(self, token: Optional[str], password: str) -> StartedSession:
        """Create the invited person's account from the invitation (the link proves the
        mailbox: the email counts as confirmed) and join the workspace."""
        from chalicelib.services.people import PeopleService

        invite = self.peek_token(token, "invite")
        if invite is None or invite.workspace_id is None:
            raise ValidationFailed(LINK_INVALID)
        check_password(password, context=(invite.email,))
        if self.ctx.users.get(invite.email) is not None:
            raise ValidationFailed("You already have an account: sign in to accept the invitation.")
        try:
            self._create_account(invite.email, password_hasher().hash(password), "", self.ctx.now_ms(),
                                 workspace_id=invite.workspace_id, own_workspace=False)
        except UserExists:
            raise ValidationFailed("You already have an account: sign in to accept the invitation.") from None
        PeopleService(self.ctx).accept(token, invite.email)
        return self._start(invite.email, invite.workspace_id)

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
            ok = _verify(user.password_hash, password)
        if not ok:
            for kind, key, rate in budgets:
                ratelimits.record(self.ctx, ratelimits.scope_key(kind, key), rate, limits.REFUSALS[kind])
            raise Unauthorized(BAD_CREDENTIALS)
        assert user is not None  # a missing account never verifies
        if password_hasher().check_needs_rehash(user.password_hash):
            self.ctx.users.set_password(email, user.password_hash, password_hasher().hash(password),
                                        self.ctx.now_ms())
        if not user.email_verified_ms:
            if self._quietly_within("verify-resend", email, limits.VERIFY_RESEND_PER_ACCOUNT):
                self._send_verification(email)
            raise Unauthorized(f"Confirm your email address first: we sent a link to {email}. "
                               "Open it to finish signing up.")
        if previous_session_id:
            self.sign_out(previous_session_id)  # rotation: the pre-sign-in id never becomes valid
        return self._start_in(user)

    def _start_in(self, user: User, sso_domain: Optional[str] = None) -> StartedSession:
        """A session in the person's default workspace, or their first one; in none
        (NO_WORKSPACE: the welcome page) when they belong to no workspace any more."""
        email = user.email
        workspace_id: Optional[str] = user.workspace_id
        if not workspace_id or members.role_in(self.ctx, workspace_id, email) is None:
            memberships = members.workspaces_of(self.ctx, email)
            workspace_id = memberships[0].workspace_id if memberships else NO_WORKSPACE
        return self._start(email, workspace_id, sso_domain)

    def create_own_workspace(self, session_id: str, name: str) -> Session:
        """A person in no workspace makes one of their own (free, they its owner) and the
        session moves into it. Someone who belongs to a workspace keeps it: nothing is made."""
        session = self.session(session_id)
        if session is None:
            raise Unauthorized("Your session has ended; sign in again.")
        if members.workspaces_of(self.ctx, session.email):
            return session
        name = (name or "").strip()
        if not 1 <= len(name) <= MAX_WORKSPACE_NAME:
            raise ValidationFailed.field("workspace_name", f"must be 1 to {MAX_WORKSPACE_NAME} characters")
        workspace_id = new_workspace_id()
        WorkspaceService(self.ctx).create_workspace(name, "free", workspace_id=workspace_id, with_key=False)
        self.ctx.people.add_member(Member(workspace_id=workspace_id, email=session.email, role="owner",
                                          created_ms=self.ctx.now_ms()))
        return self.switch_workspace(session_id, workspace_id)

    def switch_workspace(self, session_id: str, workspace_id: str) -> Session:
        """Act in another workspace the person belongs to (the dashboard's switcher)."""
        from chalicelib.errors import NotFound

        session = self.session(session_id)
        if session is None:
            raise Unauthorized("Your session has ended; sign in again.")
        role = members.role_in(self.ctx, workspace_id, session.email) if isinstance(workspace_id, str) \
            and len(workspace_id) < 100 else None
        if role is None:
            raise NotFound("No such workspace.")
        self.ctx.sessions.set_workspace(session.session_hash, workspace_id)
        self.ctx.users.set_fields(session.email, {"workspace_id": workspace_id})
        return Session(session.session_hash, session.email, workspace_id, session.created_ms, session.expires_ms,
                       role, session.sso_domain)

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
        if item.expires_ms <= self.ctx.now_ms():
            self.ctx.sessions.delete(digest)
            return None
        if item.workspace_id == NO_WORKSPACE:  # in no workspace: the welcome page only
            role: Optional[str] = ""
        else:
            role = members.role_in(self.ctx, item.workspace_id, item.email)
        if role is None:  # removed from the workspace: this session ended with the membership
            self.ctx.sessions.delete(digest)
            return None
        return Session(digest, item.email, item.workspace_id, item.created_ms, item.expires_ms, role,
                       item.sso_domain)

    def change_password(self, session_id: str, current_password: str, new_password: str,
                        client_ip: str) -> StartedSession:
        session = self.session(session_id)
        if session is None:
            raise Unauthorized("Your session has ended; sign in again.")
        self._hit("signin-account", _scope_digest(session.email), SIGN_IN_PER_ACCOUNT,
                  refusal="password-change")
        user = self.ctx.users.get(session.email)
        if user is None or not _verify(user.password_hash, (current_password or "")[:MAX_PASSWORD]):
            raise ValidationFailed("The current password is incorrect.",
                                   {"fields": [{"field": "current_password", "message": "is incorrect"}]})
        check_password(new_password, "new_password", (session.email,))
        if not self.ctx.users.set_password(session.email, user.password_hash,
                                           password_hasher().hash(new_password), self.ctx.now_ms()):
            raise ValidationFailed("The password was changed at the same time; sign in again.")
        # Every session of this person ends (a thief's too); this browser gets a fresh one.
        self.ctx.sessions.delete_for_user(session.email)
        return self._start(session.email, session.workspace_id)

    def _start(self, email: str, workspace_id: str, sso_domain: Optional[str] = None) -> StartedSession:
        session_id = secrets.token_urlsafe(32)
        now_ms = self.ctx.now_ms()
        lifetime = config.dashboard_session_seconds()
        role = (members.role_in(self.ctx, workspace_id, email) or "viewer") if workspace_id != NO_WORKSPACE else ""
        session = Session(hash_session_id(session_id), email, workspace_id, now_ms, now_ms + lifetime * 1000, role,
                          sso_domain)
        self.ctx.sessions.create(DashboardSession(session_hash=session.session_hash, email=email,
                                                  workspace_id=workspace_id, created_ms=now_ms,
                                                  expires_ms=session.expires_ms,
                                                  expires_at=now_ms // 1000 + lifetime + 3600,
                                                  sso_domain=sso_domain))
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

    # ---------------------------------------------------------------- mail

    def _mail(self, kind: str, to: str, **values: Any) -> None:
        mailing.send(self.ctx, mailing.render(kind, to, **values))

    def _quietly_within(self, kind: str, key: str, rate: tuple[int, int]) -> bool:
        """Claim a slot of a per-account limit without telling the caller it was full
        (that would say the account exists): False means "send nothing"."""
        from chalicelib.errors import RateLimited

        try:
            self._hit(kind, _scope_digest(key), rate)
        except RateLimited:
            return False
        return True

    # ---------------------------------------------------------------- rate limits

    def _hit(self, kind: str, key: str, rate: tuple[int, int], refusal: Optional[str] = None) -> None:
        ratelimits.hit(self.ctx, ratelimits.scope_key(kind, key), rate, limits.REFUSALS[refusal or kind])


def _binding_digest(binding: str) -> str:
    return hashlib.sha256(("csrf:" + binding).encode("utf-8")).hexdigest()[:32]


def _scope_digest(email: str) -> str:
    return hashlib.sha256(email.encode("utf-8")).hexdigest()[:32]

