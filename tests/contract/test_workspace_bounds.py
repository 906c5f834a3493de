"""Workspace-wide bounds of issue 24 on both stores (SQLite + files, DynamoDB + S3 on
moto or, under `make test-aws`, the engines), through the services on an injected clock:

- the workspace write limit (120 per 60 s, every key and grant together) is a sliding
  log: 120 writes at :59 and one at :01 of the next minute is 429 (a clock-aligned
  window let 120 more through at the boundary);
- `max_storage_bytes` counts a bundle's files once per workspace: added when a version
  first refers to a file, freed when no version of the workspace refers to it any more.
"""
from __future__ import annotations

import pytest

from tests.helpers import BUNDLE_CSS, BUNDLE_JS, publish_bundle

from chalicelib.domain import limits
from chalicelib.errors import PlanLimitReached, RateLimited
from chalicelib.models import PublishRequest
from chalicelib.services.auth import credentials_from_key

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def _publish(services, key, html, document_id=None):
    request = PublishRequest(title="Doc", html=html, document_id=document_id)  # type: ignore[call-arg]
    return services.documents.publish(credentials_from_key(key), request)


def _minute_boundary(clock) -> float:
    """Move the clock to second :59 of a minute; returns the next minute's start."""
    boundary = (int(clock()) // 60 + 1) * 60
    clock.now = boundary - 1
    return boundary


@BOTH
def test_the_workspace_write_limit_holds_over_any_rolling_minute(services, clock, storage):
    ws, first = services.workspaces.create_workspace("Busy", "pro")
    keys = [first.api_key] + [services.workspaces.create_key(ws.id, f"k{i}", operator=True).api_key
                              for i in range(2)]
    boundary = _minute_boundary(clock)
    document_id = None
    for n in range(120):  # 40 per key: under each key's 60, the workspace's 120 in all
        result = _publish(services, keys[n % 3], f"<p>{n}</p>", document_id)
        document_id = result.response.document_id
    clock.now = boundary + 1  # t = 61 s: a new clock-aligned minute, the same rolling one
    with pytest.raises(RateLimited) as refused:
        _publish(services, keys[0], "<p>one more</p>", document_id)
    # The oldest of the 120 (at :59) leaves the rolling minute at the next :59, 58 s from now.
    assert refused.value.retry_after_seconds == 58
    assert refused.value.headers["X-RateLimit-Reset"] == "58"
    assert refused.value.headers["X-RateLimit-Remaining"] == "0"
    assert "all keys" in refused.value.message
    # Refused: nothing written, no slot taken.
    doc, versions = services.documents.ctx.documents.get_with_versions(document_id)
    assert doc.version_count == 120 and len(versions) == 120
    clock.now = boundary + 59  # the 120 writes of :59 have left the window
    assert _publish(services, keys[0], "<p>later</p>", document_id).response.version_number == 121


@BOTH
def test_a_write_refused_by_the_workspace_limit_takes_no_slot(services, clock, storage, monkeypatch):
    monkeypatch.setattr(limits, "WORKSPACE_WRITE_RATE", limits.Rate(3, 60))
    ws, first = services.workspaces.create_workspace("Small", "pro")
    document_id = _publish(services, first.api_key, "<p>0</p>").response.document_id
    for n in range(2):
        clock.advance(10)
        _publish(services, first.api_key, f"<p>{n}</p>", document_id)
    for _ in range(5):  # refused again and again: the log does not grow
        with pytest.raises(RateLimited) as refused:
            _publish(services, first.api_key, "<p>no</p>", document_id)
    assert refused.value.retry_after_seconds == 40
    clock.advance(40)  # the first write leaves the window: exactly one slot frees
    _publish(services, first.api_key, "<p>yes</p>", document_id)
    with pytest.raises(RateLimited):
        _publish(services, first.api_key, "<p>no</p>", document_id)


# ------------------------------------------------------------------ bundle files in storage



def _usage(services, key):
    return services.workspaces.me(credentials_from_key(key)).workspace.usage.storage_bytes


def _delete_version(services, key, document_id, version_id):
    services.documents.delete_version(credentials_from_key(key), document_id, version_id)


@BOTH
def test_a_file_in_many_versions_counts_once_and_leaves_with_the_last_one(services, storage):
    _, created = services.workspaces.create_workspace("Files", "pro")
    key = created.api_key
    assert len(BUNDLE_CSS) == 1050 and len(BUNDLE_JS) == 640
    v1 = publish_bundle(services, key, "<p>one</p>", [("style.css", BUNDLE_CSS), ("app.js", BUNDLE_JS)])            # 10 bytes
    assert _usage(services, key) == 10 + 1050 + 640
    v2 = publish_bundle(services, key, "<p>two!</p>", [("style.css", BUNDLE_CSS), ("copy.css", BUNDLE_CSS)], v1.document_id)  # 11
    assert _usage(services, key) == 10 + 11 + 1050 + 640  # the same file twice in a version, once overall
    other = publish_bundle(services, key, "<p>other</p>", [("s.css", BUNDLE_CSS)])                          # 12
    assert _usage(services, key) == 10 + 11 + 12 + 1050 + 640
    _delete_version(services, key, v1.document_id, v1.version_id)  # app.js: no version refers to it now
    assert _usage(services, key) == 11 + 12 + 1050
    services.documents.delete(credentials_from_key(key), other.document_id)  # style.css: v2 still has it
    assert _usage(services, key) == 11 + 1050
    v3 = publish_bundle(services, key, "<p>3</p>", [], v2.document_id)                               # 8
    _delete_version(services, key, v2.document_id, v2.version_id)  # the last version using style.css
    assert _usage(services, key) == 8
    publish_bundle(services, key, "<p>4</p>", [("again.css", BUNDLE_CSS)], v3.document_id)  # counted again when it returns
    assert _usage(services, key) == 8 + 8 + 1050
    services.documents.delete(credentials_from_key(key), v3.document_id)
    assert _usage(services, key) == 0


@BOTH
def test_a_file_over_the_quota_is_refused_and_nothing_is_half_written(services, storage, monkeypatch):
    monkeypatch.setattr(limits, "FREE_MAX_STORAGE_BYTES", 2000)
    _, created = services.workspaces.create_workspace("Small", "free")
    key = created.api_key
    v1 = publish_bundle(services, key, "<p>one</p>", [("style.css", BUNDLE_CSS)])  # 1,060 bytes
    # A new version reusing style.css adds only its page: fits.
    publish_bundle(services, key, "<p>two</p>", [("style.css", BUNDLE_CSS)], v1.document_id)
    assert _usage(services, key) == 1070
    big = "x" * 1000
    with pytest.raises(PlanLimitReached) as refused:
        publish_bundle(services, key, "<p>3</p>", [("style.css", BUNDLE_CSS), ("big.txt", big)], v1.document_id)
    assert refused.value.details == {"entitlement": "max_storage_bytes", "limit": 2000, "current": 1070}
    assert "adds 1,008 bytes" in refused.value.message  # its page and its one new file
    ctx = services.documents.ctx
    doc, versions = ctx.documents.get_with_versions(v1.document_id)
    assert doc.version_count == 2 and len(versions) == 2
    assert _usage(services, key) == 1070
    import hashlib

    from chalicelib.ports import file_prefix

    stored = {key.rsplit("/", 1)[1] for key, _ in ctx.blobs.list_keys(file_prefix(doc.workspace_id))}
    assert hashlib.sha256(BUNDLE_CSS.encode()).hexdigest() in stored
    assert hashlib.sha256(big.encode()).hexdigest() not in stored  # the refused version's file was removed
    with pytest.raises(PlanLimitReached):  # a new document with the file: refused the same way
        publish_bundle(services, key, "<p>new</p>", [("big.txt", big)])
    assert _usage(services, key) == 1070


@BOTH
def test_racing_versions_with_the_same_new_file_count_it_once(services, storage):
    from tests.helpers import run_together

    _, created = services.workspaces.create_workspace("Race", "pro")
    key = created.api_key
    results, failures = run_together([
        lambda n=n: publish_bundle(services, key, f"<p>{n:03d}</p>", [("style.css", BUNDLE_CSS)]) for n in range(6)])
    assert failures == [] and len(results) == 6
    assert _usage(services, key) == 6 * 10 + 1050
    for result in results:
        services.documents.delete(credentials_from_key(key), result.document_id)
    assert _usage(services, key) == 0
