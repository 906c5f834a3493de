"""People storage (ports/people.py) keeps the same rules on DynamoDB (moto) and
SQLite: members and the last owner, single-use tokens, invitations accepted
once, the activity log's order, window and cursors."""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.ports import BadCursor, Repositories
from chalicelib.ports.people import LastOwner, MemberExists, NotMember
from chalicelib.ports.records import (
    AccountToken, ActivityEntry, ApiKey, DashboardSession, Member, MemberRemoval, User, Workspace,
)
from tests.helpers import run_together, sqlite_statements

WS = "ws_people"


@pytest.fixture(params=["aws", "sqlite"])
def repos(request, tmp_path) -> Repositories:
    if request.param == "aws":
        request.getfixturevalue("aws")
        from chalicelib.wiring import build_repositories

        return build_repositories("aws")
    from chalicelib.adapters.sqlite import repositories

    return repositories(tmp_path / "data", shared=False)


def exactly(cls, value):
    assert type(value) is cls, f"{type(value).__name__} is not {cls.__name__}"
    return value


def person(repos, email, workspace_id=WS):
    repos.users.create(User(email=email, password_hash="x", workspace_id=workspace_id, role="owner",
                            created_ms=1, password_changed_ms=1))


def setup(repos, *people, workspace_id=WS):
    repos.workspaces.create(Workspace(workspace_id, "People", "free", 1))
    for n, (email, role) in enumerate(people):
        person(repos, email, workspace_id)
        repos.people.add_member(Member(workspace_id=workspace_id, email=email, role=role, created_ms=10 + n))


def test_members_list_both_ways(repos):
    setup(repos, ("a@x.io", "owner"), ("b@x.io", "viewer"))
    repos.workspaces.create(Workspace("ws_two", "Two", "free", 1))
    repos.people.add_member(Member(workspace_id="ws_two", email="b@x.io", role="editor", created_ms=50,
                                   added_by="a@x.io"))
    assert repos.people.list_members(WS) == [Member(WS, "a@x.io", "owner", 10), Member(WS, "b@x.io", "viewer", 11)]
    assert repos.people.list_memberships("b@x.io") == [Member(WS, "b@x.io", "viewer", 11),
                                                       Member("ws_two", "b@x.io", "editor", 50, "a@x.io")]
    assert all(type(m) is Member for m in repos.people.list_members(WS) + repos.people.list_memberships("b@x.io"))
    assert exactly(Member, repos.people.get_member(WS, "b@x.io")).role == "viewer"
    assert repos.people.get_member("ws_two", "a@x.io") is None
    with pytest.raises(MemberExists):
        repos.people.add_member(Member(workspace_id=WS, email="b@x.io", role="owner", created_ms=60))


def test_the_last_owner_can_be_neither_demoted_nor_removed(repos):
    setup(repos, ("a@x.io", "owner"), ("b@x.io", "editor"))
    with pytest.raises(LastOwner):
        repos.people.set_role(WS, "a@x.io", "editor")
    with pytest.raises(LastOwner):
        repos.people.remove_member(WS, "a@x.io", 100)
    assert exactly(Member, repos.people.set_role(WS, "b@x.io", "owner")) == Member(WS, "b@x.io", "owner", 11)
    assert repos.people.set_role(WS, "a@x.io", "viewer").role == "viewer"
    with pytest.raises(NotMember):
        repos.people.set_role(WS, "nobody@x.io", "viewer")
    with pytest.raises(NotMember):
        repos.people.remove_member(WS, "nobody@x.io", 100)


def test_two_owners_demoting_each_other_at_once_leave_one(repos):
    setup(repos, ("a@x.io", "owner"), ("b@x.io", "owner"))
    results, failures = run_together([lambda: repos.people.set_role(WS, "a@x.io", "editor"),
                                      lambda: repos.people.set_role(WS, "b@x.io", "editor")])
    owners = [m for m in repos.people.list_members(WS) if m.role == "owner"]
    assert len(owners) == 1
    assert failures == ["LastOwner"] and len(results) == 1


