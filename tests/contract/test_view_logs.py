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
    from chalicelib.services.view_logs import count_records

    ctx, who, documents, views, publish = world
    doc = publish()
    now = clock.now * 1000

    def records(first, n):
        return [(str(first + i), realtime_beacon(doc.share_id, now, ip=f"203.0.113.{first + i}").encode())
                for i in range(n)]

    assert count_records(ctx, "shardId-000000000000", records(10, 2)).counted == 2
    assert count_records(ctx, "shardId-000000000000", records(10, 2)).counted == 0
    assert count_records(ctx, "shardId-000000000000", records(12, 2)).counted == 2
    assert count_records(ctx, "shardId-000000000001", records(10, 2)).counted == 2
    assert count_records(ctx, "shardId-000000000000", []).counted == 0
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
