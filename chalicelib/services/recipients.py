"""Recipients of `recipients` links (contract 7f): the email step and its code on the
share page, and, for the document's people, who opened it and revoking one person.

The email step answers the same for any address (no enumeration): a code goes only to
an admitted address, and only the mail itself says so. The request does the same work for
any address too (its rate-limit hits, then handing the step off): whether the address is
admitted, the code and its mail come after the answer (`deliver_code`, services/quiet_steps.py),
so the answer's time says nothing either. A code is 6 digits, valid 10
minutes, stored as a keyed hash (HMAC with the service's secret: 10^6 codes would be
guessed from a plain hash), good for 5 tries; the fifth wrong try spends it until a new
one is sent. Code requests count per email address and per client address, whatever
the answer, through the one rate limiter (services/ratelimits.py).
"""
from __future__ import annotations

import hashlib
import hmac
import builtins
import logging
import re
import secrets
from dataclasses import dataclass

from chalicelib import config
from chalicelib.domain import emails, limits
from chalicelib.domain.links import link_ref
from chalicelib.errors import Gone, NotFound, RateLimited, Unauthorized, ValidationFailed
from chalicelib.models import RecipientInfo, RecipientList
from chalicelib.ports import StaleDocument
from chalicelib.ports.records import Document
from chalicelib.services import access, activity, audience, cdn, mailing, quiet_steps, ratelimits
from chalicelib.services.access import Actor, Who, requires
from chalicelib.services.context import Context, rfc3339
from chalicelib.services.sharing import ShareService, share_path

log = logging.getLogger("docpub")

_CODE = re.compile(r"^[0-9]{6}$")


class WrongCode(Unauthorized):
    """A code that is not the one sent (401, with the tries left)."""


@dataclass(frozen=True)
class RecipientPass:
    cookie_name: str
    cookie_value: str
    max_age: int
    path: str


def valid_email(value: str, field: str = "email") -> str:
    email = emails.normal_email(value or "")
    if email is None:
        raise ValidationFailed.field(field, "must be an email address")
    return email


def _code_hash(document_id: str, email: str, code: str) -> str:
    message = f"recipient-code:{document_id}:{email}:{code}".encode()
    return hmac.new(config.secret_key().encode(), message, hashlib.sha256).hexdigest()


