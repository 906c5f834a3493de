"""AWS round trips per operation (issue 10): a regression here fails CI.

Counts come from botocore `before-call` hooks on the app's cached clients
(bench/aws_calls.py runs the same scenario and prints the table)."""
from __future__ import annotations

import pytest

from bench._common import count_aws_calls
from bench.aws_calls import TARGETS, has_share_routes, run_operations

pytestmark = pytest.mark.aws  # DynamoDB/S3 round trips

# Operations without a target in the issue: today's counts, so a regression shows.
# Delete: 6, plus one Query per registered delete hook (feedback, views).
# PATCH answers the document as GET does, view counters included.
CURRENT = {"publish replay (same Idempotency-Key)": 1, "update (PATCH)": 4, "delete": 8}


@pytest.fixture(autouse=True)
def signing_key_recorded(client):
    """Signed versions (contract 7g): a process reads the signing keys with its first signature,
    and the first signature of a new key records it (docs/provenance.md): once, not per write."""
    from chalicelib import wiring
    from chalicelib.services import provenance

    provenance.current_signer(wiring.default_context())


@pytest.fixture
def measured(client, workspace):
    from app import app

    _, key = workspace
    return run_operations(client.http, key, app)


def test_round_trip_targets(measured):
    for name, target in {**TARGETS, **CURRENT}.items():
        if target is None or name.startswith("share "):
            continue
        assert measured[name].count <= target, (name, measured[name].calls)


def test_exact_calls_of_the_hot_paths(measured):
    # A write reads the key with its write-log shards (one BatchGetItem, with the
    # document when there is one); a read authenticates with one Query of the key's
    # partition (key + shards). The second BatchGetItem of a write reads the workspace's
    # write-log shards (the sliding workspace limit, issue 24); the GetItem before it the
    # workspace's pending uploads (their declared sizes count against the quota, issue 33).
    assert measured["publish (new document)"].calls == [
        "dynamodb.BatchGetItem", "dynamodb.GetItem", "dynamodb.BatchGetItem", "s3.PutObject",
        "dynamodb.TransactWriteItems"]
    assert measured["publish (new version)"].calls == [
        "dynamodb.BatchGetItem", "dynamodb.GetItem", "dynamodb.BatchGetItem", "s3.PutObject",
        "dynamodb.TransactWriteItems"]
    # The last Query reads the view counters (views_total, last_viewed_at).
    assert measured["get without html"].calls == ["dynamodb.Query", "dynamodb.Query", "dynamodb.Query"]
    assert measured["get with html"].calls == ["dynamodb.Query", "dynamodb.Query", "s3.GetObject",
                                               "dynamodb.Query"]
    assert measured["edit"].calls == [
        "dynamodb.BatchGetItem", "s3.GetObject", "dynamodb.GetItem", "dynamodb.BatchGetItem", "s3.PutObject",
        "dynamodb.TransactWriteItems"]


def test_share_view_of_unprotected_document(measured):
    from app import app

    if not has_share_routes(app):
        pytest.skip("no /d/ share routes on this branch yet")
    for name in ("share view (unprotected)", "share view (again)", "share content (version HTML)",
                 "share content, If-None-Match (304)"):
        if name in measured or not name.startswith("share content"):
            assert measured[name].count <= TARGETS[name], (name, measured[name].calls)
    if "share content, If-None-Match (304)" in measured:
        assert not any(c.startswith("s3.") for c in measured["share content, If-None-Match (304)"].calls)


def test_counter_sees_every_call(client, workspace):
    """The hook counts real calls (guards against a counter that always says 0)."""
    from chalicelib.adapters.aws import clients as aws

    with count_aws_calls() as log:
        aws.dynamodb().list_tables()
        aws.s3().list_buckets()
    assert log.calls == ["dynamodb.ListTables", "s3.ListBuckets"]


def test_delete_finishes_an_interrupted_delete_in_one_read(client, workspace, services):
    """Delete reads key + document in one BatchGetItem, and still finds a
    document whose earlier delete stopped half-way."""
    import json

    from tests.helpers import post_json

    _, key = workspace
    doc = json.loads(post_json(client, "/api/v1/publish", {"title": "T", "html": "<p>x</p>"}, key).body)
    stored = services.documents.ctx.documents.get(doc["document_id"])
    services.documents.ctx.documents.begin_delete(stored)  # step 1 only, as after a crash
    with count_aws_calls() as log:
        r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key})
    assert r.status_code == 204
    assert log.calls[0] == "dynamodb.BatchGetItem" and "dynamodb.GetItem" not in log.calls
    r = client.http.get(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key})
    assert r.status_code == 404
    assert services.documents.ctx.documents.get(doc["document_id"]) is None


def test_a_members_key_reads_its_creators_membership_once(client, workspace):
    """Keys follow their creator (issue 33): a key a member made costs one GetItem more
    (the membership, read after the key), on a read and on a write; nothing else changes."""
    import json

    from chalicelib import wiring
    from chalicelib.ports.records import Member, User
    from chalicelib.services.access import Actor

    ws, _ = workspace
    ctx = wiring.workspaces().ctx
    ctx.users.create(User(email="ed@x.io", password_hash="x", workspace_id=ws.id, role="editor", created_ms=1,
                          password_changed_ms=1))
    ctx.people.add_member(Member(ws.id, "ed@x.io", "editor", 1))
    wiring.workspaces().set_plan(ws.id, "pro")
    made = wiring.workspaces().create_key(ws.id, "ci", by=Actor(ws.id, role="editor", member="ed@x.io",
                                                                surface="dashboard"))
    headers = {"X-Api-Key": made.api_key, "Content-Type": "application/json"}
    with count_aws_calls() as log:
        assert client.http.get("/api/v1/me", headers=headers).status_code == 200
    # key, member, workspace, its pending uploads
    assert log.calls == ["dynamodb.Query", "dynamodb.GetItem", "dynamodb.GetItem", "dynamodb.GetItem"]
    with count_aws_calls() as log:
        answer = client.http.post("/api/v1/publish", headers=headers,
                                  body=json.dumps({"title": "T", "html": "<p>t</p>"}))
    assert answer.status_code == 200, answer.body
    assert log.calls == ["dynamodb.BatchGetItem", "dynamodb.GetItem", "dynamodb.GetItem", "dynamodb.BatchGetItem",
                         "s3.PutObject", "dynamodb.TransactWriteItems"]  # key, member, pending uploads, ...
