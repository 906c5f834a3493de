"""The OAuth repository port, against every storage adapter: single-use codes and
refresh rotation are atomic under racing threads; revocation and expiry data round-trip."""
from __future__ import annotations

import pytest

from chalicelib.ports.records import AccessToken, AuthorizationCode, OAuthClient, OAuthGrant, RefreshToken
from tests.helpers import run_together

NOW = 1_795_000_000_000


@pytest.fixture(params=["aws", "sqlite"])
def repo(request, tmp_path):
    if request.param == "aws":
        request.getfixturevalue("aws")  # moto reset + table
        from chalicelib.wiring import build_repositories

        return build_repositories("aws").oauth
    from chalicelib.adapters.sqlite import repositories

    return repositories(tmp_path / "data", shared=False).oauth


def grant(grant_id="gr_1", workspace_id="ws_1", created_ms=NOW):
    return OAuthGrant(grant_id=grant_id, workspace_id=workspace_id, user="a@example.com", client_id="dpc_x",
                      client_name="X", scopes=("docs:read",), resource="http://h/mcp", created_ms=created_ms)


def code(code_hash):
    return AuthorizationCode(code_hash=code_hash, client_id="dpc_x", client_name="X", redirect_uri="https://x/cb",
                             code_challenge="c" * 43, resource="http://h/mcp", scopes=("docs:read",),
                             workspace_id="ws_1", user="a@example.com", expires_ms=NOW + 60_000)


def token(token_hash, grant_id="gr_1", expires_ms=NOW + 3_600_000):
    return AccessToken(token_hash=token_hash, grant_id=grant_id, workspace_id="ws_1", client_id="dpc_x",
                       scopes=("docs:read",), audience="http://h/mcp", expires_ms=expires_ms)


def refresh_token(token_hash, grant_id="gr_1", expires_ms=NOW + 86_400_000):
    return RefreshToken(token_hash=token_hash, grant_id=grant_id, client_id="dpc_x", created_ms=NOW,
                        expires_ms=expires_ms)


def test_clients_round_trip_and_keep(repo):
    repo.put_client(OAuthClient(client_id="dpc_a", kind="registered", redirect_uris=("https://x/cb",),
                                expires_ms=NOW))
    assert repo.get_client("dpc_a").expires_ms == NOW
    repo.keep_client("dpc_a")
    assert repo.get_client("dpc_a").expires_ms is None
    url = "https://example.com/" + "a" * 1900  # long metadata URLs are keyed by their hash
    repo.put_client(OAuthClient(client_id=url, kind="metadata", redirect_uris=("https://x/cb",)))
    assert repo.get_client(url).client_id == url
    assert repo.get_client("dpc_missing") is None


def test_a_code_is_consumed_once_under_racing_threads(repo):
    repo.put_code(code("c1"))
    results, failures = run_together([lambda: repo.consume_code("c1", NOW)] * 10)
    assert failures == []
    assert sorted(consumed for _, consumed in results) == [False] * 9 + [True]
    assert all(record.client_id == "dpc_x" and record.scopes == ("docs:read",) for record, _ in results)
    assert repo.consume_code("nope", NOW) == (None, False)


def test_grant_creation_links_the_code(repo):
    repo.put_code(code("c2"))
    repo.consume_code("c2", NOW)
    repo.create_grant(grant(), token("a1"), refresh_token("r1"), "c2")
    record, consumed = repo.consume_code("c2", NOW)
    assert not consumed and record.grant_id == "gr_1"
    access, got = repo.get_access("a1")
    assert access.workspace_id == "ws_1" and got.grant_id == "gr_1"


def test_refresh_rotation_is_won_once_under_racing_threads(repo):
    repo.create_grant(grant(), token("a1"), refresh_token("r1"), None)
    attempts = [lambda i=i: repo.rotate_refresh("r1", NOW, token(f"a-new-{i}"), refresh_token(f"r-new-{i}"))
                for i in range(8)]
    results, failures = run_together(attempts)
    assert failures == []
    assert sorted(results) == [False] * 7 + [True]
    assert repo.get_refresh("r1").used_ms == NOW
    winners = [i for i in range(8) if repo.get_refresh(f"r-new-{i}") is not None]
    assert len(winners) == 1 and repo.get_access(f"a-new-{winners[0]}")[0] is not None


