"""Edge coherence (issue 19): what every share answer tells caches, what every
withdrawal asks the CDN to drop, and what happens when the CDN does not answer.

The CloudFront adapter is checked against botocore's Stubber (the exact request);
the service rules with a recording CDN (tests/http/test_link_lifecycle.py's fixtures).
"""
from __future__ import annotations

import json
import logging

import pytest
from botocore.stub import ANY, Stubber

from chalicelib.entrypoints.share import CONTENT_REVISION
from tests.helpers import post_json
from tests.sharing_helpers import cookie_of, set_passphrase, unlock
from tests.http.test_link_lifecycle import (  # noqa: F401 - fixtures
    HOUR, RecordingCdn, app, at, cdn, content, key, patch, publish, rotate, wrapper,
)

# argon2 with cheap parameters (tests/conftest.py fast_argon2): every unlock and sign-in here
# verifies a hash (0.25-0.4 s each with the production ones);
# test_passphrase.py::test_passwords_and_passphrases_hash_with_production_parameters_by_default
# holds the production parameters.
pytestmark = pytest.mark.usefixtures("fast_argon2")


def paths_for(doc) -> list[str]:
    return [f"/d/{doc['share_id']}*"]


def delete(app, key, document_id):
    return app.http.delete(f"/api/v1/documents/{document_id}", headers={"X-Api-Key": key})


# ------------------------------------------------------------------ each withdrawal, exactly once

def test_delete_invalidates_the_link(app, key, cdn):
    doc = publish(app, key)
    assert cdn.calls == []
    assert delete(app, key, doc["document_id"]).status_code == 204
    assert cdn.calls == [paths_for(doc)]


def test_setting_or_changing_a_passphrase_invalidates_removing_it_does_not(app, key, cdn):
    doc = publish(app, key)
    assert set_passphrase(app, key, doc["document_id"], "correct horse battery").status_code == 204
    assert set_passphrase(app, key, doc["document_id"], "another horse battery").status_code == 204
    assert cdn.calls == [paths_for(doc), paths_for(doc)]
    r = app.http.delete(f"/api/v1/documents/{doc['document_id']}/passphrase", headers={"X-Api-Key": key})
    assert r.status_code == 204
    assert len(cdn.calls) == 2  # widening access: nothing cached is wrong


def test_disabling_invalidates_enabling_does_not(app, key, cdn):
    doc = publish(app, key)
    patch(app, key, doc["document_id"], {"share_enabled": False})
    assert cdn.calls == [paths_for(doc)]
    patch(app, key, doc["document_id"], {"share_enabled": False})  # already off: nothing new to drop
    patch(app, key, doc["document_id"], {"share_enabled": True})
    assert cdn.calls == [paths_for(doc)]
    publish(app, key, document_id=doc["document_id"], share_enabled=False)  # through publish too
    assert cdn.calls == [paths_for(doc), paths_for(doc)]


def test_rotate_invalidates_the_old_link_only(app, key, cdn):
    doc = publish(app, key)
    new_url = json.loads(rotate(app, key, doc["document_id"]).body)["share_url"]
    assert cdn.calls == [paths_for(doc)]
    assert new_url.rsplit("/", 1)[1] not in json.dumps(cdn.calls)


def test_an_expiry_sooner_than_the_edge_ttl_invalidates_a_later_one_needs_nothing(app, key, cdn, clock):
    doc = publish(app, key)
    patch(app, key, doc["document_id"], {"share_expires_at": at(clock, 7 * 24 * HOUR)})
    patch(app, key, doc["document_id"], {"share_expires_at": at(clock, HOUR)})  # earlier, still > 60 s
    patch(app, key, doc["document_id"], {"share_expires_at": None})
    assert cdn.calls == []  # answers cached now die within 60 s, before any of these expiries
    patch(app, key, doc["document_id"], {"share_expires_at": at(clock, 30)})
    assert cdn.calls == [paths_for(doc)]  # a copy cached a moment ago could outlive this one