class RecipientService:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.sharing = ShareService(ctx)

    # ---------------------------------------------------------------- the share page

    def _link(self, share_id: str) -> Document:
        doc = self.sharing.access_settings(share_id)
        if not audience.for_recipients(doc):
            raise NotFound("No such link.")
        return doc

    def request_code(self, share_id: str, email: str, client_ip: str) -> str:
        """The email step: the same answer (the address, lowercased) and the same work for any
        address. Only the rate-limit hits happen here; whether the address is admitted, and the
        code and its mail if so, are `deliver_code`, run after the answer (services/quiet_steps.py).
        422 for what is not an email address, 429 past the limits, 503 when the step cannot be
        handed off."""
        doc = self._link(share_id)
        email = valid_email(email)
        ratelimits.hit(self.ctx, ratelimits.viewer_scope("recipient-code-ip", "any", client_ip),
                       limits.RECIPIENT_CODES_PER_IP, limits.REFUSALS["recipient-code-ip"])
        ratelimits.hit(self.ctx, ratelimits.scope_key("recipient-code-email", _email_digest(email)),
                       limits.RECIPIENT_CODES_PER_EMAIL, limits.REFUSALS["recipient-code-email"])
        quiet_steps.hand_off(self.ctx, quiet_steps.RECIPIENT_CODE, share_id=doc.share_id, email=email)
        return email

    def deliver_code(self, share_id: str, email: str) -> None:
        """The quiet step of `request_code`: mail a code to `email` if it may open the link
        (now: a link changed since is judged as it is); nothing otherwise."""
        try:
            doc = self._link(share_id)
        except (NotFound, Gone):  # withdrawn, expired or no longer `recipients` since the answer
            return
        email = valid_email(email)
        if not audience.admitted(self.ctx, doc, email):
            return
        if email not in doc.share_recipients:  # admitted by its @domain: any address there
            try:  # many client addresses asking for many addresses at a listed domain: no mail relay
                ratelimits.hit(self.ctx, ratelimits.scope_key("recipient-code-mails", doc.document_id),
                               limits.RECIPIENT_CODE_MAILS_PER_DOCUMENT, limits.REFUSALS["recipient-code-mails"])
            except RateLimited:
                log.warning("recipient code not mailed: the link's hourly budget for its domains is spent",
                            extra={"link": link_ref(doc.share_id)})
                return
        from chalicelib.ports.records import RecipientCode

        code = f"{secrets.randbelow(10 ** limits.RECIPIENT_CODE_DIGITS):0{limits.RECIPIENT_CODE_DIGITS}d}"
        self.ctx.recipients.put_code(RecipientCode(
            doc.document_id, email, _code_hash(doc.document_id, email, code),
            self.ctx.now_ms() + limits.RECIPIENT_CODE_SECONDS * 1000))
        workspace = self.ctx.workspaces.get(doc.workspace_id)
        mailing.send(self.ctx, mailing.render(
            "recipient_code", email, mailing.branding_of(workspace), code=code, title=doc.title,
            minutes=limits.RECIPIENT_CODE_SECONDS // 60,
            workspace_name=workspace.name if workspace else "Docpub",
            link=config.base_url() + share_path(doc.share_id)))

    def verify_code(self, share_id: str, email: str, code: str) -> RecipientPass:
        """The right code: a viewer pass for this link (30 days) and the recipient recorded.
        Anything else: WrongCode (401) with the tries left; 0 once the code is spent."""
        doc = self._link(share_id)
        email = valid_email(email)
        code = (code or "").strip()
        stored = self.ctx.recipients.get_code(doc.document_id, email)
        if (stored is None or stored.expires_ms <= self.ctx.now_ms()
                or stored.tries >= limits.RECIPIENT_CODE_TRIES):
            raise _spent()
        right = bool(_CODE.match(code)) and hmac.compare_digest(
            _code_hash(doc.document_id, email, code), stored.code_hash)
        if right and audience.admitted(self.ctx, doc, email) and self.ctx.recipients.use_code(stored):
            self.ctx.recipients.record_open(doc.document_id, doc.workspace_id, email, self.ctx.now_ms(), views=0)
            return RecipientPass(audience.RECIPIENT_COOKIE, audience.issue_pass(self.ctx, doc, email),
                                 audience.RECIPIENT_PASS_SECONDS, share_path(doc.share_id))
        if not self.ctx.recipients.spend_try(stored):
            raise _spent()  # another try (or a new code) came first: ask again
        left = limits.RECIPIENT_CODE_TRIES - stored.tries - 1
        if left <= 0:
            raise _spent("That code is not right, and it was the last try.")
        tries = "1 try" if left == 1 else f"{left} tries"
        raise WrongCode(f"That code is not right; {tries} left.", {"tries_left": left})

    # ---------------------------------------------------------------- the document's people

    @requires("list_recipients")
    def list(self, who: Who, document_id: str) -> RecipientList:
        found = access.find_document(self.ctx, who, document_id)
        return RecipientList(recipients=self.listed(found.document))

    def listed(self, doc: Document) -> builtins.list[RecipientInfo]:
        """Listed addresses and addresses verified under a listed domain, revoked ones too."""
        recorded = {r.email: r for r in self.ctx.recipients.list_for_document(doc.document_id)}
        emails = set(recorded) | {e for e in doc.share_recipients if not e.startswith("@")}
        shown = []
        for email in sorted(emails):
            item = recorded.get(email)
            shown.append(RecipientInfo(
                email=email, first_opened_at=rfc3339(item.first_opened_ms) if item else None,
                last_opened_at=rfc3339(item.last_opened_ms) if item else None, views=item.views if item else 0,
                revoked=bool(item and item.revoked_ms is not None)
                or (item is not None and not audience.listed(doc.share_recipients, email))))
        return shown

    @requires("revoke_recipient")
    def revoke(self, who: Who, document_id: str, email: str) -> None:
        """Refuse one person from their next request on (and at the edge: the link is dropped
        from the CDN, though recipient pages are never kept there). An address the link never
        named (not listed, not at a listed domain, never recorded) is 404. They stay listed, revoked;
        an entry naming exactly their address leaves `share_recipients`, so listing them
        again is what admits them again (a domain entry stays: it admits the others)."""
        found = access.find_document(self.ctx, who, document_id)
        doc = found.document
        email = valid_email(email)
        if (not audience.listed(doc.share_recipients, email)
                and self.ctx.recipients.get(doc.document_id, email) is None):
            # A typo, or any address on a link that never named it: nothing to revoke, and
            # recording it would list a stranger as a (revoked) recipient.
            raise NotFound(f"No recipient {email} on this document: it is not in share_recipients, "
                           "not at a listed domain, and never opened the link.")
        now_ms = self.ctx.now_ms()
        self.ctx.recipients.revoke(doc.document_id, doc.workspace_id, email, now_ms)  # refused from here on
        logged = activity.entry(self.ctx, found.actor, doc.workspace_id, "share.recipient_revoked",
                                doc.document_id, {"title": doc.title, "email": email})
        if email in doc.share_recipients:
            after = tuple(entry for entry in doc.share_recipients if entry != email)
            try:
                self.ctx.documents.update_fields(doc, {"share_recipients": after}, activity=logged)
            except StaleDocument as exc:
                raise access.document_not_found(document_id) from exc
            self.ctx.recipients.index_audience(doc.document_id, doc.workspace_id, [], [email], now_ms)
        else:
            activity.record(self.ctx, found.actor, doc.workspace_id, "share.recipient_revoked", doc.document_id,
                            {"title": doc.title, "email": email})
        cdn.withdraw(self.ctx, doc.share_id, "recipient revoked")


