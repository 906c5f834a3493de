"""Issue 24: expired rows are purged automatically. Finding: expired rows were
never purged from SQLite. (DynamoDB: every expiring item carries the TTL
attribute `expires_at`.)"""
from __future__ import annotations

import time

import pytest

from tests.helpers import post_json


def _count(db, table):
    return db.one(f"SELECT COUNT(*) AS n FROM {table}")["n"]  # noqa: S608


def test_a_sweep_purges_what_has_expired_and_keeps_the_rest(services, storage):
    from chalicelib.adapters.sqlite.db import Database

    db: Database = services.workspaces.ctx.documents.db
    now_s = int(time.time())
    with db.write_only() as tx:
        tx.execute("INSERT INTO idempotency (key_id, key_digest, request_hash, response, expires_at) VALUES "
                   "('k', 'old', 'h', '{}', ?), ('k', 'new', 'h', '{}', ?)", (now_s - 10, now_s + 3600))
        tx.execute("INSERT INTO rate_logs (scope, hits, seq, expires_at) VALUES ('old', '[]', 1, ?), "
                   "('new', '[]', 1, ?)", (now_s - 10, now_s + 3600))
        tx.execute("INSERT INTO view_limits (scope, window_no, admitted, expires_at) VALUES ('old', 0, 1, ?)",
                   (now_s - 10,))
    counts = db.purge_expired(now_s * 1000)
    assert counts["idempotency"] == 1 and counts["rate_logs"] == 1 and counts["view_limits"] == 1
    assert _count(db, "idempotency") == 1 and _count(db, "rate_logs") == 1


def test_sessions_expire_out_of_the_table(client, monkeypatch):
    from chalicelib.adapters.sqlite import db as dbmodule
    from chalicelib import wiring as registry
    from tests.dashboard_client import DashboardClient

    DashboardClient(client).sign_up()
    db = registry.default_context().documents.db
    with db.write_only() as tx:
        tx.execute("UPDATE sessions SET expires_ms = 1, expires_at = 1")
        tx.execute("INSERT INTO sessions (session_hash, email, workspace_id, created_ms, expires_ms, expires_at) "
                   "SELECT 'live', email, workspace_id, created_ms, ?, ? FROM sessions",
                   (2 ** 50, 2 ** 40))
    monkeypatch.setattr(dbmodule, "SWEEP_INTERVAL_SECONDS", 0)  # the next write sweeps
    DashboardClient(client).sign_up(email="second@example.com")
    hashes = [r["session_hash"] for r in db.all("SELECT session_hash FROM sessions")]
    assert "live" in hashes and len(hashes) <= 2  # the expired one went; the live ones stay


def test_writes_sweep_at_most_every_interval(services, storage, monkeypatch):
    from chalicelib.adapters.sqlite import db as dbmodule

    db = services.workspaces.ctx.documents.db
    calls = []
    monkeypatch.setattr(db, "purge_expired", lambda now_ms: calls.append(now_ms) or {})
    monkeypatch.setattr(db, "_last_sweep", 0.0)
    services.workspaces.create_workspace("A", "free")
    services.workspaces.create_workspace("B", "free")
    assert len(calls) == 1  # the second write came within SWEEP_INTERVAL_SECONDS
    assert dbmodule.SWEEP_INTERVAL_SECONDS <= 3600


@pytest.mark.parametrize("storage", ["aws"], indirect=True)
def test_dynamodb_items_that_expire_carry_the_ttl_attribute(client, workspace, storage):
    from chalicelib.adapters.aws.table import Table, from_item
    from chalicelib.adapters.aws import clients as aws

    _, key = workspace
    r = post_json(client, "/api/v1/publish", {"title": "T", "html": "<p>x</p>"}, key,
                  headers={"Idempotency-Key": "once"})
    assert r.status_code == 200
    items = [from_item(i) for i in aws.dynamodb().scan(TableName=Table().name)["Items"]]
    expiring = [i for i in items if i["PK"].startswith(("IDEM#", "RATE#", "SESSION#", "OAUTHCODE#",
                                                        "ATOKEN#", "RTOKEN#"))]
    assert {i["PK"].split("#", 1)[0] for i in expiring} >= {"IDEM", "RATE"}
    assert all(isinstance(i.get("expires_at"), (int, float)) and i["expires_at"] > 0 for i in expiring), expiring
    ttl = aws.dynamodb().describe_time_to_live(TableName=Table().name)["TimeToLiveDescription"]
    assert ttl.get("AttributeName") == "expires_at"