def test_removal_ends_that_persons_sessions_in_that_workspace_only(repos):
    setup(repos, ("a@x.io", "owner"), ("b@x.io", "editor"))
    repos.workspaces.create(Workspace("ws_two", "Two", "free", 1))
    repos.people.add_member(Member(workspace_id="ws_two", email="b@x.io", role="owner", created_ms=50))
    for digest, ws in (("s1", WS), ("s2", "ws_two")):
        repos.sessions.create(DashboardSession(session_hash=digest, email="b@x.io", workspace_id=ws, created_ms=1,
                                               expires_ms=10**13, expires_at=10**10))
    removal = exactly(MemberRemoval, repos.people.remove_member(WS, "b@x.io", 100))
    assert removal == MemberRemoval(Member(WS, "b@x.io", "editor", 11), ())
    assert repos.sessions.get("s1") is None and repos.sessions.get("s2") is not None
    assert repos.people.get_member(WS, "b@x.io") is None


def make_key(repos, n: int, created_by, workspace_id=WS, created_ms=20) -> str:
    key_id = f"key_{n:020x}"
    repos.keys.create(ApiKey(key_id=key_id, workspace_id=workspace_id, key_hash=f"{n:064x}", name=f"k{n}",
                             created_ms=created_ms + n, created_by=created_by), None)
    return key_id


@pytest.mark.parametrize("many", [2, 23])  # 23: more than the DynamoDB removal's own transaction holds
def test_removal_revokes_the_keys_that_member_made_there_and_only_those(repos, many):
    """Keys follow their creator (contract 4): removing a member revokes every active key
    they made in that workspace and frees its place in the key count; the others' keys,
    the workspace's keys and their keys in another workspace stay."""
    setup(repos, ("a@x.io", "owner"), ("b@x.io", "editor"))
    repos.workspaces.create(Workspace("ws_two", "Two", "free", 1))
    repos.people.add_member(Member(workspace_id="ws_two", email="b@x.io", role="owner", created_ms=50))
    theirs = [make_key(repos, n, "b@x.io") for n in range(many)]
    already = make_key(repos, 100, "b@x.io")
    repos.keys.revoke(already, 60)
    owners = make_key(repos, 101, "a@x.io")
    workspace = make_key(repos, 102, None)
    elsewhere = make_key(repos, 103, "b@x.io", workspace_id="ws_two")
    assert repos.workspaces.get(WS).key_count == many + 2

    removal = repos.people.remove_member(WS, "b@x.io", 500)
    assert sorted(removal.revoked_keys) == sorted(theirs) and removal.member.role == "editor"
    assert all(repos.keys.get(k).revoked_at == 500 for k in theirs)
    assert repos.keys.get(already).revoked_at == 60
    assert all(repos.keys.get(k).revoked_at is None for k in (owners, workspace, elsewhere))
    assert repos.workspaces.get(WS).key_count == 2 and repos.workspaces.get("ws_two").key_count == 1
    assert repos.keys.revoke(theirs[0], 600).revoked_at == 500  # once: the count does not move again
    assert repos.workspaces.get(WS).key_count == 2


def test_an_owner_removed_with_keys_still_leaves_an_owner(repos):
    setup(repos, ("a@x.io", "owner"), ("b@x.io", "owner"))
    make_key(repos, 1, "a@x.io")
    make_key(repos, 2, "b@x.io")
    assert repos.people.remove_member(WS, "b@x.io", 500).revoked_keys == (f"key_{2:020x}",)
    with pytest.raises(LastOwner):
        repos.people.remove_member(WS, "a@x.io", 600)
    assert repos.keys.get(f"key_{1:020x}").revoked_at is None and repos.workspaces.get(WS).key_count == 1


