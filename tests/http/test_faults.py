"""Fault injection: storage failures become clean, retryable answers and lose nothing.

For each fault: the client gets the contract's error body (503
`service_unavailable` with `Retry-After`), no half-written version is ever
visible, a retry succeeds, and any S3 object left behind is swept.
"""
from __future__ import annotations

import json
import time

import pytest

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.models import ErrorBody
from tests.faults import Faults

pytestmark = pytest.mark.aws  # botocore faults: the DynamoDB + S3 adapter

HTML = "<h1>Report</h1><p>Draft</p>"


@pytest.fixture
def faults(monkeypatch):
    # Retries happen for real (botocore's standard mode); only the backoff sleep is skipped.
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)
    from chalicelib.adapters.aws.table import RETRY

    monkeypatch.setattr(RETRY, "sleep", lambda _s: None)
    injected = Faults()
    yield injected
    injected.clear()


@pytest.fixture
def key(services):
    _, created = services.workspaces.create_workspace("Faulty", "pro")
    return created.api_key


def call(client, method, path, key, body=None, headers=None):
    h = {"X-Api-Key": key, **(headers or {})}
    if body is not None:
        h["Content-Type"] = "application/json"
    r = client.http.request(method, path, headers=h, body=json.dumps(body) if body is not None else b"")
    r.json = json.loads(r.body) if r.body else None
    return r


def publish(client, key, **body):
    return call(client, "POST", "/api/v1/publish", key, {"title": "Report", "html": HTML, **body})


def objects() -> list[str]:
    listed = aws.s3().list_objects_v2(Bucket=config.bucket_name())
    return sorted(o["Key"] for o in listed.get("Contents", []))


def assert_unavailable(r):
    assert r.status_code == 503, r.body
    error = ErrorBody.model_validate_json(r.body).error
    assert error.code == "service_unavailable"
    assert int(r.headers["Retry-After"]) >= 1
    assert "Traceback" not in r.body.decode()


def documents(client, key) -> list[dict]:
    r = call(client, "GET", "/api/v1/documents", key)
    assert r.status_code == 200
    return r.json["documents"]


def html_of(client, key, document_id, version_id=None) -> str:
    path = f"/api/v1/documents/{document_id}?include_html=true"
    if version_id:
        path += f"&version_id={version_id}"
    r = call(client, "GET", path, key)
    assert r.status_code == 200, r.body
    return r.json["html"]


def every_version_readable(client, key, document_id) -> list[int]:
    r = call(client, "GET", f"/api/v1/documents/{document_id}", key)
    assert r.status_code == 200, r.body
    for v in r.json["versions"]:
        html_of(client, key, document_id, v["version_id"])
    return [v["number"] for v in r.json["versions"]]


# ------------------------------------------------------------------ S3 put fails

def test_s3_put_failure_is_503_nothing_visible_and_a_retry_succeeds(client, key, faults):
    fault = faults.fail("s3", "PutObject", "InternalError", 500)
    r = publish(client, key)
    assert_unavailable(r)
    assert fault.calls == 3, "standard retry mode: exactly max_attempts tries"
    assert documents(client, key) == []
    assert call(client, "GET", "/api/v1/me", key).json["workspace"]["document_count"] == 0
    assert objects() == []

    faults.clear()
    r = publish(client, key)
    assert r.status_code == 200, r.body
    assert html_of(client, key, r.json["document_id"]) == HTML


