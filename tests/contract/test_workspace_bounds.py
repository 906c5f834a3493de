"""Workspace-wide bounds of issue 24 on both stores (SQLite + files, DynamoDB + S3 on
moto or, under `make test-aws`, the engines), through the services on an injected clock:

- the workspace write limit (120 per 60 s, every key and grant together) is a sliding
  log: 120 writes at :59 and one at :01 of the next minute is 429 (a clock-aligned
  window let 120 more through at the boundary);
"""
from __future__ import annotations

import pytest

from chalicelib.domain import limits
from chalicelib.errors import RateLimited
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
    assert doc["version_count"] == 120 and len(versions) == 120
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