@dataclass(frozen=True)
class SharedItem:
    """A document of another workspace the signed-in person may open as a recipient."""
    title: str
    share_url: str
    share_id: str
    workspace_name: str
    shared_at: str


class SharedWithMe:
    """The dashboard's "Shared with me" (contract 7f): what other workspaces' `recipients`
    links admit the signed-in account's (verified) email, and a pass to open one as that
    recipient without a code: the account's sign-in verified the address already."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _verified_email(self, who: Actor) -> str:
        """The account's verified address, as recipient entries and records name it."""
        email = who.member or ""
        user = self.ctx.users.get(email) if email else None
        if user is None or not user.email_verified_ms:
            raise NotFound("Confirm your email address first.")
        return audience.canonical(email)

    def listed(self, who: Actor) -> builtins.list[SharedItem]:
        email = self._verified_email(who)
        mine = {m.workspace_id for m in self.ctx.people.list_memberships(who.member or email)}
        found = audience.shared_with(self.ctx, email, exclude_workspaces=mine)
        names: dict[str, str] = {}
        items = []
        for shared in found:
            doc = shared.document
            if doc.workspace_id not in names:
                workspace = self.ctx.workspaces.get(doc.workspace_id)
                names[doc.workspace_id] = workspace.name if workspace else ""
            items.append(SharedItem(doc.title, config.base_url() + share_path(doc.share_id), doc.share_id,
                                    names[doc.workspace_id], rfc3339(shared.added_ms)))
        return items

    def open(self, who: Actor, share_id: str) -> RecipientPass:
        """A viewer pass for the link, for the account's email if the link admits it (else NotFound)."""
        email = self._verified_email(who)
        doc = ShareService(self.ctx).access_settings(share_id)
        if not audience.admitted(self.ctx, doc, email):
            raise NotFound("This document is not shared with you.")
        self.ctx.recipients.record_open(doc.document_id, doc.workspace_id, email, self.ctx.now_ms(), views=0)
        return RecipientPass(audience.RECIPIENT_COOKIE, audience.issue_pass(self.ctx, doc, email),
                             audience.RECIPIENT_PASS_SECONDS, share_path(doc.share_id))


def _spent(message: str = "This code can no longer be used.") -> WrongCode:
    return WrongCode(message + " Ask for a new code.", {"tries_left": 0})


def _email_digest(email: str) -> str:
    """A rate log names an address by a keyed hash only."""
    return hmac.new(config.secret_key().encode(), email.encode(), hashlib.sha256).hexdigest()[:32]
