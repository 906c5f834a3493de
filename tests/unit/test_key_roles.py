"""Keys follow their creator, at the service level (contract 4; issue 33 finding 6):
the role a key acts with is read from its creator's membership when the key is read,
and the role check `requires` defers for credentials runs on that read."""
from __future__ import annotations

import pytest

from chalicelib.errors import ForbiddenRole, InvalidApiKey
from chalicelib.models import PublishRequest
from chalicelib.ports.records import ApiKey, Member, User
from chalicelib.services import access
from chalicelib.services.auth import credentials_from_key
from chalicelib.services.people import PeopleService

PAGE = PublishRequest(title="T", html="<p>t</p>")

# Every rule here on both stores (SQLite, and DynamoDB on moto).
pytestmark = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


@pytest.fixture
def team(ctx, services):
    ws, _ = services.workspaces.create_workspace("Team", "pro")
    now = ctx.now_ms()
    for email, role in (("own@x.io", "owner"), ("ed@x.io", "editor")):
        ctx.users.create(User(email=email, password_hash="x", workspace_id=ws.id, role=role, created_ms=now,
                              password_changed_ms=now))
        ctx.people.add_member(Member(ws.id, email, role, now))
    owner = access.Actor(ws.id, role="owner", member="own@x.io", surface="dashboard")
    editor = access.Actor(ws.id, role="editor", member="ed@x.io", surface="dashboard")
    made = services.workspaces.create_key(ws.id, "ci", by=editor)
    return ws.id, owner, credentials_from_key(made.api_key)


def test_a_key_is_its_creators_and_acts_with_their_role_now(ctx, services, team):
    workspace_id, owner, key = team
    acting = access.actor(ctx, key)
    assert (acting.key_item.created_by, acting.role) == ("ed@x.io", "editor")
    services.documents.publish(key, PAGE)
    PeopleService(ctx).set_role(owner, "ed@x.io", "viewer")
    assert access.actor(ctx, key).role == "viewer"
    with pytest.raises(ForbiddenRole) as refused:
        services.documents.publish(key, PAGE)
    assert refused.value.details == {"role": "viewer"}
    assert services.documents.list(key).documents  # reads still work
    assert ctx.workspaces.get(workspace_id).document_count == 1  # the refused publish wrote nothing


def test_the_operators_key_belongs_to_the_workspace_and_acts_as_owner(ctx, services, team):
    workspace_id, _, _ = team
    made = services.workspaces.create_key(workspace_id, "ops")  # the operator (make admin)
    acting = access.actor(ctx, credentials_from_key(made.api_key))
    assert acting.key_item.created_by is None and acting.role == "owner"


def test_removal_revokes_and_a_later_membership_does_not_revive(ctx, clock, services, team):
    workspace_id, owner, key = team
    removed = PeopleService(ctx).remove(owner, "ed@x.io")
    assert removed["keys_revoked"] == 1
    assert ctx.keys.get(key.key_id).revoked_at is not None
    assert ctx.workspaces.get(workspace_id).key_count == 1  # the first (operator's) key only
    clock.advance(5)
    ctx.people.add_member(Member(workspace_id, "ed@x.io", "editor", ctx.now_ms()))
    with pytest.raises(InvalidApiKey):
        access.actor(ctx, key)


def test_a_key_whose_creator_left_unmarked_is_refused_and_marked(ctx, clock, services, team):
    """The store's marking missed the key (say the DynamoDB index had not shown it yet):
    the membership decides, and the key is marked revoked when presented."""
    workspace_id, _, key = team
    ctx.people.remove_member(workspace_id, "ed@x.io", ctx.now_ms())  # as if the key were not listed
    ctx.keys.create(ApiKey(key_id="key_" + "f" * 20, workspace_id=workspace_id, key_hash="f" * 64, name="late",
                           created_ms=ctx.now_ms(), created_by="ed@x.io"), None)
    item = ctx.keys.get("key_" + "f" * 20)
    with pytest.raises(InvalidApiKey):
        access.key_role(ctx, item)
    assert ctx.keys.get(item.key_id).revoked_at is not None


def test_credentials_are_never_authorized_before_the_key_is_read(storage):
    """`authorize` needs a role; a key's is known only once it is read (fail closed)."""
    with pytest.raises(TypeError):
        access.authorize(credentials_from_key("dpk_" + "a" * 43), "list_documents")