def test_changes_that_withdraw_nothing_invalidate_nothing(app, key, cdn):
    doc = publish(app, key)
    publish(app, key, document_id=doc["document_id"], html="<p>v2</p>")  # new content URL, wrapper 60 s
    r = post_json(app, f"/api/v1/documents/{doc['document_id']}/edit",
                  {"edits": [{"old_string": "v2", "new_string": "v3"}]}, key)
    assert r.status_code == 200
    patch(app, key, doc["document_id"], {"title": "Renamed", "description": "d"})
    wrapper(app, doc)
    content(app, doc)
    assert cdn.calls == []


# ------------------------------------------------------------------ failures never fail the API call

class BrokenCdn:
    def __init__(self):
        self.calls = 0

    def invalidate(self, paths):
        self.calls += 1
        raise RuntimeError("TooManyInvalidationsInProgress: slow down")


@pytest.fixture
def broken(app):
    cdn = BrokenCdn()
    app.context.cdn = cdn
    return cdn


def test_a_failed_invalidation_is_recorded_logged_and_retried(app, key, broken, clock, caplog):
    from chalicelib.services import cdn as cdn_service

    a, b = publish(app, key), publish(app, key)
    with caplog.at_level(logging.WARNING, logger="docpub"):
        assert delete(app, key, a["document_id"]).status_code == 204  # the API call succeeds
        clock.advance(5)
        assert patch(app, key, b["document_id"], {"share_enabled": False}).status_code == 200
    assert broken.calls == 2
    assert [r.getMessage() for r in caplog.records].count("cdn invalidation failed; kept for retry") == 2
    assert wrapper(app, a).status_code == 404 and wrapper(app, b).status_code == 404  # the origin is right
    pending = cdn_service.pending(app.context)
    assert [(p.path, p.reason, p.attempts) for p in pending] == [
        (paths_for(a)[0], "delete", 1), (paths_for(b)[0], "link settings", 1)]
    assert "TooManyInvalidationsInProgress" in pending[0].last_error

    # Still failing: kept, attempts counted, first seen time kept.
    assert cdn_service.retry_pending(app.context)["invalidated"] == 0
    again = cdn_service.pending(app.context)
    assert [p.attempts for p in again] == [2, 2]
    assert [p.created_ms for p in again] == [p.created_ms for p in pending]

    # The CDN is back: one invalidation with both paths, then nothing pending.
    working = RecordingCdn()
    app.context.cdn = working
    assert cdn_service.retry_pending(app.context) == {"pending": 0, "invalidated": 2}
    assert working.calls == [paths_for(a) + paths_for(b)]
    assert cdn_service.pending(app.context) == []
    assert cdn_service.retry_pending(app.context) == {"pending": 0, "invalidated": 0}


def test_every_withdrawal_succeeds_while_the_cdn_is_down(app, key, broken, clock):
    doc = publish(app, key)
    assert set_passphrase(app, key, doc["document_id"], "correct horse battery").status_code == 204
    assert rotate(app, key, doc["document_id"]).status_code == 200
    assert patch(app, key, doc["document_id"], {"share_expires_at": at(clock, 10)}).status_code == 200
    assert delete(app, key, doc["document_id"]).status_code == 204
    assert broken.calls == 4


def test_even_a_failing_pending_store_does_not_fail_the_call(app, key, broken, caplog):
    class Down:
        def add(self, *args):
            raise RuntimeError("storage down")

    app.context.repos.cdn_pending = Down()
    doc = publish(app, key)
    with caplog.at_level(logging.WARNING, logger="docpub"):
        assert delete(app, key, doc["document_id"]).status_code == 204
    assert "could not record a pending cdn invalidation" in caplog.text


def test_admin_lists_and_retries_pending(app, key, broken, monkeypatch, capsys):
    from scripts import admin

    monkeypatch.setattr("chalicelib.wiring.default_context", lambda: app.context)
    doc = publish(app, key)
    delete(app, key, doc["document_id"])
    listed = admin.run(admin.build_parser().parse_args(["cdn-pending"]))
    assert [(p["path"], p["reason"], p["attempts"]) for p in listed["pending"]] == [
        (paths_for(doc)[0], "delete", 1)]
    app.context.cdn = RecordingCdn()
    assert admin.run(admin.build_parser().parse_args(["cdn-retry"])) == {"pending": 0, "invalidated": 1}
    assert admin.run(admin.build_parser().parse_args(["cdn-pending"])) == {"pending": []}


