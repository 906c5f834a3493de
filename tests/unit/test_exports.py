"""The export service (contract 7g) on a Context: one running export per workspace (two
concurrent starts: one started, one 429), a stuck export stops blocking at its deadline,
owners only, unknown ids 404, the background runners (a thread locally, the worker's SQS
message deployed) and a build that fails."""
from __future__ import annotations

import io
import json
import zipfile
from urllib.parse import parse_qs, urlsplit

import pytest

from chalicelib.domain import limits
from chalicelib.errors import ForbiddenRole, NotFound, RateLimited, ServiceUnavailable
from chalicelib.models import PublishRequest
from chalicelib.services.access import Actor
from chalicelib.services.auth import credentials_from_key
from chalicelib.services.exports import ExportService
from tests.helpers import run_together

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


@pytest.fixture
def started(ctx):
    """Exports handed to the background, in order (built when the test says)."""
    handed: list[str] = []
    ctx.run_export = handed.append
    return handed


@pytest.fixture
def exports(ctx, started):
    return ExportService(ctx)


def _owner(workspace) -> object:
    return credentials_from_key(workspace[1])


def _zip(service: ExportService, who, export_id: str) -> zipfile.ZipFile:
    status = service.status(who, export_id)
    assert status.status == "ready", status
    query = parse_qs(urlsplit(status.download_url).query)
    return zipfile.ZipFile(io.BytesIO(service.read(service.download(export_id, query["until"][0], query["sig"][0]))))


@BOTH
def test_two_concurrent_starts_one_starts_one_is_429(ctx, storage, services, workspace, exports, started):
    who = _owner(workspace)
    results, failures = run_together([lambda: exports.start(who), lambda: exports.start(who)])
    assert len(results) == 1 and failures == ["RateLimited"]
    assert started == [results[0].export_id]
    with pytest.raises(RateLimited) as refused:
        exports.start(who)
    assert refused.value.status == 429 and refused.value.code == "rate_limited"
    assert refused.value.headers["Retry-After"] == str(limits.EXPORT_RETRY_SECONDS)
    assert refused.value.details == {"retry_after_seconds": limits.EXPORT_RETRY_SECONDS}
    assert results[0].export_id in refused.value.message
    # Once built, another may start.
    assert exports.build(started[0]).status == "ready"
    assert exports.start(who).export_id != results[0].export_id


def test_a_stuck_export_fails_at_its_deadline_and_frees_the_workspace(ctx, clock, services, workspace, exports,
                                                                       started):
    who = _owner(workspace)
    stuck = exports.start(who).export_id  # never built: its worker died
    clock.advance(limits.EXPORT_RUNNING_SECONDS - 1)
    assert exports.status(who, stuck).status == "running"
    with pytest.raises(RateLimited) as refused:
        exports.start(who)
    assert refused.value.retry_after_seconds == 1  # the deadline is a second away
    clock.advance(1)
    assert exports.status(who, stuck).status == "failed"
    fresh = exports.start(who).export_id
    # The dead build, run late, changes nothing: it is no longer running.
    assert exports.build(stuck).status == "running"
    assert exports.status(who, stuck).status == "failed"
    assert exports.build(fresh).status == "ready"


def test_a_build_that_outlives_its_deadline_fails(ctx, clock, services, workspace, exports, started):
    who = _owner(workspace)
    services.documents.publish(who, PublishRequest(title="A", html="<p>a</p>"))
    export_id = exports.start(who).export_id
    reads = ctx.documents.get_with_versions

    def slow(document_id):  # the clock passes the deadline while the zip is being written
        clock.advance(limits.EXPORT_RUNNING_SECONDS)
        return reads(document_id)

    ctx.documents.get_with_versions = slow
    finished = exports.build(export_id)
    assert finished.status == "failed" and finished.error == "TimeoutError"
    assert exports.status(who, export_id).status == "failed"
    assert ctx.blobs.list_keys("exports/") == []  # nothing half-written is left