def test_a_revoked_grant_cannot_rotate(repo):
    repo.create_grant(grant(), token("a1"), refresh_token("r1"), None)
    repo.revoke_grant("gr_1", NOW)
    assert repo.rotate_refresh("r1", NOW, token("a2"), refresh_token("r2")) is False
    assert repo.get_refresh("r2") is None
    assert repo.get_access("a1")[1].revoked_ms == NOW
    assert repo.revoke_grant("gr_1", NOW + 5).revoked_ms == NOW  # idempotent


def test_list_touch_and_delete(repo):
    repo.create_grant(grant("gr_old", created_ms=NOW), token("a1", "gr_old"), refresh_token("r1", "gr_old"), None)
    repo.create_grant(grant("gr_new", created_ms=NOW + 1), token("a2", "gr_new"), refresh_token("r2", "gr_new"),
                      None)
    repo.create_grant(grant("gr_other", "ws_2"), token("a3", "gr_other"), refresh_token("r3", "gr_other"), None)
    assert [g.grant_id for g in repo.list_grants("ws_1")] == ["gr_new", "gr_old"]
    repo.touch_grant("gr_old", NOW + 10)
    assert repo.get_grant("gr_old").last_used_ms == NOW + 10
    repo.delete_access("a1")
    assert repo.get_access("a1") == (None, None)


def test_an_existing_database_gains_the_oauth_tables(tmp_path):
    """A data folder from before OAuth (schema 1) is migrated on open; its data stays."""
    import sqlite3

    from chalicelib.adapters.sqlite import db

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in db._statements(db.MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO workspaces (id, name, plan, created_ms) VALUES ('ws_old', 'Old', 'free', 1)")
    conn.close()
    database = db.Database(path)
    assert database.one("PRAGMA user_version")["user_version"] == db.SCHEMA_VERSION >= 2
    assert database.one("SELECT name FROM workspaces WHERE id = 'ws_old'")["name"] == "Old"
    from chalicelib.adapters.sqlite.oauth import OAuthRepository

    repo = OAuthRepository(database)
    repo.create_grant(grant(), token("a1"), refresh_token("r1"), None)
    assert repo.get_access("a1")[1].grant_id == "gr_1"


def test_new_clients_are_capped_per_window_and_a_refused_one_is_not_stored(repo):
    """Issue 24: stored OAuth clients are capped (a flood of registrations could grow
    storage without bound); the counter and the client move together."""
    from chalicelib.ports import ClientCap, ClientCapReached

    def client(n):
        return OAuthClient(client_id=f"dpc_{n}", kind="registered", redirect_uris=("https://x/cb",),
                           scopes=("docs:read",), created_ms=NOW, expires_ms=NOW + 86_400_000)

    cap = ClientCap(window=20_775, limit=3, expires_at=NOW // 1000 + 172_800)
    for n in range(3):
        repo.put_client(client(n), cap)
    with pytest.raises(ClientCapReached):
        repo.put_client(client(3), cap)
    assert repo.get_client("dpc_3") is None and repo.get_client("dpc_2") is not None
    racing, failures = run_together([lambda n=n: _try_put(repo, client(10 + n), ClientCap(20_776, 3, cap.expires_at))
                                     for n in range(8)])
    assert failures == [] and sorted(racing) == [False] * 5 + [True] * 3  # exactly the limit, under racing threads
    repo.put_client(client(99), ClientCap(20_777, 3, cap.expires_at))  # a new window has room
    repo.put_client(client(3))  # without a cap (a grant keeping its client): not counted, not refused
    assert repo.get_client("dpc_99") is not None and repo.get_client("dpc_3") is not None


def _try_put(repo, client, cap):
    from chalicelib.ports import ClientCapReached

    try:
        repo.put_client(client, cap)
    except ClientCapReached:
        return False
    return True
