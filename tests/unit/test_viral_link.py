"""A viral link on DynamoDB (issue 23): the beacon reuses a link's lookup for a
few seconds with eventually consistent reads, views are added up per process
and written as one increment per day, version and total item, and per-version
counts live in their own items (no attribute that grows with versions)."""
from __future__ import annotations

import pytest

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.models import PublishRequest
from chalicelib.services.auth import credentials_from_key
from chalicelib.wiring import new_context
from chalicelib.services.documents import DocumentService
from chalicelib.services.views import ViewService
from chalicelib.services.workspaces import WorkspaceService
from tests.faults import Faults

pytestmark = pytest.mark.aws

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"


@pytest.fixture
def link(storage, clock, monkeypatch):
    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "100000")
    ctx = new_context(clock=clock)
    _, key = WorkspaceService(ctx).create_workspace("Viral", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(ctx)
    first = documents.publish(who, PublishRequest(title="Viral", html="<p>1</p>")).response
    for n in (2, 3):
        documents.publish(who, PublishRequest(title="Viral", html=f"<p>{n}</p>", document_id=first.document_id))
    doc = ctx.documents.get(first.document_id)
    return ctx, ViewService(ctx), doc


def view(views: ViewService, doc: dict, n: int, version: int | None = None):
    return views.record(doc.share_id, version, None, f"198.51.100.{n % 250}", CHROME, {})


def calls_of(operation: str) -> Faults:
    faults = Faults()
    return faults, faults.fail("dynamodb", operation, "unused", times=0)  # counts, injects nothing


def test_views_are_added_up_and_written_once_per_interval(link, clock, monkeypatch):
    ctx, views, doc = link
    monkeypatch.setenv("DOCPUB_VIEW_FLUSH_SECONDS", "1")
    faults, updates = calls_of("UpdateItem")
    try:
        view(views, doc, 0)  # the first view after a quiet interval is written at once
        written_first = updates.calls
        for n in range(1, 200):  # 199 more within the same second: added up
            view(views, doc, n)
        assert updates.calls - written_first == 199  # only the per-address cap items
        assert views.buffer.pending() == 199 and views.totals(doc.document_id)[0] == 1
        clock.advance(1)
        view(views, doc, 200)  # the next beacon after the interval writes them
    finally:
        faults.clear()
    assert views.buffer.pending() == 0 and views.totals(doc.document_id)[0] == 201
    # one write per counter item (day, version, total) for the 200 views of the second flush
    counter_writes = [b for b in updates.bodies if b["Key"]["PK"]["S"].startswith("VIEWS#")]
    assert len(counter_writes) == 6


def test_without_an_interval_every_view_is_written(link):
    ctx, views, doc = link
    for n in range(5):
        view(views, doc, n)
    assert views.buffer.pending() == 0 and views.totals(doc.document_id)[0] == 5


def test_without_an_interval_a_view_stamped_before_the_last_flush_is_written():
    """Found by `make test-aws` (20 concurrent beacons, 19 counted): threads read the
    clock before they take the buffer's lock, so a view can arrive stamped a moment
    before the last flush. Without an interval it must still be written at once."""
    from chalicelib.services.views import ViewBuffer

    buffer = ViewBuffer()
    key = ("doc", "ver", "2026-11-25")
    assert buffer.add(key, 1_001, 0) == [(key, 1, 1_001)]
    assert buffer.add(key, 1_000, 0) == [(key, 1, 1_000)]
    assert buffer.pending() == 0


def test_a_failed_flush_keeps_the_views_for_the_next_one(link, clock, monkeypatch):
    from chalicelib.ports import StorageUnavailable

    ctx, views, doc = link
    monkeypatch.setenv("DOCPUB_VIEW_FLUSH_SECONDS", "1")
    for n in range(10):
        view(views, doc, n)  # 1 written, 9 added up
    clock.advance(1)

    def unavailable(*_args, **_kwargs):
        raise StorageUnavailable("injected")

    real = ctx.views.add_view
    monkeypatch.setattr(ctx.views, "add_view", unavailable)
    with pytest.raises(StorageUnavailable):
        view(views, doc, 10)
    assert views.buffer.pending() == 10  # kept, not lost
    monkeypatch.setattr(ctx.views, "add_view", real)
    clock.advance(1)
    view(views, doc, 11)
    assert views.buffer.pending() == 0 and views.totals(doc.document_id)[0] == 12


def test_per_version_counts_live_in_their_own_items(link):
    ctx, views, doc = link
    for n, version in enumerate((1, 2, 3, 3, None)):
        view(views, doc, n, version)
    items = aws.dynamodb().query(TableName=config.table_name(), KeyConditionExpression="PK = :pk",
                                 ExpressionAttributeValues={":pk": {"S": f"VIEWS#{doc.document_id}"}})["Items"]
    assert not any(name.startswith("v#") for item in items for name in item)  # nothing grows with versions
    per_version = [i for i in items if i["SK"]["S"].startswith("P#")]
    assert len({i["SK"]["S"].rsplit("#", 1)[0] for i in per_version}) == 3
    stats = views.stats_for(doc.document_id, [], 30)
    counts = views.counts(doc.document_id, 30)[1]
    assert stats.views_total == 5 and sorted(counts.versions.values()) == [1, 1, 3]


def test_counts_written_by_the_old_layout_are_still_read(link):
    ctx, views, doc = link
    version_id = doc.latest_version_id
    aws.dynamodb().put_item(TableName=config.table_name(), Item={
        "PK": {"S": f"VIEWS#{doc.document_id}"}, "SK": {"S": "T#03"}, "views": {"N": "7"},
        f"v#{version_id}": {"N": "7"}, "last_ms": {"N": "1"}})
    view(views, doc, 0)
    counts = views.counts(doc.document_id, 30)[1]
    assert counts.total == 8 and counts.versions[version_id] == 8


def test_the_beacon_reuses_a_links_lookup_with_eventual_reads(link, clock, monkeypatch):
    ctx, views, doc = link
    monkeypatch.setenv("DOCPUB_SHARE_CACHE_SECONDS", "5")
    faults = Faults()
    gets = faults.fail("dynamodb", "GetItem", "unused", times=0)
    batches = faults.fail("dynamodb", "BatchGetItem", "unused", times=0)
    try:
        for n in range(20):
            view(views, doc, n)
        assert gets.calls == 1 and batches.calls == 1  # one lookup for 20 beacons
        clock.advance(5)
        view(views, doc, 20)
        assert gets.calls == 2
    finally:
        faults.clear()
    assert all(body.get("ConsistentRead") is False for body in gets.bodies)
    assert all(not spec.get("ConsistentRead") for body in batches.bodies for spec in body["RequestItems"].values())


def test_a_cached_lookup_still_judges_expiry_at_each_beacon(link, clock, monkeypatch):
    from chalicelib.errors import Gone

    ctx, views, doc = link
    monkeypatch.setenv("DOCPUB_SHARE_CACHE_SECONDS", "5")
    ctx.documents.update_fields(doc, {"share_expires_ms": ctx.now_ms() + 2_000})
    view(views, doc, 0)
    clock.advance(3)
    with pytest.raises(Gone):
        view(views, doc, 1)


def test_pages_never_use_the_beacons_cache(link, monkeypatch):
    """A withdrawn link must be gone from the function at once (the edge bound is 60 s)."""
    from chalicelib.errors import NotFound
    from chalicelib.services.sharing import ShareService

    ctx, views, doc = link
    monkeypatch.setenv("DOCPUB_SHARE_CACHE_SECONDS", "5")
    view(views, doc, 0)
    ctx.documents.update_fields(doc, {"share_enabled": False})
    with pytest.raises(NotFound):
        ShareService(ctx).page(doc.share_id)