def token(kind="reset", token_hash="t1", email="a@x.io", expires_ms=5000, **more):
    return AccountToken(token_hash=token_hash, kind=kind, email=email, created_ms=1000, expires_ms=expires_ms,
                        expires_at=expires_ms // 1000 + 3600, **more)


def test_a_token_is_used_once_and_never_after_expiry(repos):
    repos.people.put_token(token())
    repos.people.put_token(token(token_hash="t2"))
    assert exactly(AccountToken, repos.people.get_token("t1")) == token()
    reset = token(token_hash="t3", password_changed_ms=7)
    repos.people.put_token(reset)
    assert repos.people.get_token("t3") == reset
    results, failures = run_together([lambda: repos.people.use_token("t1", 2000) for _ in range(5)])
    assert failures == [] and sum(r is not None for r in results) == 1
    assert [exactly(AccountToken, r) for r in results if r is not None] == [dataclasses.replace(token(), used_ms=2000)]
    assert repos.people.use_token("t2", 5000) is None  # expired at 5000
    assert repos.people.use_token("unknown", 2000) is None


def test_an_invitation_is_accepted_once_and_adds_the_member_with_it(repos):
    setup(repos, ("a@x.io", "owner"))
    person(repos, "c@x.io")
    repos.people.put_token(token("invite", "i1", "c@x.io", workspace_id=WS, role="editor", invited_by="a@x.io"))
    repos.people.put_token(token("invite", "i2", "c@x.io", workspace_id=WS, role="viewer", invited_by="a@x.io"))
    invites = repos.people.list_invites(WS, 2000)
    assert [i.token_hash for i in invites] in (["i1", "i2"], ["i2", "i1"])
    assert all(type(i) is AccountToken for i in invites)
    assert token("invite", "i1", "c@x.io", workspace_id=WS, role="editor", invited_by="a@x.io") in invites
    member = Member(workspace_id=WS, email="c@x.io", role="editor", created_ms=2000, added_by="a@x.io")
    assert exactly(AccountToken, repos.people.accept_invite("i1", member, 2000)).role == "editor"
    assert repos.people.get_member(WS, "c@x.io") == member
    assert repos.people.accept_invite("i1", member, 2001) is None
    with pytest.raises(MemberExists):
        repos.people.accept_invite("i2", dataclasses.replace(member, role="viewer"), 2002)
    assert repos.people.get_token("i2").used_ms is None  # nothing changed
    assert repos.people.revoke_invites(WS, "c@x.io", 2003) == 1
    assert repos.people.list_invites(WS, 2004) == []


def test_an_expired_invitation_adds_nobody(repos):
    setup(repos, ("a@x.io", "owner"))
    person(repos, "c@x.io")
    repos.people.put_token(token("invite", "i1", "c@x.io", workspace_id=WS, role="editor"))
    member = Member(workspace_id=WS, email="c@x.io", role="editor", created_ms=6000)
    assert repos.people.accept_invite("i1", member, 6000) is None
    assert repos.people.get_member(WS, "c@x.io") is None
    assert repos.people.list_invites(WS, 6000) == []


def entry(n, workspace_id=WS, created_ms=None):
    return ActivityEntry(workspace_id=workspace_id, activity_id=f"act_{n:04d}", created_ms=created_ms or 1000 + n,
                         actor_kind="member", actor="a@x.io", surface="api", action="document.publish",
                         target=f"doc{n}", detail={"title": f"Doc {n} ✓"}, expires_at=10**10)


def test_activity_pages_newest_first_within_the_window(repos):
    for n in range(7):
        repos.people.add_activity(entry(n))
    repos.people.add_activity(entry(99, workspace_id="ws_other"))
    page, cursor = repos.people.activity_page(WS, 1002, 3, None)
    assert [exactly(ActivityEntry, e) for e in page] == [entry(6), entry(5), entry(4)] and cursor
    page, cursor = repos.people.activity_page(WS, 1002, 3, cursor)
    assert [e.target for e in page] == ["doc3", "doc2"] and cursor is None
    with pytest.raises(BadCursor):
        repos.people.activity_page("ws_other", 0, 3, repos.people.activity_page(WS, 0, 1, None)[1])
    with pytest.raises(BadCursor):
        repos.people.activity_page(WS, 0, 3, "not-a-cursor")


def test_sessions_switch_workspace_and_end_all_but_one(repos):
    setup(repos, ("a@x.io", "owner"))
    for digest in ("s1", "s2", "s3"):
        repos.sessions.create(DashboardSession(session_hash=digest, email="a@x.io", workspace_id=WS, created_ms=1,
                                               expires_ms=10**13, expires_at=10**10))
    assert repos.sessions.get("s2") == DashboardSession("s2", "a@x.io", WS, 1, 10**13, 10**10)
    assert type(repos.sessions.get("s2")) is DashboardSession
    assert repos.sessions.set_workspace("s1", "ws_two")
    assert repos.sessions.get("s1").workspace_id == "ws_two"
    assert repos.sessions.delete_for_user("a@x.io", keep="s1") == 2
    assert repos.sessions.get("s1") and not repos.sessions.get("s2")
    assert repos.users.set_fields("a@x.io", {"email_verified_ms": 77})
    assert repos.users.get("a@x.io") == User("a@x.io", "x", WS, 1, "owner", 1, email_verified_ms=77)
    assert type(repos.users.get("a@x.io")) is User
    assert not repos.users.set_fields("nobody@x.io", {"email_verified_ms": 77})


# ------------------------------------------------------------------ single sign-on (contract 7f)

def test_sso_auto_join_is_stored_and_looked_up_by_domain(repos):
    from chalicelib.ports import WriteRefused

    setup(repos, ("a@x.io", "owner"))
    repos.workspaces.create(Workspace("ws_two", "Two", "free", 1))
    assert repos.workspaces.sso_auto_join_for("@example.com") == []
    stored = exactly(Workspace, repos.workspaces.set_sso_auto_join(WS, "@example.com", "editor"))
    assert stored.sso_auto_join == {"domain": "@example.com", "role": "editor"}
    assert repos.workspaces.get(WS).sso_auto_join == {"domain": "@example.com", "role": "editor"}
    repos.workspaces.set_sso_auto_join("ws_two", "@example.com", "viewer")
    assert repos.workspaces.sso_auto_join_for("@example.com") == [(WS, "editor"), ("ws_two", "viewer")]
    # Moving to another domain leaves nothing behind at the old one; clearing removes it.
    repos.workspaces.set_sso_auto_join(WS, "@example.org", "viewer")
    assert repos.workspaces.sso_auto_join_for("@example.com") == [("ws_two", "viewer")]
    assert repos.workspaces.sso_auto_join_for("@example.org") == [(WS, "viewer")]
    assert repos.workspaces.set_sso_auto_join(WS, None, None).sso_auto_join is None
    assert repos.workspaces.sso_auto_join_for("@example.org") == []
    assert repos.workspaces.get(WS).name == "People"  # nothing else changed
    with pytest.raises(WriteRefused):
        repos.workspaces.set_sso_auto_join("ws_missing", "@example.com", "viewer")


def test_a_session_remembers_its_sso_domain(repos):
    setup(repos, ("a@x.io", "owner"))
    repos.sessions.create(DashboardSession("h1", "a@x.io", WS, 1, 10**13, 10**10, sso_domain="@x.io"))
    repos.sessions.create(DashboardSession("h2", "a@x.io", WS, 1, 10**13, 10**10))
    assert exactly(DashboardSession, repos.sessions.get("h1")).sso_domain == "@x.io"
    assert repos.sessions.get("h2").sso_domain is None
    repos.sessions.set_workspace("h1", WS)
    assert repos.sessions.get("h1").sso_domain == "@x.io"


def test_a_sign_in_under_way_is_a_one_time_token(repos):
    setup(repos, ("a@x.io", "owner"))
    repos.people.put_token(AccountToken(token_hash="sso1", kind="sso", email="", created_ms=1, expires_ms=10**13,
                                        expires_at=10**10))
    assert repos.people.use_token("sso1", 5).kind == "sso"
    assert repos.people.use_token("sso1", 6) is None


def test_a_persons_pending_invitations_are_found_by_email(repos):
    """The welcome page of someone in no workspace lists the invitations to them (any
    workspace), newest first; used, withdrawn and expired ones are not there."""
    def made(n, *args, **more):
        return dataclasses.replace(token("invite", *args, **more), created_ms=1000 + n)

    repos.people.put_token(made(1, "i1", "c@x.io", workspace_id=WS, role="editor"))
    repos.people.put_token(made(2, "i2", "c@x.io", workspace_id="ws_other", role="viewer"))
    repos.people.put_token(made(3, "i3", "c@x.io", workspace_id="ws_third", role="viewer", expires_ms=1500))
    repos.people.put_token(made(4, "i4", "d@x.io", workspace_id=WS, role="viewer"))
    repos.people.put_token(token("reset", "r1", "c@x.io"))
    found = repos.people.invites_for("c@x.io", 2000)
    assert [i.token_hash for i in found] == ["i2", "i1"]
    assert all(type(i) is AccountToken for i in found) and found[1].role == "editor"
    assert repos.people.revoke_invites("ws_other", "c@x.io", 2001) == 1
    assert [i.token_hash for i in repos.people.invites_for("c@x.io", 2002)] == ["i1"]
    assert repos.people.invites_for("nobody@x.io", 2002) == []


# ------------------------------------------------------------------ a removal sticks (contract 7f, docs/sso.md)

def _writes_of(repos, call) -> list[list[str]]:
    """What `call` wrote, one list per atomic step: the TransactWriteItems it sent
    (DynamoDB: each action's kind and key), or the statements between SQLite's BEGIN and COMMIT."""
    steps: list[list[str]] = []
    if repos.kind == "aws":
        from chalicelib.adapters.aws import clients as aws

        def seen(params, **_):
            steps.append([f"{kind} {body['Key' if 'Key' in body else 'Item']['PK']['S']} "
                          f"{body['Key' if 'Key' in body else 'Item']['SK']['S']}"
                          for action in params["TransactItems"] for kind, body in action.items()])

        events = aws.dynamodb().meta.events
        events.register("provide-client-params.dynamodb.TransactWriteItems", seen, unique_id="removal-steps")
        try:
            call()
        finally:
            events.unregister("provide-client-params.dynamodb.TransactWriteItems", unique_id="removal-steps")
        return steps
    for statement in sqlite_statements(repos.people.db, call):
        word = statement.strip().split()[0].upper()
        if word == "BEGIN":
            steps.append([])
        elif steps and word in ("INSERT", "DELETE", "UPDATE"):
            steps[-1].append(" ".join(statement.split()))
    return steps


def test_a_removal_leaves_its_mark_in_the_same_step(repos):
    from chalicelib.ports.records import RemovalMark

    setup(repos, ("a@x.io", "owner"), ("b@x.io", "editor"))
    assert repos.people.get_removal(WS, "b@x.io") is None
    steps = _writes_of(repos, lambda: repos.people.remove_member(WS, "b@x.io", 500, removed_by="a@x.io"))
    mark = exactly(RemovalMark, repos.people.get_removal(WS, "b@x.io"))
    assert mark == RemovalMark(WS, "b@x.io", "a@x.io", 500)
    removal_steps = [s for s in steps if any("member_removals" in w or "REMOVED#" in w for w in s)]
    assert len(removal_steps) == 1, steps
    assert any("DELETE FROM members" in w or w.startswith(f"Delete WS#{WS} MEMBER#b@x.io") for w in removal_steps[0])
    assert repos.people.get_removal("ws_other", "b@x.io") is None and repos.people.get_removal(WS, "a@x.io") is None
    # A refused removal (the last owner) leaves no mark.
    with pytest.raises(LastOwner):
        repos.people.remove_member(WS, "a@x.io", 600, removed_by="a@x.io")
    assert repos.people.get_removal(WS, "a@x.io") is None
    assert [m.email for m in repos.people.list_members(WS)] == ["a@x.io"]  # the mark is no member


def test_auto_join_adds_no_one_removed_and_a_deliberate_add_clears_the_mark(repos):
    from chalicelib.ports.people import Removed

    setup(repos, ("a@x.io", "owner"), ("b@x.io", "editor"), ("c@x.io", "viewer"))
    repos.people.remove_member(WS, "b@x.io", 500, removed_by="a@x.io")
    with pytest.raises(Removed):
        repos.people.add_member(Member(WS, "b@x.io", "editor", 600, "sso"), unless_removed=True)
    assert repos.people.get_member(WS, "b@x.io") is None and repos.people.get_removal(WS, "b@x.io") is not None
    person(repos, "d@x.io")
    repos.people.add_member(Member(WS, "d@x.io", "editor", 600, "sso"), unless_removed=True)  # never removed
    assert repos.people.get_member(WS, "d@x.io") is not None
    repos.people.add_member(Member(WS, "b@x.io", "viewer", 700, "a@x.io"))  # an owner adds them back
    assert repos.people.get_removal(WS, "b@x.io") is None
    assert repos.people.get_member(WS, "b@x.io") == Member(WS, "b@x.io", "viewer", 700, "a@x.io")
    # An accepted invitation clears it, in the acceptance's own step.
    repos.people.remove_member(WS, "c@x.io", 800, removed_by="c@x.io")  # left of their own accord
    assert repos.people.get_removal(WS, "c@x.io").removed_by == "c@x.io"
    repos.people.put_token(token("invite", "i1", "c@x.io", workspace_id=WS, role="editor", invited_by="a@x.io",
                                 expires_ms=10**13))
    member = Member(WS, "c@x.io", "editor", 900, "a@x.io")
    assert repos.people.accept_invite("i1", member, 900) is not None
    assert repos.people.get_removal(WS, "c@x.io") is None and repos.people.get_member(WS, "c@x.io") == member
