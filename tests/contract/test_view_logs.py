"""Views counted from CloudFront's logs (issue 38; real-time records deployed, standard
log files in benchmarks and backfills) on both stores: the contract's
rules (human views, links anyone may see, the per-address cap), malformed and truncated
lines skipped and counted, and a retried file (or one cut off half-way) never counting
a view twice."""
from __future__ import annotations

import pytest

from chalicelib.models import PublishRequest, UpdateDocumentRequest
from chalicelib.ports.views import ViewTally
from chalicelib.services.auth import credentials_from_key
from chalicelib.services.view_logs import count_log
from tests.cloudfront_logs import HEADER, beacon, line, realtime_beacon

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


@pytest.fixture
def world(storage, clock, monkeypatch):
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.views import ViewService
    from chalicelib.services.workspaces import WorkspaceService
    from chalicelib.wiring import new_context

    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "3")
    ctx = new_context(clock=clock)
    _, key = WorkspaceService(ctx).create_workspace("Logs", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(ctx)

    def publish(title="Viral"):
        done = documents.publish(who, PublishRequest(title=title, html="<p>x</p>")).response
        return ctx.documents.get(done.document_id)

    return ctx, who, documents, ViewService(ctx), publish


def total(views, doc):
    return views.stats_for(doc.document_id, [], 30).views_total


@BOTH
def test_the_port_adds_a_batch_once(world):
    ctx, *_ , publish = world
    doc = publish()
    tallies = [ViewTally(doc.document_id, doc.latest_version_id, "2026-11-28", 5, 1_000),
               ViewTally(doc.document_id, doc.latest_version_id, "2026-11-29", 2, 2_000)]
    assert ctx.views.add_views_once("file#0", tallies, 9_999_999_999) is True
    assert ctx.views.add_views_once("file#0", tallies, 9_999_999_999) is False  # a retry adds nothing
    counts = ctx.views.counts(doc.document_id, "2026-11-01", "2026-11-30")
    assert counts.total == 7 and counts.days == {"2026-11-28": 5, "2026-11-29": 2}
    assert counts.versions == {doc.latest_version_id: 7} and counts.last_viewed_ms == 2_000


@BOTH
def test_a_log_file_counts_human_views_once_per_the_contract(world, clock):
    ctx, who, documents, views, publish = world
    doc, withdrawn = publish(), publish("Gone")
    documents.update(who, withdrawn.document_id, UpdateDocumentRequest(share_enabled=False))
    now = clock.now * 1000
    lines = HEADER + [
        *(beacon(doc.share_id, now, ip=f"203.0.113.{n}") for n in range(10)),      # 10 people
        *(beacon(doc.share_id, now, ip="198.51.100.1") for _ in range(5)),         # one reloading: 3 count
        beacon(doc.share_id, now, ip="198.51.100.2", user_agent="curl/8.4.0"),     # a bot
        beacon(doc.share_id, now, ip="198.51.100.3", status=403),                  # no static copy: no view
        beacon(withdrawn.share_id, now, ip="198.51.100.4"),                        # withdrawn since
        line(f"/d/{doc.share_id}", now),                                           # the page itself
        "2026-11-28\t12:00:00\tFRA56\t12",                                          # malformed
        beacon(doc.share_id, now, ip="198.51.100.5")[:40],                         # truncated last line
    ]
    report = count_log(ctx, "cloudfront/main/E1.2026-11-28-12.a1b2c3d4.gz", lines)
    assert (report.lines, report.beacons, report.counted, report.bots, report.capped, report.not_visible,
            report.malformed) == (21, 17, 13, 1, 2, 1, 2)
    assert total(views, doc) == 13
    again = count_log(ctx, "cloudfront/main/E1.2026-11-28-12.a1b2c3d4.gz", lines)  # retried
    assert again.counted == 0 and again.batches_seen_before == again.batches == 1
    assert total(views, doc) == 13


@BOTH
def test_a_file_cut_off_half_way_finishes_on_the_retry_without_counting_twice(world, clock, monkeypatch):
    ctx, who, documents, views, publish = world
    docs = [publish(f"Doc {n}") for n in range(35)]  # 35 tallies: two batches
    now = clock.now * 1000
    lines = [beacon(d.share_id, now, ip="203.0.113.9") for d in docs]
    real = ctx.views.add_views_once
    calls = []

    def fails_on_the_second(batch_id, tallies, expires_at):
        calls.append(batch_id)
        if len(calls) == 2:
            raise RuntimeError("storage went away")
        return real(batch_id, tallies, expires_at)

    monkeypatch.setattr(ctx.views, "add_views_once", fails_on_the_second)
    with pytest.raises(RuntimeError):
        count_log(ctx, "cloudfront/main/E1.cut.gz", lines)
    assert sum(total(views, d) for d in docs) == 30  # the first batch only
    report = count_log(ctx, "cloudfront/main/E1.cut.gz", lines)
    assert (report.batches, report.batches_seen_before, report.counted) == (2, 1, 5)
    assert all(total(views, d) == 1 for d in docs)


@BOTH
def test_a_pinned_version_counts_for_that_version(world, clock):
    ctx, who, documents, views, publish = world
    doc = publish()
    documents.publish(who, PublishRequest(title="Viral", html="<p>2</p>", document_id=doc.document_id))
    now = clock.now * 1000
    count_log(ctx, "f", [beacon(doc.share_id, now, 1, ip="203.0.113.1"), beacon(doc.share_id, now, 2,
                                                                                 ip="203.0.113.2")])
    counts = views.counts(doc.document_id, 30)[1]
    assert sorted(counts.versions.values()) == [1, 1] and counts.total == 2


@pytest.mark.aws
def test_the_function_counts_a_kinesis_batch_once_and_reports_its_metrics(world, clock, capsys, monkeypatch):
    """What runs deployed: CloudFront real-time logs -> Kinesis -> ViewLogFunction, a batch
    as Lambda delivers it, with malformed records among the beacons; the same batch again
    (Lambda's retry) counts nothing."""
    import json

    from chalicelib import wiring
    from chalicelib.entrypoints import view_logs
    from tests.cloudfront_logs import kinesis_event, realtime, realtime_beacon

    ctx, who, documents, views, publish = world
    doc = publish()
    now = clock.now * 1000
    event = kinesis_event([
        *(realtime_beacon(doc.share_id, now + n, ip=f"203.0.113.{n}") for n in range(4)),
        realtime_beacon(doc.share_id, now, ip="203.0.113.9", user_agent="Googlebot/2.1"),  # a bot
        realtime(f"/d/{doc.share_id}", now),                                               # the page itself
        realtime_beacon(doc.share_id, now, ip="203.0.113.8")[:30],                         # truncated
        b"%%% not base64 %%%",                                                             # undecodable
        "\t".join(["yesterday", "203.0.113.7", "200", "GET", f"/d/{doc.share_id}/seen", "x", "-", "v=1", "Hit"]),
    ])
    monkeypatch.setattr(wiring, "default_context", lambda: ctx)  # the test's clock and store
    [first] = view_logs.handle(event)["batches"]
    [again] = view_logs.handle(event)["batches"]  # Lambda retries the same batch
    assert (first["lines"], first["beacons"], first["counted"], first["bots"], first["malformed"]) == (9, 5, 4, 1, 3)
    assert again["counted"] == 0 and again["batches_seen_before"] == again["batches"] == 1
    assert total(views, doc) == 4
    metrics = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"_aws"')]
    assert metrics[0]["ViewLogViews"] == 4 and metrics[0]["ViewLogMalformedLines"] == 3
    assert metrics[1]["ViewLogViews"] == 0 and metrics[1]["ViewLogBatchesSeenBefore"] == 1


@BOTH
def test_a_later_batch_of_the_stream_counts_its_own_views(world, clock):
    """Batches are named by shard and sequence numbers: the next batch (or another shard's)
    is counted, the same one is not."""
    from chalicelib.domain.view_logs import AddressCaps
    from chalicelib.services.view_logs import count_records

    ctx, who, documents, views, publish = world
    doc = publish()
    now = clock.now * 1000
    caps = AddressCaps()

    def records(first, n):
        return [(str(first + i), realtime_beacon(doc.share_id, now, ip=f"203.0.113.{first + i}").encode())
                for i in range(n)]

    assert count_records(ctx, "shardId-000000000000", records(10, 2), caps).counted == 2
    assert count_records(ctx, "shardId-000000000000", records(10, 2), caps).counted == 0
    assert count_records(ctx, "shardId-000000000000", records(12, 2), caps).counted == 2
    assert count_records(ctx, "shardId-000000000001", records(10, 2), caps).counted == 2
    assert count_records(ctx, "shardId-000000000000", [], caps).counted == 0
    assert total(views, doc) == 6


@BOTH
def test_ipv6_viewers_share_the_cap_of_their_64_as_on_the_function(world, clock):
    ctx, who, documents, views, publish = world
    doc = publish()
    now = clock.now * 1000
    lines = [beacon(doc.share_id, now, ip=f"2001:db8:1:2::{n}") for n in range(1, 6)]  # one /64, limit 3
    lines.append(beacon(doc.share_id, now, ip="2001:db8:1:3::1"))  # another /64
    report = count_log(ctx, "cloudfront/main/E1.v6.gz", lines)
    assert (report.counted, report.capped) == (4, 2)


# ---------------------------------------------------------------- the cap across batches (issue 38 follow-up)

def _one_address(share_id: str, at_ms: int, n: int, ip: str = "198.51.100.77") -> list[str]:
    return [realtime_beacon(share_id, at_ms + i, ip=ip) for i in range(n)]


def _window_start(clock) -> int:
    """The start of the 10-minute window the clock is in (beacons placed within one window)."""
    return int(clock.now * 1000) // 600_000 * 600_000


def _records(lines: list[str], first: int) -> list[tuple[str, bytes]]:
    return [(str(first + i), (text + "\n").encode()) for i, text in enumerate(lines)]


def _fails_once(ctx, monkeypatch, on_call: int = 1) -> list[str]:
    """ctx.views.add_views_once raises on its `on_call`-th call (storage went away), then works."""
    real, calls = ctx.views.add_views_once, []

    def flaky(batch_id, tallies, expires_at):
        calls.append(batch_id)
        if len(calls) == on_call:
            raise RuntimeError("storage went away")
        return real(batch_id, tallies, expires_at)

    monkeypatch.setattr(ctx.views, "add_views_once", flaky)
    return calls


@BOTH
def test_an_address_reloading_across_stream_batches_gets_the_cap_per_window_not_per_batch(world, clock,
                                                                                         monkeypatch):
    """One address reloading in a loop spans many batches (1,000 records or 60 s each):
    25 + 25 beacons within one window count 30, the cap, as the function path's
    (services/views.py), not 30 per batch."""
    from chalicelib import wiring
    from chalicelib.entrypoints import view_logs
    from tests.cloudfront_logs import kinesis_event

    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "30")
    monkeypatch.setattr(view_logs, "_caps", None, raising=False)  # this process's counts start empty
    ctx, who, documents, views, publish = world
    doc = publish()
    now = _window_start(clock) + 1_000
    monkeypatch.setattr(wiring, "default_context", lambda: ctx)
    [first] = view_logs.handle(kinesis_event(_one_address(doc.share_id, now, 25), first=1000))["batches"]
    [second] = view_logs.handle(kinesis_event(_one_address(doc.share_id, now + 60_000, 25), first=2000))["batches"]
    assert (first["counted"], first["capped"]) == (25, 0)
    assert (second["counted"], second["capped"]) == (5, 20)
    assert total(views, doc) == 30