def test_owners_only_and_unknown_ids_are_404(ctx, services, workspace, exports):
    who = _owner(workspace)
    ws_id = services.workspaces.authenticate(who).workspace_id
    for role in ("editor", "viewer"):
        with pytest.raises(ForbiddenRole):
            exports.start(Actor(ws_id, role=role, member=f"{role}@example.com"))
    export_id = exports.start(who).export_id
    with pytest.raises(ForbiddenRole):
        exports.status(Actor(ws_id, role="editor", member="editor@example.com"), export_id)
    for unknown in ("exp_zzzzzzzzzzzzzzzz", "nope", "exp_" + "a" * 3000, ""):
        with pytest.raises(NotFound):
            exports.status(who, unknown)
    other_ws, other_key = services.workspaces.create_workspace("Other", "free")
    with pytest.raises(NotFound):  # another workspace's export is unknown here
        exports.status(credentials_from_key(other_key.api_key), export_id)


def test_a_ready_export_answers_for_an_hour_then_404(ctx, clock, services, workspace, exports, started):
    who = _owner(workspace)
    export_id = exports.start(who).export_id
    exports.build(export_id)
    ready = exports.status(who, export_id)
    query = parse_qs(urlsplit(ready.download_url).query)
    assert exports.download(export_id, query["until"][0], query["sig"][0])
    for until, sig in ((query["until"][0], "forged"), (str(int(query["until"][0]) + 1), query["sig"][0]),
                       ("x", query["sig"][0])):
        with pytest.raises(NotFound):
            exports.download(export_id, until, sig)
    clock.advance(limits.EXPORT_AVAILABLE_SECONDS)
    with pytest.raises(NotFound):
        exports.status(who, export_id)
    with pytest.raises(NotFound):
        exports.download(export_id, query["until"][0], query["sig"][0])


def test_a_start_the_background_refuses_fails_at_once(ctx, services, workspace, exports):
    def refused(export_id):
        raise ConnectionError("queue unreachable")

    ctx.run_export = refused
    who = _owner(workspace)
    with pytest.raises(ServiceUnavailable):
        exports.start(who)
    exports_ctx = ctx.exports
    ctx.run_export = lambda export_id: None
    started = exports.start(who).export_id  # the failed one holds nothing
    assert exports_ctx.get(started).status == "running"


def test_locally_a_thread_builds_it(ctx, services, workspace):
    from chalicelib import wiring

    who = _owner(workspace)
    services.documents.publish(who, PublishRequest(title="A", html="<p>a</p>"))
    threads = []
    ctx.run_export = lambda export_id: threads.append(wiring.export_in_thread(export_id))
    service = ExportService(ctx)
    original = wiring.exports
    wiring.exports = lambda: service  # the thread asks the composition root for the service
    try:
        export_id = service.start(who).export_id
        threads[0].join(30)
    finally:
        wiring.exports = original
    archive = _zip(service, who, export_id)
    assert json.loads(archive.read("manifest.json"))["counts"]["documents"] == 1


@pytest.mark.aws
def test_deployed_the_worker_builds_it_from_its_queue_message(ctx, services, workspace, monkeypatch):
    """POST sends `{"kind": "export"}` to the worker's queue; the worker's handler builds it."""
    from chalicelib import wiring
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.entrypoints import worker

    queue = aws.sqs().create_queue(QueueName="webhooks")["QueueUrl"]
    monkeypatch.setenv("DOCPUB_WEBHOOK_QUEUE_URL", queue)
    ctx.run_export = wiring.build_export_runner()
    service = ExportService(ctx)
    who = _owner(workspace)
    export_id = service.start(who).export_id
    messages = aws.sqs().receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"]) for m in messages] == [{"kind": "export", "export_id": export_id}]
    monkeypatch.setattr(wiring, "exports", lambda: service)
    monkeypatch.setattr(wiring, "webhooks", lambda: type("Idle", (), {"run_once": lambda self: (0, 0)})())
    assert worker.handle({"Records": [{"body": m["Body"]} for m in messages] + [{"body": '{"kind":"outbox"}'}]},
                         None) == {"rounds": 1}
    ready = service.status(who, export_id)
    assert ready.status == "ready" and "X-Amz-Signature=" in ready.download_url