# ------------------------------------------------------------------ the CloudFront adapter

@pytest.fixture
def cloudfront(aws):
    from chalicelib.adapters.aws import clients

    client = clients.cloudfront()
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def _created(paths):
    return {"Location": "https://cloudfront.amazonaws.com/x", "Invalidation": {
        "Id": "I1", "Status": "InProgress", "CreateTime": "2026-11-22T00:00:00Z",
        "InvalidationBatch": {"Paths": {"Quantity": len(paths), "Items": paths}, "CallerReference": "r"}}}


def test_cloudfront_adapter_sends_one_wildcard_invalidation(cloudfront):
    from chalicelib.adapters.aws.cdn import CloudFrontInvalidator

    paths = ["/d/abcdefghijklmnopqrstuv*"]
    cloudfront.add_response("create_invalidation", _created(paths), {
        "DistributionId": "E2EXAMPLE", "InvalidationBatch": {
            "Paths": {"Quantity": 1, "Items": paths}, "CallerReference": ANY}})
    CloudFrontInvalidator("E2EXAMPLE").invalidate(paths)


def test_cloudfront_adapter_reads_the_distribution_id_from_ssm_once(cloudfront):
    from chalicelib.adapters.aws import clients
    from chalicelib.adapters.aws.cdn import CloudFrontInvalidator

    with Stubber(clients.ssm()) as ssm:
        ssm.add_response("get_parameter", {"Parameter": {"Name": "/docpub-prod/cdn-distribution-id",
                                                         "Value": "E3FROMSSM", "Type": "String"}},
                         {"Name": "/docpub-prod/cdn-distribution-id"})
        invalidator = CloudFrontInvalidator(parameter="/docpub-prod/cdn-distribution-id")
        for share in ("a" * 22, "b" * 22):
            paths = [f"/d/{share}*"]
            cloudfront.add_response("create_invalidation", _created(paths), {
                "DistributionId": "E3FROMSSM",
                "InvalidationBatch": {"Paths": {"Quantity": 1, "Items": paths}, "CallerReference": ANY}})
            invalidator.invalidate(paths)
        ssm.assert_no_pending_responses()


def test_cloudfront_quota_refusal_becomes_a_pending_retry(aws, cloudfront, clock):
    """CloudFront's own refusal (15 wildcard paths in progress) through the real adapter."""
    from chalicelib.adapters.aws.cdn import CloudFrontInvalidator
    from chalicelib.services import cdn as cdn_service
    from chalicelib.wiring import new_context

    ctx = new_context(clock=clock, cdn=CloudFrontInvalidator("E2EXAMPLE"))
    cloudfront.add_client_error("create_invalidation", "TooManyInvalidationsInProgress", http_status_code=400)
    assert cdn_service.withdraw(ctx, "c" * 22, "delete") is False
    assert [p.path for p in cdn_service.pending(ctx)] == ["/d/" + "c" * 22 + "*"]
    cloudfront.add_response("create_invalidation", _created(["/d/" + "c" * 22 + "*"]))
    assert cdn_service.retry_pending(ctx)["invalidated"] == 1


def test_cloudfront_calls_fail_fast(aws):
    """One try with short timeouts: an unreachable CloudFront costs an API call ~3 s at most."""
    from chalicelib.adapters.aws import clients

    profile = clients.PROFILES["cloudfront"]
    assert profile.max_attempts == 1 and profile.worst_case_seconds() <= 3
    config = clients.cloudfront().meta.config
    assert config.retries["total_max_attempts"] == 1 and config.read_timeout <= 2


