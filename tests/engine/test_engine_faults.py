"""What only the real DynamoDB service sends, on DynamoDB Local (make test-aws).

Injected with botocore hooks (tests/faults.py, the same injector the moto tests use): transaction conflicts and
throttling are retried with jittered backoff, a bounded number of times, with
the same ClientRequestToken, then answer 503 with Retry-After; unprocessed batch
items are retried with backoff and a bound instead of looping forever. Before
the fix a conflict answered 503 at once (4 of 12 sequential edits in the probe)
and unprocessed items looped with no pause and no end.
"""
from __future__ import annotations

import json

import pytest

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.adapters.aws import table as table_module
from chalicelib.models import EditOperation, EditRequest, PublishRequest
from chalicelib.ports import StorageUnavailable
from chalicelib.services.auth import credentials_from_key
from chalicelib.wiring import new_context
from chalicelib.services.documents import DocumentService
from chalicelib.services.workspaces import WorkspaceService
from tests.faults import Faults

pytestmark = [pytest.mark.aws, pytest.mark.aws_engine]

# Enough for an old loop with no bound to finish (so the test fails instead of hanging).
FAR_MORE_THAN_ANY_BOUND = 60


@pytest.fixture
def pauses(monkeypatch):
    """Backoff pauses asked for (none really taken); botocore's own sleeps skipped too."""
    from botocore.retries import standard

    taken: list[float] = []
    getattr(table_module, "RETRY", None) and monkeypatch.setattr(table_module.RETRY, "sleep", taken.append)
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)
    return taken


@pytest.fixture
def faults():
    injected = Faults()
    yield injected
    injected.clear()


