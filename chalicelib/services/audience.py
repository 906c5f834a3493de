"""Who a `recipients` link admits (contract 7f), and the viewer cookie that says so.

A link's audience is its document's `share_recipients`: email addresses and `@domain`
entries (any address at that domain, once verified by a code). An address is admitted
when an entry lists it and its recipient record is not revoked (one read per request:
a revocation holds from the next request on). The viewer cookie is signed, names the
document and the address, and lasts 30 days; it is checked against the audience on
every request, so a revoked or unlisted address is refused however fresh its cookie.

"Shared with me" reads the audience by entry (the address and its `@domain`), then the
documents themselves: an entry left behind by a crash between the document's change and
the index's is dropped there, because the document no longer lists it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from chalicelib import config
from chalicelib.domain import emails
from chalicelib.ports.records import Document
from chalicelib.services.context import Context

if TYPE_CHECKING:
    from itsdangerous import URLSafeSerializer

RECIPIENT_COOKIE = "dp_recipient"
RECIPIENT_SALT = "docpub.share.recipient"
RECIPIENT_PASS_SECONDS = 30 * 24 * 3600


def canonical(email: str) -> str:
    """`email` as entries and recipient records name it (lowercase, its domain in ASCII:
    domain/emails.py); an address of another shape (an account's, as typed) lowercased."""
    return emails.normal_email(email) or email.strip().lower()


def domain_of(email: str) -> str:
    return "@" + canonical(email).rsplit("@", 1)[-1]


def entries_for(email: str) -> list[str]:
    """The audience entries that would admit `email`: itself and its domain."""
    email = canonical(email)
    return [email, domain_of(email)]


def listed(entries: Iterable[str], email: str) -> bool:
    """Does an entry of `entries` name `email` (itself, or its domain)?"""
    wanted = set(entries_for(email))
    return any(entry in wanted for entry in entries)


def for_recipients(doc: Document) -> bool:
    return doc.share_access == "recipients"


def admitted(ctx: Context, doc: Document, email: Optional[str]) -> bool:
    """May `email` open this `recipients` link now (listed, not revoked)?"""
    if not email or not for_recipients(doc) or not listed(doc.share_recipients, email):
        return False
    found = ctx.recipients.get(doc.document_id, canonical(email))
    return found is None or found.revoked_ms is None


# ---------------------------------------------------------------- the viewer cookie

def _serializer() -> "URLSafeSerializer":
    from itsdangerous import URLSafeSerializer

    return URLSafeSerializer(config.secret_key(), salt=RECIPIENT_SALT)


def issue_pass(ctx: Context, doc: Document, email: str) -> str:
    return str(_serializer().dumps({"d": doc.document_id, "r": email, "t": ctx.now_ms() // 1000}))


def email_of_pass(ctx: Context, doc: Document, value: Optional[str]) -> Optional[str]:
    """The address a signed, unexpired pass for `doc` names (whether admitted or not), else None."""
    if not value or len(value) > 1000:
        return None
    from itsdangerous import BadSignature

    try:
        data = _serializer().loads(value)
    except BadSignature:
        return None
    if not isinstance(data, dict) or data.get("d") != doc.document_id or not isinstance(data.get("t"), int):
        return None
    if not 0 <= ctx.now_ms() // 1000 - data["t"] < RECIPIENT_PASS_SECONDS:
        return None
    email = data.get("r")
    return email if isinstance(email, str) else None


def holder(ctx: Context, doc: Document, value: Optional[str]) -> Optional[str]:
    """The admitted recipient a pass names, else None."""
    email = email_of_pass(ctx, doc, value)
    return email if email is not None and admitted(ctx, doc, email) else None


# ---------------------------------------------------------------- changes of the audience

def apply_change(ctx: Context, before: Document, after: Sequence[str]) -> bool:
    """After the document's `share_recipients` became `after`: recorded recipients no entry
    admits any more are refused for that reason alone (`admitted` reads the entries; they
    stay listed, shown revoked), so listing their entry again, an address or its domain,
    admits them again; a person revoked on their own (`DELETE …/recipients/:email`) is
    admitted again only by listing their address anew. The audience by entry follows.
    True when someone lost access."""
    old, new = set(before.share_recipients), set(after)
    now_ms = ctx.now_ms()
    narrowed = bool(old - new)
    for entry in new - old:
        if not entry.startswith("@"):
            ctx.recipients.restore(before.document_id, entry)
    ctx.recipients.index_audience(before.document_id, before.workspace_id, list(after),
                                  sorted(old - new), now_ms)
    return narrowed


def index_new(ctx: Context, document_id: str, workspace_id: str, entries: Sequence[str]) -> None:
    """A new document's audience, listed by entry."""
    if entries:
        ctx.recipients.index_audience(document_id, workspace_id, list(entries), [], ctx.now_ms())


@dataclass(frozen=True)
class SharedDocument:
    document: Document
    added_ms: int


def shared_with(ctx: Context, email: str, exclude_workspaces: Iterable[str] = ()) -> list[SharedDocument]:
    """Documents of other workspaces `email` may open as a recipient, newest first."""
    skipped = set(exclude_workspaces)
    entries = ctx.recipients.shared_with(entries_for(email))
    newest: dict[str, int] = {}
    for entry in entries:
        if entry.workspace_id not in skipped:
            newest[entry.document_id] = max(newest.get(entry.document_id, 0), entry.added_ms)
    ids = sorted(newest, key=lambda d: (-newest[d], d))[:100]
    docs = ctx.documents.get_many(ids) if ids else {}
    from chalicelib.domain import links

    now_ms = ctx.now_ms()
    shown = []
    for document_id in ids:
        doc = docs.get(document_id)
        if (doc is None or doc.deleting or not links.enabled(doc) or links.expired(doc, now_ms)
                or not admitted(ctx, doc, email)):
            continue
        shown.append(SharedDocument(doc, newest[document_id]))
    return shown
