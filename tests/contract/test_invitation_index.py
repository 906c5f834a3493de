"""Indexing the invitations made before the welcome page looked them up by email, on both stores.

Finding: DynamoDB invitation tokens carry GSI2 `INVITEE#<email>` since the welcome page of a
person in no workspace lists the invitations to them (PeopleRepository.invites_for); tokens
stored before that change have no such entry, so a pending invitation made then never showed
there. `index-invitations` (services/maintenance.index_invitations, PeopleRepository.
index_invitations) adds the entry to every pending invitation that lacks it, each by a
conditional update; a second run changes nothing. The "before the change" state is made here
by removing what the change writes (GSI2PK/GSI2SK), as an old stack has it.
"""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.ports.records import AccountToken, User, Workspace
from chalicelib.services.maintenance import index_invitations
from chalicelib.services.people import PeopleService

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
NOW_MS = 1_795_000_000_000  # the FakeClock's start


def _invitation(token_hash: str, email: str, workspace_id: str, created_ms: int, **more) -> AccountToken:
    fields = {"token_hash": token_hash, "kind": "invite", "email": email, "workspace_id": workspace_id,
              "role": "viewer", "created_ms": created_ms, "expires_ms": NOW_MS + 7 * 86_400_000,
              "expires_at": NOW_MS // 1000 + 8 * 86_400, "invited_by": "boss@x.io", **more}
    return AccountToken(**fields)


def _as_before_the_invitee_index(ctx, storage: str, token_hashes: list[str]) -> None:
    """Remove what the welcome page's change writes for an invitation: (DynamoDB) its GSI2 entry."""
    if storage == "sqlite":
        return  # SQLite finds invitations by their email column (an index since migration 19)
    from chalicelib.adapters.aws.keys import account_token_key

    for token_hash in token_hashes:
        ctx.people.table.update(account_token_key(token_hash), "REMOVE GSI2PK, GSI2SK")


def _old_invitations(ctx, storage: str) -> list[str]:
    for ws, name in (("ws_a", "Alpha"), ("ws_b", "Beta"), ("ws_c", "Gamma")):
        ctx.workspaces.create(Workspace(workspace_id=ws, name=name, plan="free", created_ms=1))
    for email in ("ed@x.io", "vi@x.io"):  # accounts in no workspace any more (their first one was ws_c)
        ctx.users.create(User(email=email, password_hash="x", workspace_id="ws_c", role="owner", created_ms=1,
                              password_changed_ms=1))
    made = [_invitation("h1", "ed@x.io", "ws_a", 1000), _invitation("h2", "ed@x.io", "ws_b", 2000),
            _invitation("h3", "vi@x.io", "ws_a", 3000),
            _invitation("h4", "ed@x.io", "ws_c", 4000, used_ms=5000),             # accepted or withdrawn
            _invitation("h5", "ed@x.io", "ws_c", 500, expires_ms=NOW_MS - 1)]       # expired
    for token in made:
        ctx.people.put_token(token)
    ctx.people.put_token(AccountToken(token_hash="r1", kind="reset", email="ed@x.io", created_ms=1,
                                      expires_ms=NOW_MS + 1, expires_at=NOW_MS // 1000 + 1))
    _as_before_the_invitee_index(ctx, storage, [t.token_hash for t in made])
    return [t.token_hash for t in made]


def _pending(ctx, email: str) -> list[str]:
    return [i["workspace_name"] for i in PeopleService(ctx).pending_for(email)]


@BOTH
def test_invitations_made_before_the_index_show_on_the_welcome_page_after_the_backfill(ctx, storage):
    _old_invitations(ctx, storage)
    if storage == "aws":
        assert _pending(ctx, "ed@x.io") == []  # the finding: an old stack's welcome page lists nothing
    first = index_invitations(ctx)
    expected = {"found": 5, "indexed": 3, "left_alone": 2, "changed_meanwhile": 0} if storage == "aws" else \
        {"found": 0, "indexed": 0, "left_alone": 0, "changed_meanwhile": 0}
    assert first == expected
    assert _pending(ctx, "ed@x.io") == ["Beta", "Alpha"]  # newest first, as if invited today
    assert _pending(ctx, "vi@x.io") == ["Alpha"]
    again = index_invitations(ctx)  # idempotent: what is indexed is not found again
    assert again["indexed"] == 0 and again["changed_meanwhile"] == 0
    assert again["found"] == (2 if storage == "aws" else 0)  # the used and the expired one stay as they are
    assert _pending(ctx, "ed@x.io") == ["Beta", "Alpha"]
    joined = PeopleService(ctx).accept_pending("ed@x.io", _invite_id(ctx, "ed@x.io", "Beta"))
    assert joined.workspace_id == "ws_b" and _pending(ctx, "ed@x.io") == ["Alpha"]


def _invite_id(ctx, email: str, workspace_name: str) -> str:
    return next(i["invite_id"] for i in PeopleService(ctx).pending_for(email) if i["workspace_name"] == workspace_name)


@pytest.mark.parametrize("storage", ["aws"], indirect=True)
def test_the_backfill_never_writes_over_an_invitation_that_changed_meanwhile(ctx, storage, monkeypatch):
    """Between the backfill's read and its write, one invitation is deleted (its TTL) and another
    is indexed by a newer writer: the first is not brought back as a stub, the second keeps
    what the newer writer wrote (each write is conditional on the item as it was read)."""
    from chalicelib.adapters.aws.keys import account_token_key

    _old_invitations(ctx, storage)
    table = ctx.people.table
    scan = table.scan

    def scan_then_others_write(*args, **kwargs):
        for page in scan(*args, **kwargs):
            table.delete(account_token_key("h1"))
            table.update(account_token_key("h3"), "SET GSI2PK = :pk, GSI2SK = :sk",
                         values={":pk": "INVITEE#vi@x.io", ":sk": "newer"})
            yield page

    monkeypatch.setattr(table, "scan", scan_then_others_write)
    assert index_invitations(ctx) == {"found": 5, "indexed": 1, "left_alone": 2, "changed_meanwhile": 2}
    assert table.get(account_token_key("h1")) is None
    assert table.get(account_token_key("h3"))["GSI2SK"] == "newer"
    assert dataclasses.replace(ctx.people.get_token("h2"), used_ms=None).workspace_id == "ws_b"


@pytest.mark.parametrize("storage", ["aws"], indirect=True)
def test_the_admin_command_indexes_the_invitations_of_a_stack(ctx, storage, app_clock):
    """`make -s admin ARGS="--aws index-invitations"` (in-process, on moto): one JSON result."""
    from chalicelib import wiring
    from scripts import admin

    _old_invitations(ctx, storage)
    # `make admin` is a process of its own: its Context is built now, from this test's table (a
    # Context cached earlier in this process, e.g. by a thread of an earlier test, is not it).
    wiring.reset()
    wiring.default_context().clock = app_clock
    args = admin.build_parser().parse_args(["--aws", "index-invitations"])
    result = admin.run(args)
    assert result["indexed"] == 3 and result["changed_meanwhile"] == 0, result
    assert admin.run(args)["indexed"] == 0
