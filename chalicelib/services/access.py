"""The one access rule: who is acting, and the one way a service finds a document.

`find_document` canonicalises the id (UUIDs are case-insensitive; documents are
stored under the lowercase form), checks its shape (anything but a UUID is 404
without a storage call: DynamoDB refuses keys over 2 KB with an error that must
not become a 5xx), checks the workspace (and that no delete is under way), and
raises the one not-found error. Every service (documents, editing, feedback,
sharing) goes through it, so an id that one finds, all find.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, TypeGuard, TypeVar, Union, cast

from chalicelib.domain import roles
from chalicelib.errors import ForbiddenRole, InvalidApiKey, NotFound
from chalicelib.ports.errors import Unavailable
from chalicelib.services import auth
from chalicelib.ports.records import ApiKey, Document, StoredIdempotency, Version
from chalicelib.services.context import Context


@dataclass(frozen=True)
class Actor:
    """An authenticated caller. `key_item` is set for API keys (rate-limited in the
    version's transaction); others (dashboard sessions, OAuth grants) count writes in
    a standalone sliding log: `write_limit_scope`, default per workspace.

    `role` is what the caller may do in the workspace (domain/roles.py): a member
    (dashboard session), an OAuth grant and an API key a member made act with that
    member's current role, read on every request; a workspace key acts as the owner
    (`key_role`). `member` is the person's email,
    `client` an OAuth client's name, `surface` where the request came from
    (api, mcp, dashboard, cli): the activity log says who did what, from where."""
    workspace_id: str
    key_item: Optional[ApiKey] = None
    write_limit_scope: Optional[str] = None
    role: str = "editor"  # what callers that name no role had before keys followed their creator
    member: Optional[str] = None
    client: Optional[str] = None
    surface: str = "api"
    client_id: Optional[str] = None  # an OAuth grant's client (a review names it)


Who = Union[auth.Credentials, Actor]


def operator(workspace_id: str) -> Actor:
    """The operator CLI (`make admin`): full rights on the workspace it names."""
    return Actor(workspace_id, role="owner", surface="cli")


def role_of(who: Who) -> str:
    if not isinstance(who, Actor):
        raise TypeError("an API key's role is its creator's: verify the key first (access.actor)")
    return who.role


def authorize(who: Who, operation: str) -> None:
    """The one role check (contract 7d): 403 `forbidden_role` when the caller's role
    does not allow `operation`. API-key credentials are checked when the key is read
    (`requires` hands the operation to `key_actor`), never before."""
    role = role_of(who)
    if not roles.allows(role, operation):
        needed = roles.OPERATIONS.get(operation, "owner")
        raise ForbiddenRole(role, f"Your role in this workspace is {role}; this needs {roles.ARTICLES[needed]} "
                                  f"{needed}. Ask an owner of the workspace to change your role.")


_Method = TypeVar("_Method", bound=Callable[..., Any])


def requires(operation: str) -> Callable[[_Method], _Method]:
    """Decorate a service method whose first argument is the caller: the role check
    runs before anything else. `operation` must be in domain/roles.OPERATIONS."""
    import functools

    if operation not in roles.OPERATIONS:
        raise KeyError(f"{operation} is not in domain/roles.OPERATIONS")

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def checked(self: Any, who: Who, *args: Any, **kwargs: Any) -> Any:
            if isinstance(who, auth.Credentials):
                # The key's role is its creator's, known once the key is read: the read
                # that verifies it (key_actor) checks `operation`, in the same round trip
                # as the document it comes with. Credentials name no workspace, so a
                # service reaches nothing before that read.
                who = replace(who, operation=operation)
            else:
                authorize(who, operation)
            return method(self, who, *args, **kwargs)

        checked.operation = operation  # type: ignore[attr-defined]
        return cast(_Method, checked)

    return decorate


def same_workspace(who: Who, workspace_id: str) -> None:
    """A caller names only its own workspace; any other is answered as unknown."""
    if isinstance(who, Actor) and who.surface != "cli" and who.workspace_id != workspace_id:
        raise NotFound("No such workspace.")

_DOCUMENT_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def well_formed_id(document_id: Optional[str]) -> TypeGuard[str]:
    """Only a UUID can name a document."""
    return isinstance(document_id, str) and _DOCUMENT_ID.match(document_id) is not None


def canonical_document_id(document_id: str) -> str:
    """UUIDs are case-insensitive; documents are stored under the lowercase form."""
    return document_id.lower() if well_formed_id(document_id) else document_id


def document_not_found(document_id: Optional[str]) -> NotFound:
    shown = document_id.lower() if document_id is not None and well_formed_id(document_id) else "with that id"
    return NotFound(f"No document {shown} in this workspace.")


def actor(ctx: Context, who: Who) -> Actor:
    """The verified caller (for credentials: one read of the key, one of its creator's
    membership), its role checked against the operation `requires` named."""
    if isinstance(who, Actor):
        return who
    return key_actor(ctx, who, ctx.keys.get(who.key_id))


def key_role(ctx: Context, key: ApiKey) -> str:
    """The role a verified key acts with (contract 4, "Keys follow their creator"): a
    workspace key's is the owner's; a member's key has its creator's current role, read
    now (one GetItem), so a demotion narrows it at once. A key whose creator is no longer
    a member, or became one again only after the key was made, is revoked: 401 (and
    marked revoked, in case the removal did not reach it)."""
    if key.created_by is None:
        return roles.API_KEY_ROLE
    member = ctx.people.get_member(key.workspace_id, key.created_by)
    if member is None or member.created_ms > key.created_ms:
        try:
            ctx.keys.revoke(key.key_id, ctx.now_ms())
        except Unavailable:
            pass  # the membership decides; the marking is for the list and the count
        raise InvalidApiKey("The API key is not valid or has been revoked (its creator left the workspace).",
                            headers=auth.challenge())
    return member.role


def key_actor(ctx: Context, who: auth.Credentials, key_item: Optional[ApiKey], check: bool = True) -> Actor:
    """The Actor of presented credentials and the key read for them: verified, acting with
    `key_role`, and (`check`) allowed the operation the credentials carry."""
    key = auth.verify(who, key_item)
    acting = Actor(key.workspace_id, key, role=key_role(ctx, key), surface=who.surface)
    if check:
        check_operation(who, acting)
    return acting


def check_operation(who: Who, acting: Actor) -> None:
    """The role check `requires` left to the key's read."""
    if isinstance(who, auth.Credentials) and who.operation is not None:
        authorize(acting, who.operation)


def reload_key(ctx: Context, current: Actor) -> Actor:
    """Re-read the key item (after its rate slot was taken by a concurrent write)."""
    assert current.key_item is not None, "only a key's actor has a key to reload"
    key_item = ctx.keys.get(current.key_item.key_id)
    if key_item is None or key_item.revoked_at is not None:
        raise InvalidApiKey("The API key is not valid or has been revoked.")
    return replace(current, key_item=key_item)


def visible(doc: Optional[Document], to: Actor, include_deleting: bool = False) -> TypeGuard[Document]:
    """`doc` belongs to the actor's workspace (and, unless asked, is not being deleted)."""
    return (doc is not None and doc.workspace_id == to.workspace_id
            and (include_deleting or not doc.deleting))


@dataclass
class Found:
    """What `find_document` read: the verified actor, the canonical id, the document
    (None only when no id was given) and what was read with it."""
    actor: Actor
    document_id: Optional[str]
    doc: Optional[Document]
    versions: list[Version] = field(default_factory=list)
    idempotency: Optional[StoredIdempotency] = None

    @property
    def id(self) -> str:
        """The canonical id (find_document was given one, so it names a visible document)."""
        if self.document_id is None:
            raise document_not_found(None)
        return self.document_id

    @property
    def document(self) -> Document:
        """The document found (find_document was given an id: it exists and is visible)."""
        if self.doc is None:
            raise document_not_found(self.document_id)
        return self.doc


def find_document(ctx: Context, who: Who, document_id: Optional[str], *, include_deleting: bool = False,
                  with_versions: bool = False, idempotency_digest: Optional[str] = None,
                  seen: Optional[dict[str, Any]] = None) -> Found:
    """Verify the caller and find `document_id` in its workspace, or raise the one NotFound.

    With API-key credentials the key, the document and (`idempotency_digest`) the
    idempotency record come in one round trip; `with_versions` reads the versions
    too instead. `seen` receives the verified key item even when the document is
    not found (its rate-limit headers go on that answer). No `document_id`: only
    the caller is verified (a publish of a new document)."""
    document_id = canonical_document_id(document_id) if document_id else None
    lookup = document_id if well_formed_id(document_id) else None
    versions: list[Version] = []
    idem: Optional[StoredIdempotency] = None
    doc: Optional[Document]
    if with_versions:
        acting = actor(ctx, who)
        doc, versions = ctx.documents.get_with_versions(lookup) if lookup else (None, [])
    elif isinstance(who, Actor):
        acting = who
        doc = ctx.documents.get(lookup) if lookup else None
    else:
        key_item, doc, idem = ctx.documents.get_with_key(who.key_id, lookup, idempotency_digest)
        acting = key_actor(ctx, who, key_item, check=False)
    if seen is not None and acting.key_item is not None:
        seen["key_item"] = acting.key_item
    check_operation(who, acting)  # after `seen`: a refused write still answers its rate-limit headers
    if document_id and not visible(doc, acting, include_deleting):
        raise document_not_found(document_id)
    return Found(acting, document_id, doc if document_id else None, versions, idem)


def check_still_visible(ctx: Context, to: Actor, document_id: str) -> Document:
    """Re-read a document after a write lost a race; the same NotFound if it went."""
    doc = ctx.documents.get(document_id)
    if not visible(doc, to):
        raise document_not_found(document_id)
    return doc