def test_s3_put_failure_during_edit_keeps_the_document_as_it_was(client, key, faults):
    doc = publish(client, key).json
    faults.fail("s3", "PutObject", "SlowDown", 503)
    edit = {"edits": [{"old_string": "Draft", "new_string": "Final"}]}
    assert_unavailable(call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", key, edit))
    assert every_version_readable(client, key, doc["document_id"]) == [1]
    assert html_of(client, key, doc["document_id"]) == HTML
    faults.clear()
    r = call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", key, edit)
    assert r.status_code == 200, r.body
    assert html_of(client, key, doc["document_id"]) == HTML.replace("Draft", "Final")


# ------------------------------------------------------------------ the transaction fails after the S3 put

def test_a_refused_transaction_after_the_put_discards_the_object(client, key, faults):
    reasons = {"CancellationReasons": [{"Code": "ThrottlingError", "Message": "Throughput exceeds"}]
               + [{"Code": "None"}] * 3}
    fault = faults.fail("dynamodb", "TransactWriteItems", "TransactionCanceledException", 400, extra=reasons)
    assert_unavailable(publish(client, key))
    from chalicelib.adapters.aws.table import RETRY

    # a cancellation is an answer botocore does not retry: the adapter retries a
    # busy one (bounded, with backoff and the same token), then refuses for sure
    assert fault.calls == RETRY.attempts
    assert documents(client, key) == []
    assert objects() == []  # refused for sure: the object went at once
    faults.clear()
    r = publish(client, key)
    assert r.status_code == 200
    assert every_version_readable(client, key, r.json["document_id"]) == [1]


@pytest.mark.parametrize("code,status", [("InternalServerError", 500), ("ServiceUnavailable", 503),
                                         ("ThrottlingException", 400)])
def test_a_failed_transaction_leaves_nothing_visible_and_its_object_is_swept(
        client, key, faults, ctx, clock, code, status):
    from chalicelib.services.maintenance import GRACE_SECONDS, sweep_orphans

    fault = faults.fail("dynamodb", "TransactWriteItems", code, status)
    assert_unavailable(publish(client, key))
    assert fault.calls == 3, "standard retry mode: exactly 3 tries"
    assert documents(client, key) == []
    assert call(client, "GET", "/api/v1/me", key).json["workspace"]["document_count"] == 0
    # After retries botocore cannot say whether an early attempt committed: the object
    # stays (invisible) until the sweep sees that no version refers to it.
    [orphan] = objects()
    faults.clear()
    r = publish(client, key)
    assert r.status_code == 200
    assert every_version_readable(client, key, r.json["document_id"]) == [1]
    clock.now = time.time() + GRACE_SECONDS + 60
    assert sweep_orphans(ctx)["deleted"] == 1
    assert orphan not in objects() and len(objects()) == 1
    assert every_version_readable(client, key, r.json["document_id"]) == [1]


def test_transaction_retries_carry_one_client_request_token(client, key, faults):
    tokens = []

    def record(request, **_kwargs):
        tokens.append(json.loads(request.body)["ClientRequestToken"])

    events = aws.dynamodb().meta.events
    events.register_first("before-send.dynamodb.TransactWriteItems", record)
    try:
        faults.fail("dynamodb", "TransactWriteItems", "InternalServerError", 500, times=2)
        assert publish(client, key).status_code == 200
        assert publish(client, key).status_code == 200
    finally:
        events.unregister("before-send.dynamodb.TransactWriteItems", record)
    assert len(tokens) == 4
    assert tokens[0] == tokens[1] == tokens[2] != tokens[3]


def test_transaction_failure_during_edit_creates_no_version(client, key, faults):
    doc = publish(client, key).json
    faults.fail("dynamodb", "TransactWriteItems", "InternalServerError", 500)
    edit = {"edits": [{"old_string": "Draft", "new_string": "Final"}]}
    assert_unavailable(call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", key, edit))
    assert every_version_readable(client, key, doc["document_id"]) == [1]
    assert html_of(client, key, doc["document_id"]) == HTML
    faults.clear()
    assert call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", key, edit).status_code == 200
    assert every_version_readable(client, key, doc["document_id"]) == [1, 2]
    assert html_of(client, key, doc["document_id"]) == HTML.replace("Draft", "Final")


def test_a_timeout_that_hides_a_commit_loses_nothing(client, key, faults):
    """The transaction commits but the answer never arrives: the service reads
    what is true and answers the commit (issue 15: never a 503 for a write that
    happened); the HTML stays; an Idempotency-Key retry returns the same answer."""
    faults.timeout_after_success("dynamodb", "TransactWriteItems")
    r = call(client, "POST", "/api/v1/publish", key, {"title": "Report", "html": HTML},
             {"Idempotency-Key": "try-1"})
    assert r.status_code == 200, r.body
    [doc] = documents(client, key)  # it did commit
    assert doc["document_id"] == r.json["document_id"]
    assert html_of(client, key, doc["document_id"]) == HTML
    retry = call(client, "POST", "/api/v1/publish", key, {"title": "Report", "html": HTML},
                 {"Idempotency-Key": "try-1"})
    assert retry.status_code == 200, retry.body
    assert retry.json["document_id"] == doc["document_id"]
    assert len(documents(client, key)) == 1

    # Same for an edit.
    faults.timeout_after_success("dynamodb", "TransactWriteItems")
    edit = {"edits": [{"old_string": "Draft", "new_string": "Final"}]}
    assert call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", key, edit).status_code == 200
    assert every_version_readable(client, key, doc["document_id"]) == [1, 2]
    assert html_of(client, key, doc["document_id"]) == HTML.replace("Draft", "Final")


def test_an_object_whose_cleanup_failed_too_is_swept(client, key, faults, ctx, clock):
    from chalicelib.services.maintenance import GRACE_SECONDS, sweep_orphans

    kept = publish(client, key).json
    reasons = {"CancellationReasons": [{"Code": "ThrottlingError"}] + [{"Code": "None"}] * 3}
    faults.fail("dynamodb", "TransactWriteItems", "TransactionCanceledException", 400, extra=reasons)
    faults.fail("s3", "DeleteObject", "InternalError", 500)
    assert_unavailable(publish(client, key, title="Lost"))
    faults.clear()
    assert len(objects()) == 2  # the kept document's version + the orphan
    assert [d["title"] for d in documents(client, key)] == ["Report"]

    clock.now = time.time() + 60  # inside the grace period: a write may still be in flight
    assert sweep_orphans(ctx)["deleted"] == 0
    clock.now = time.time() + GRACE_SECONDS + 60
    assert sweep_orphans(ctx) == {"checked": 2, "deleted": 1, "deletes_finished": 0, "files_deleted": 0, "uploads_deleted": 0, "downloads_deleted": 0,
                               "cdn": {"pending": 0, "invalidated": 0}}
    assert len(objects()) == 1
    assert html_of(client, key, kept["document_id"]) == HTML


# ------------------------------------------------------------------ DynamoDB throttles

def test_transient_throttling_is_absorbed_by_retries(client, key, faults):
    doc = publish(client, key).json
    fault = faults.fail("dynamodb", "Query", "ProvisionedThroughputExceededException", 400, times=2)
    r = call(client, "GET", f"/api/v1/documents/{doc['document_id']}", key)
    assert r.status_code == 200, r.body
    assert fault.injected == 2
    # the key's Query (key + write-log shards) 3 times (2 throttled), then the
    # document's Query and the view counters' Query
    assert fault.calls == 5


@pytest.mark.parametrize("operation,code", [
    ("GetItem", "ThrottlingException"),
    ("BatchGetItem", "ProvisionedThroughputExceededException"),
    ("Query", "RequestLimitExceeded"),
])
def test_persistent_throttling_is_503_with_retry_after(client, key, faults, operation, code):
    doc = publish(client, key).json
    faults.fail("dynamodb", operation, code, 400)
    paths = {"GetItem": ("GET", "/api/v1/me", None),
             "BatchGetItem": ("POST", f"/api/v1/documents/{doc['document_id']}/edit",
                              {"edits": [{"old_string": "Draft", "new_string": "Final"}]}),
             "Query": ("GET", "/api/v1/documents", None)}
    method, path, body = paths[operation]
    assert_unavailable(call(client, method, path, key, body))
    faults.clear()
    assert call(client, method, path, key, body).status_code == 200


# ------------------------------------------------------------------ a Lambda cut off mid-delete

class LambdaCutOff(BaseException):
    """The function's time ran out: no response, no except clause runs."""


def _cut_after(monkeypatch, cls, name):
    original = getattr(cls, name)

    def then_die(self, *args, **kwargs):
        original(self, *args, **kwargs)
        raise LambdaCutOff()

    monkeypatch.setattr(cls, name, then_die)


@pytest.mark.parametrize("step", ["begin_delete", "delete_prefix"])
def test_a_delete_cut_off_half_way_is_invisible_and_a_retry_finishes_it(client, key, monkeypatch, step):
    from chalicelib.adapters.aws.blobs import BlobStore
    from chalicelib.adapters.aws.documents import DocumentRepository
    from chalicelib.adapters.aws.table import Table

    doc = publish(client, key).json
    publish(client, key, document_id=doc["document_id"], html="<p>v2</p>")
    other = publish(client, key, title="Other").json
    _cut_after(monkeypatch, DocumentRepository if step == "begin_delete" else BlobStore, step)
    with pytest.raises(LambdaCutOff):
        call(client, "DELETE", f"/api/v1/documents/{doc['document_id']}", key)
    monkeypatch.undo()

    # Nothing of it is visible, and its place in the plan count is free already.
    assert call(client, "GET", f"/api/v1/documents/{doc['document_id']}", key).status_code == 404
    assert [d["document_id"] for d in documents(client, key)] == [other["document_id"]]
    assert call(client, "GET", "/api/v1/me", key).json["workspace"]["document_count"] == 1
    edit = {"edits": [{"old_string": "v2", "new_string": "v3"}]}
    assert call(client, "POST", f"/api/v1/documents/{doc['document_id']}/edit", key, edit).status_code == 404

    r = call(client, "DELETE", f"/api/v1/documents/{doc['document_id']}", key)
    assert r.status_code == 204, r.body
    assert all(doc["document_id"] not in o for o in objects())
    items = Table().query_all("PK = :pk", {":pk": f"DOC#{doc['document_id']}"}, consistent=True)
    assert items == []
    assert call(client, "GET", "/api/v1/me", key).json["workspace"]["document_count"] == 1
    assert html_of(client, key, other["document_id"]) == HTML


def test_an_abandoned_delete_is_finished_by_the_sweep(client, key, monkeypatch, ctx, clock):
    from chalicelib.adapters.aws.documents import DocumentRepository
    from chalicelib.adapters.aws.table import Table
    from chalicelib.services.maintenance import sweep_orphans

    doc = publish(client, key).json
    other = publish(client, key, title="Other").json
    _cut_after(monkeypatch, DocumentRepository, "begin_delete")
    with pytest.raises(LambdaCutOff):
        call(client, "DELETE", f"/api/v1/documents/{doc['document_id']}", key)
    monkeypatch.undo()
    # The client never retries. The sweep finishes the job.
    clock.now = time.time()
    result = sweep_orphans(ctx)
    assert result["deletes_finished"] == 1
    assert all(doc["document_id"] not in o for o in objects())
    assert Table().query_all("PK = :pk", {":pk": f"DOC#{doc['document_id']}"}, consistent=True) == []
    assert html_of(client, key, other["document_id"]) == HTML


def test_a_publish_cut_off_between_put_and_transaction_leaves_only_a_sweepable_object(
        client, key, monkeypatch, ctx, clock):
    from chalicelib.adapters.aws.documents import DocumentRepository
    from chalicelib.services.maintenance import GRACE_SECONDS, sweep_orphans

    def die(self, *args, **kwargs):
        raise LambdaCutOff()

    monkeypatch.setattr(DocumentRepository, "create", die)
    with pytest.raises(LambdaCutOff):
        publish(client, key)
    monkeypatch.undo()
    assert documents(client, key) == [] and len(objects()) == 1
    clock.now = time.time() + GRACE_SECONDS + 1
    assert sweep_orphans(ctx)["deleted"] == 1
    assert objects() == []


# ------------------------------------------------------------------ retry configuration

def test_botocore_retries_are_deliberate_and_fit_inside_the_lambda_timeout():
    from pathlib import Path

    lambda_timeout = json.loads((Path(__file__).resolve().parents[2] / ".chalice" / "config.json")
                                .read_text())["lambda_timeout"]
    assert aws.LAMBDA_TIMEOUT_SECONDS == lambda_timeout
    for service, client in (("dynamodb", aws.dynamodb()), ("s3", aws.s3())):
        cfg = client.meta.config
        profile = aws.PROFILES[service]
        assert cfg.retries == {"mode": "standard", "total_max_attempts": profile.max_attempts}
        assert (cfg.connect_timeout, cfg.read_timeout) == (profile.connect_timeout, profile.read_timeout)
        assert 2 <= profile.max_attempts <= 3
        # One call, every attempt timing out, plus the longest backoffs, ends well before Lambda does.
        assert profile.worst_case_seconds() < lambda_timeout * 0.75, service