@BOTH
def test_a_retried_stream_batch_keeps_the_decisions_of_its_first_attempt(world, clock, monkeypatch):
    """Lambda retries a batch whose write failed as the same records: it counts what its
    first attempt would have (5: the cap less the 25 before), not 0 (capped by its own
    first attempt) nor 25 (the cap per batch); after a success, the same batch counts nothing."""
    from chalicelib.domain.view_logs import AddressCaps
    from chalicelib.services.view_logs import count_records

    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "30")
    ctx, who, documents, views, publish = world
    doc = publish()
    start, caps, shard = _window_start(clock), AddressCaps(), "shardId-000000000000"
    first = _records(_one_address(doc.share_id, start + 1_000, 25), 1000)
    second = _records(_one_address(doc.share_id, start + 61_000, 25), 2000)
    assert count_records(ctx, shard, first, caps).counted == 25
    _fails_once(ctx, monkeypatch)
    with pytest.raises(RuntimeError):
        count_records(ctx, shard, second, caps)
    assert total(views, doc) == 25
    retried = count_records(ctx, shard, second, caps)
    assert (retried.counted, retried.capped, retried.batches_seen_before) == (5, 20, 0)
    again = count_records(ctx, shard, second, caps)  # a success retried (a duplicate delivery)
    assert (again.counted, again.capped, again.batches_seen_before) == (0, 20, 1)
    assert count_records(ctx, shard, first, caps).counted == 0
    assert total(views, doc) == 30


