"""The pure link rules (chalicelib/domain/links.py): expiry instants, cache lifetimes
and which changes withdraw access."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from chalicelib.domain import links
from chalicelib.errors import ValidationFailed

NOW = 1_795_000_000_000  # ms


def settings(fields=None):
    """A document's link settings (ports.records.Document has these attributes)."""
    fields = fields or {}
    return SimpleNamespace(share_enabled=fields.get("share_enabled", True),
                           share_expires_ms=fields.get("share_expires_ms"),
                           share_access=fields.get("share_access", "public"))


def test_expired_exactly_at_the_instant():
    doc = settings({"share_expires_ms": NOW})
    assert not links.expired(doc, NOW - 1)
    assert links.expired(doc, NOW) and links.expired(doc, NOW + 1)
    assert not links.expired(settings(), NOW) and not links.expired(settings({"share_expires_ms": None}), NOW)


@pytest.mark.parametrize("left_ms, seconds", [
    (None, 60), (3_600_000, 60), (60_000, 60), (59_999, 59), (25_000, 25), (999, 0), (0, 0), (-5_000, 0)])
def test_cache_lifetime_never_outlives_the_link(left_ms, seconds):
    doc = settings({} if left_ms is None else {"share_expires_ms": NOW + left_ms})
    assert links.cache_seconds(doc, NOW) == seconds
    if left_ms is not None:
        assert NOW + links.cache_seconds(doc, NOW) * 1000 <= max(NOW, NOW + left_ms)


def test_enabled_unless_explicitly_false():
    assert links.enabled(settings()) and links.enabled(settings({"share_enabled": True}))
    assert not links.enabled(settings({"share_enabled": False}))


@pytest.mark.parametrize("before, changes, withdraws", [
    ({}, {"share_enabled": False}, True),
    ({"share_enabled": False}, {"share_enabled": False}, False),
    ({"share_enabled": False}, {"share_enabled": True}, False),
    ({}, {"share_expires_ms": NOW + 30_000}, True),  # a copy cached now could outlive it
    ({}, {"share_expires_ms": NOW + 60_000}, False),  # cached copies die by then anyway
    ({"share_expires_ms": NOW + 50_000}, {"share_expires_ms": NOW + 40_000}, True),
    ({"share_expires_ms": NOW + 10_000}, {"share_expires_ms": NOW + 20_000}, False),  # later: widens
    ({"share_expires_ms": NOW + 10_000}, {"share_expires_ms": None}, False),
    ({}, {"title": "x"}, False),
])
def test_which_changes_withdraw(before, changes, withdraws):
    assert links.withdraws(settings(before), changes, NOW) is withdraws


def test_parse_expiry_window():
    assert links.parse_expiry(None, NOW) is None
    assert links.parse_expiry("2026-11-18T11:06:41Z", NOW) == NOW + 1_000
    for value in ("2026-11-18T11:06:40Z", "2020-01-01T00:00:00Z", "2027-11-20T11:06:41Z"):
        with pytest.raises(ValidationFailed) as caught:
            links.parse_expiry(value, NOW)
        assert caught.value.details["fields"][0]["field"] == "share_expires_at"