@pytest.fixture
def setup(storage, clock, pauses):
    ctx = new_context(clock=clock, sleep=lambda _s: None)
    _, key = WorkspaceService(ctx).create_workspace("Engine", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(ctx)
    first = documents.publish(who, PublishRequest(title="T", html="<main><!--end--></main>")).response
    return ctx, documents, who, first.document_id, key.api_key


def edit(documents, who, document_id, i=0):
    return documents.edit(who, document_id, EditRequest(edits=[EditOperation(
        old_string="<!--end-->", new_string=f"<p>e{i}</p><!--end-->")])).response


def test_the_tier_runs_on_dynamodb_local_and_s3rver(storage):
    assert aws.dynamodb().meta.endpoint_url.startswith("http://127.0.0.1:")
    assert aws.s3().meta.endpoint_url.startswith("http://127.0.0.1:")
    assert config.table_name() in aws.dynamodb().list_tables()["TableNames"]


def test_a_transaction_conflict_is_retried_with_the_same_token(setup, pauses, faults):
    ctx, documents, who, document_id, _ = setup
    hook = faults.conflict(times=3)
    response = edit(documents, who, document_id)
    assert response.version_number == 2
    assert hook.injected == 3 and hook.calls == 4
    assert len({c["ClientRequestToken"] for c in hook.bodies}) == 1  # one token for every attempt
    assert len(pauses) == 3 and all(p >= 0 for p in pauses)


def test_a_retry_of_a_committed_transaction_succeeds_on_its_token(setup, faults):
    """The engine honours ClientRequestToken (moto does not): the transaction
    commits, its answer is lost (a 500), botocore retries it with the same token,
    and DynamoDB Local answers success without applying it twice."""
    ctx, documents, who, document_id, _ = setup
    faults.commit_then_fail(times=1)
    assert edit(documents, who, document_id).version_number == 2
    doc, versions = ctx.documents.get_with_versions(document_id)
    assert doc.version_count == 2 and [v.number for v in versions] == [1, 2]


def test_throttling_inside_a_transaction_is_retried(setup, faults):
    """A hot partition cancels a transaction with ThrottlingError (botocore does not
    retry a cancellation; throttling of a whole call it retries itself, 3 tries)."""
    ctx, documents, who, document_id, _ = setup
    hook = faults.conflict(times=2, reason="ThrottlingError")
    assert edit(documents, who, document_id, 1).version_number == 2
    assert hook.injected == 2 and len({c["ClientRequestToken"] for c in hook.bodies}) == 1


def test_a_plain_write_that_meets_a_transaction_is_retried(setup, faults, clock):
    """UpdateItem on an item inside an ongoing transaction: TransactionConflictException."""
    ctx, documents, who, document_id, api_key = setup
    doc = ctx.documents.get(document_id)
    hook = faults.fail("dynamodb", "UpdateItem", "TransactionConflictException", 400, times=2)
    ctx.documents.update_fields(doc, {"title": "Renamed"})
    assert hook.calls == 3 and ctx.documents.get(document_id).title == "Renamed"


def test_conflicts_past_the_bound_answer_503_with_retry_after_and_store_nothing(setup, api, faults):
    ctx, documents, who, document_id, api_key = setup
    before = {o["Key"] for o in aws.s3().list_objects_v2(Bucket=config.bucket_name()).get("Contents", [])}
    hook = faults.conflict(times=FAR_MORE_THAN_ANY_BOUND)
    r = api.http.post(f"/api/v1/documents/{document_id}/edit",
                      headers={"X-Api-Key": api_key, "Content-Type": "application/json"},
                      body=json.dumps({"edits": [{"old_string": "<!--end-->", "new_string": "x<!--end-->"}]}))
    assert r.status_code == 503 and r.headers["Retry-After"] == "1"
    assert json.loads(r.body)["error"]["code"] == "service_unavailable"
    assert hook.calls == table_module.RETRY.attempts  # bounded, not 50 service-level rounds
    faults.clear()
    doc, versions = ctx.documents.get_with_versions(document_id)
    assert doc.version_count == 1 and len(versions) == 1
    after = {o["Key"] for o in aws.s3().list_objects_v2(Bucket=config.bucket_name()).get("Contents", [])}
    assert after == before  # the refused version's object was discarded


def test_unprocessed_batch_keys_are_retried_with_backoff(setup, pauses, faults):
    ctx, documents, who, document_id, _ = setup
    hook = faults.unprocessed("BatchGetItem", times=2)
    assert edit(documents, who, document_id).version_number == 2  # loads key + document in one batch
    assert hook.injected == 2 and len(pauses) >= 2


def test_unprocessed_batch_keys_past_the_bound_are_a_503_not_a_hang(setup, pauses, faults):
    ctx, documents, who, document_id, _ = setup
    hook = faults.unprocessed("BatchGetItem", times=FAR_MORE_THAN_ANY_BOUND)
    with pytest.raises(StorageUnavailable):
        edit(documents, who, document_id)
    assert hook.calls == table_module.RETRY.attempts
    assert len(pauses) == table_module.RETRY.attempts - 1


def test_unprocessed_batch_deletes_are_bounded_and_a_repeat_finishes(setup, pauses, faults):
    ctx, documents, who, document_id, _ = setup
    hook = faults.unprocessed("BatchWriteItem", times=FAR_MORE_THAN_ANY_BOUND)
    with pytest.raises(StorageUnavailable):
        documents.delete(who, document_id)
    assert hook.calls == table_module.RETRY.attempts
    faults.clear()
    documents.delete(who, document_id)  # a retried DELETE finishes the job
    assert ctx.documents.get_with_versions(document_id) == (None, [])


def test_busy_answers_all_the_way_still_end_inside_the_lambda_timeout():
    """Only busy answers are retried here (a timeout is not: it may hide a commit,
    and botocore already retried it). Each of our attempts may be botocore's own
    throttling retries with their longest backoff; all of it ends well before
    the function's timeout, as a clean 503 instead of API Gateway's 504."""
    from chalicelib.adapters.aws.clients import LAMBDA_TIMEOUT_SECONDS, PROFILES

    policy, profile = table_module.RETRY, PROFILES["dynamodb"]
    botocore_backoff = sum(min(20, 2 ** n) for n in range(profile.max_attempts - 1))
    worst = policy.attempts * botocore_backoff + policy.worst_case_seconds()
    assert worst < LAMBDA_TIMEOUT_SECONDS * 0.75, worst


def test_forty_concurrent_edits_through_one_key_under_its_limit_get_no_429(storage, clock, faults):
    """The probe: 40 concurrent edits through one key (under 60/60 s) lost the race
    for the key's one rate item, 2-4 answered 429, and it cost ~10 transactions per
    acknowledged edit (bench/hot_key.py). The log is sharded now (keys.WRITE_SHARDS):
    every edit is acknowledged, at a few transactions each."""
    from chalicelib.entrypoints.http import as_error
    from tests.helpers import run_together

    ctx = new_context(clock=clock)
    _, key = WorkspaceService(ctx).create_workspace("Hot", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(ctx)
    ids = [documents.publish(who, PublishRequest(title=f"D{i}", html="<main><!--end--></main>")).response.document_id
           for i in range(40)]
    clock.advance(61)
    counted = faults.fail("dynamodb", "TransactWriteItems", "unused", times=0)  # counts, injects nothing

    def one(i):
        try:
            return edit(documents, who, ids[i], i).version_number
        except Exception as exc:  # noqa: BLE001 - what the API would answer
            return as_error(exc).status

    results, failures = run_together([lambda i=i: one(i) for i in range(40)])
    assert failures == [] and results == [2] * 40, results
    assert counted.calls / 40 <= 5, counted.calls  # was ~10 per acknowledged edit
    assert len(ctx.keys.get(key.key_id).writes) == 40