@BOTH
def test_a_retry_in_a_new_process_after_a_partial_write_counts_no_tally_twice(world, clock, monkeypatch):
    """The retry may run in a new instance (empty counts), which admits what the first
    attempt capped: the tally batches are cut from every tally the records could make, so
    they are the same batches whatever the cap decided, and none is written twice."""
    from chalicelib.domain.view_logs import AddressCaps
    from chalicelib.services.view_logs import count_records

    ctx, who, documents, views, publish = world  # a cap of 3
    docs = sorted((publish(f"Doc {n}") for n in range(35)), key=lambda d: d.document_id)  # 2 tally batches
    start, shard = _window_start(clock), "shardId-000000000000"
    warm = AddressCaps()
    assert count_records(ctx, shard, _records(_one_address(docs[0].share_id, start, 3), 100), warm).counted == 3
    batch = _records([realtime_beacon(d.share_id, start + 1_000, ip="198.51.100.77") for d in docs], 200)
    _fails_once(ctx, monkeypatch, on_call=2)  # the first tally batch written, the second not
    with pytest.raises(RuntimeError):
        count_records(ctx, shard, batch, warm)  # docs[0] capped: 34 tallies
    retried = count_records(ctx, shard, batch, AddressCaps())  # a new instance: docs[0] admitted
    assert (retried.batches, retried.batches_seen_before, retried.counted) == (2, 1, 5)
    assert [total(views, d) for d in docs] == [3] + [1] * 34


@BOTH
def test_the_next_window_admits_the_address_again(world, clock, monkeypatch):
    from chalicelib.domain.view_logs import AddressCaps
    from chalicelib.services.view_logs import count_records

    monkeypatch.setenv("DOCPUB_VIEW_RATE_LIMIT", "30")
    ctx, who, documents, views, publish = world
    doc, other = publish(), publish("Other")
    start, caps, shard = _window_start(clock), AddressCaps(), "shardId-000000000000"
    counted = [count_records(ctx, shard, _records(lines, first), caps).counted for first, lines in [
        (1000, _one_address(doc.share_id, start, 25)),
        (2000, _one_address(doc.share_id, start + 300_000, 25)),          # same window: 5 more
        (3000, _one_address(other.share_id, start + 300_000, 25)),        # another document: its own cap
        (4000, _one_address(doc.share_id, start + 600_000, 25)),          # the next window
        (5000, _one_address(doc.share_id, start + 900_000, 25))]]         # still that window: 5 more
    assert counted == [25, 5, 25, 25, 5]
    assert total(views, doc) == 60 and total(views, other) == 25