def test_no_cdn_configured_means_no_invalidation_client(monkeypatch):
    from chalicelib.adapters import cdn

    cdn.default_invalidator.cache_clear()
    monkeypatch.delenv("DOCPUB_CDN_DISTRIBUTION_ID", raising=False)
    monkeypatch.delenv("DOCPUB_CDN_DISTRIBUTION_PARAMETER", raising=False)
    assert isinstance(cdn.default_invalidator(), cdn.NoCdn)
    cdn.default_invalidator.cache_clear()
    monkeypatch.setenv("DOCPUB_CDN_DISTRIBUTION_PARAMETER", "/s/cdn-distribution-id")
    from chalicelib.adapters.aws.cdn import CloudFrontInvalidator

    assert isinstance(cdn.default_invalidator(), CloudFrontInvalidator)
    cdn.default_invalidator.cache_clear()


# ------------------------------------------------------------------ what every share answer tells caches

def _cache_headers(r) -> tuple:
    return r.status_code, r.headers.get("Cache-Control"), r.headers.get("Vary"), r.headers.get("ETag")


def test_cache_headers_of_every_share_answer(app, key, clock):
    doc = publish(app, key, share_expires_at=at(clock, HOUR))
    share = doc["share_id"]
    etag = f"\"{doc['version_id']}.{CONTENT_REVISION}\""
    page60, content60 = "public, max-age=0, s-maxage=60", "public, max-age=60, s-maxage=60"
    assert _cache_headers(wrapper(app, doc)) == (200, page60, "Accept-Encoding", None)
    assert _cache_headers(app.http.get(f"/d/{share}?v=1")) == (200, page60, "Accept-Encoding", None)
    assert _cache_headers(content(app, doc)) == (200, content60, "Accept-Encoding", etag)
    gz = content(app, doc, **{"Accept-Encoding": "gzip"})
    assert gz.headers.get("Content-Encoding") in (None, "gzip")
    assert _cache_headers(content(app, doc, **{"If-None-Match": etag})) == (304, content60, "Accept-Encoding", etag)
    assert _cache_headers(app.http.get(f"/d/{share}/v/v_unknownversion")) == (404, page60, "Accept-Encoding", None)
    assert _cache_headers(app.http.get("/d/" + "z" * 22)) == (404, page60, "Accept-Encoding", None)
    # Near the expiry every public answer is capped by the time left.
    clock.advance(HOUR - 10)
    assert _cache_headers(wrapper(app, doc))[1] == "public, max-age=0, s-maxage=10"
    assert _cache_headers(content(app, doc, **{"If-None-Match": etag}))[1:] == (
        "public, max-age=10, s-maxage=10", "Accept-Encoding", etag)
    clock.advance(10)
    assert _cache_headers(wrapper(app, doc)) == (410, page60, "Accept-Encoding", None)
    assert _cache_headers(content(app, doc)) == (410, page60, "Accept-Encoding", None)


def test_protected_answers_are_never_publicly_cacheable(app, key):
    doc = publish(app, key)
    set_passphrase(app, key, doc["document_id"], "correct horse battery")
    cookie = cookie_of(unlock(app, doc["share_id"], "correct horse battery"))
    for r in (wrapper(app, doc), content(app, doc), wrapper(app, doc, Cookie=cookie),
              content(app, doc, Cookie=cookie)):
        assert r.headers["Cache-Control"] == "private, no-store" and "Vary" not in r.headers


def test_logs_never_name_the_link(app, key, broken, caplog):
    doc = publish(app, key)
    with caplog.at_level(logging.DEBUG):
        delete(app, key, doc["document_id"])
    records = [r for r in caplog.records if "cdn invalidation" in r.getMessage()]
    assert records
    for record in records:
        assert doc["share_id"] not in json.dumps({k: str(v) for k, v in vars(record).items()})


def test_a_retry_without_a_cdn_configured_keeps_everything_pending(app, key, broken):
    from chalicelib.adapters.cdn import NoCdn
    from chalicelib.services import cdn as cdn_service

    doc = publish(app, key)
    delete(app, key, doc["document_id"])
    app.context.cdn = NoCdn()
    result = cdn_service.retry_pending(app.context)
    assert result["invalidated"] == 0 and "DOCPUB_CDN_DISTRIBUTION_ID" in result["error"]
    assert [p.path for p in cdn_service.pending(app.context)] == paths_for(doc)
