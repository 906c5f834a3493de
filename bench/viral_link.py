"""A viral link on DynamoDB Local: N views of one link, today's write-through
pattern vs the aggregated one, in the same run (make bench-aws).

    .venv/bin/python -m bench.viral_link [--views 3000] [--rate 3000] [--instances 20]
    .venv/bin/python -m bench.viral_link --all-in [--views-per-file 1000]   (issue 38; moto)

Each view is what reaches the function once the page and its content come
from CloudFront: the view beacon (POST /d/<share>/view), through the real view
service and DynamoDB adapter against DynamoDB Local. Time is simulated (views
arrive at `rate` per second, spread round-robin over `instances` function
instances, each with its own in-process state), so the per-item write rates
are exact whatever this machine's speed. Every DynamoDB call asks for
`ReturnConsumedCapacity` (a botocore hook), so read and write units are the
engine's own figures.

Designs (same code, two settings), and two front doors:
- write-through: DOCPUB_VIEW_FLUSH_SECONDS=0, DOCPUB_SHARE_CACHE_SECONDS=0: every
  beacon reads the link with strongly consistent reads and writes its counters
  (the request pattern before issue 23; one ADD more than the old layout's two, for
  the per-version item), behind API Gateway;
- aggregated: 1 s and 5 s, what the deployed stack sets (infra/resources.yaml),
  behind API Gateway (before the share function) and behind the share function's
  Lambda function URL (deployed: CloudFront -> ShareFunction, no API Gateway). The
  function URL changes the front door only: the same beacons make the same DynamoDB
  calls; what it adds is the event translation (chalicelib/entrypoints/edge.py),
  measured here per beacon and priced, and a sample of beacons goes through
  `edge.handle` and the real app on DynamoDB Local to show they are counted.

Prices (us-east-1 list prices, on-demand; docs/scaling.md uses this table):
API Gateway REST $3.50 per million requests, Lambda $0.20 per million requests +
$0.0000166667 per GB-s (1 GB function; duration modelled as 2 ms + 4 ms per
DynamoDB call, in-region latency: DynamoDB Local on a loaded 2-core machine is
far slower, its time is printed but not priced), DynamoDB on-demand $0.625 per
million write units and $0.125 per million read units. A function URL has no
price of its own (Lambda's request and duration prices only). docs/scaling.md
takes its table from this run; tests/unit/test_docs_numbers.py recomputes the prices.
"""
from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import threading
import time

from bench._common import print_header, print_table

API_GATEWAY_PER_MILLION = 3.50
LAMBDA_REQUEST_PER_MILLION = 0.20
LAMBDA_GB_SECOND = 0.0000166667
LAMBDA_MEMORY_GB = 1.0
LAMBDA_BASE_MS = 2
LAMBDA_MS_PER_CALL = 4
WRITE_UNIT_PER_MILLION = 0.625
READ_UNIT_PER_MILLION = 0.125
ITEM_WRITE_TARGET = 500  # the bound per item per second at 3,000 views/s

COST_GOAL = 2.00  # $ per million views (issue 23)

DESIGNS = {"write-through": ("0", "0"), "aggregated": ("1", "5")}
# (row name, design measured, through API Gateway?)
FRONT_DOORS = [("write-through, API Gateway (before issue 23)", "write-through", True),
               ("aggregated, API Gateway (before the share function)", "aggregated", True),
               ("aggregated, function URL (deployed)", "aggregated", False)]


def cost_per_million(calls_per_view: float, read_units_per_view: float, write_units_per_view: float,
                     extra_ms: float = 0.0) -> tuple[float, float, int]:
    """($ per million views with API Gateway, without it, priced Lambda ms per beacon);
    `extra_ms`: measured work per beacon besides the DynamoDB calls (the function URL's
    event translation)."""
    modelled_ms = math.ceil(LAMBDA_BASE_MS + LAMBDA_MS_PER_CALL * calls_per_view + extra_ms)
    lambda_cost = LAMBDA_REQUEST_PER_MILLION + 1e6 * LAMBDA_GB_SECOND * LAMBDA_MEMORY_GB * modelled_ms / 1000
    dynamodb_cost = write_units_per_view * WRITE_UNIT_PER_MILLION + read_units_per_view * READ_UNIT_PER_MILLION
    without = lambda_cost + dynamodb_cost
    return API_GATEWAY_PER_MILLION + without, without, modelled_ms


class Meter:
    """Calls, consumed capacity and writes per item per simulated second, from botocore hooks."""

    def __init__(self, client, now):
        self.now = now
        self.lock = threading.Lock()
        self.reset()
        client.meta.events.register("before-parameter-build.dynamodb", self._ask)
        client.meta.events.register("after-call.dynamodb", self._seen)

    def reset(self):
        self.calls: collections.Counter = collections.Counter()
        self.read_units = 0.0
        self.write_units = 0.0
        self.item_writes: collections.Counter = collections.Counter()

    def _ask(self, params, model, **_kwargs):
        if "ReturnConsumedCapacity" in model.input_shape.members:
            params["ReturnConsumedCapacity"] = "TOTAL"
        if model.name in ("UpdateItem", "PutItem", "DeleteItem"):
            second = int(self.now())
            with self.lock:
                self.item_writes[(params["Key" if "Key" in params else "Item"]["PK"]["S"],
                                  params["Key" if "Key" in params else "Item"]["SK"]["S"], second)] += 1

    def _seen(self, http_response, parsed, model, **_kwargs):
        consumed = parsed.get("ConsumedCapacity")
        entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        with self.lock:
            self.calls[model.name] += 1
            for entry in entries:
                self.read_units += entry.get("ReadCapacityUnits", 0) or 0
                self.write_units += entry.get("WriteCapacityUnits", 0) or 0
                if not entry.get("ReadCapacityUnits") and not entry.get("WriteCapacityUnits"):
                    units = entry.get("CapacityUnits", 0) or 0
                    if model.name in ("GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"):
                        self.read_units += units
                    else:
                        self.write_units += units


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--views", type=int, default=3000)
    parser.add_argument("--rate", type=int, default=3000, help="views per simulated second")
    parser.add_argument("--instances", type=int, default=20, help="function instances sharing the load")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--all-in", action="store_true",
                        help="a public link's all-in cost before and after issue 38 (moto, no engines)")
    parser.add_argument("--views-per-batch", type=int, default=1000,
                        help="--all-in: views per batch of real-time log records (a minute's at most)")
    parser.add_argument("--views-per-month", type=float, default=30e6,
                        help="--all-in: views a month the stream's fixed shard-hours are spread over")
    args = parser.parse_args()
    if args.all_in:
        return all_in(args)
    from tests import engines

    why = engines.missing()
    if why:
        print(f"bench.viral_link: {why}", file=sys.stderr)
        return 2
    running = engines.Engines().start()
    try:
        os.environ.update(running.env)
        os.environ.update({"DOCPUB_STORAGE": "aws", "DOCPUB_TABLE": "bench-viral", "DOCPUB_BUCKET": "bench-viral",
                           "DOCPUB_VIEW_RATE_LIMIT": "30"})
        engines.patient_clients()
        engines.create_storage("bench-viral", "bench-viral")
        from chalicelib.adapters.aws import clients as aws

        current = {"t": 0.0}
        meter = Meter(aws.dynamodb(), lambda: current["t"])
        measured = {name: run(name, flush, cache, args, meter, current) for name, (flush, cache) in DESIGNS.items()}
        adapter_ms, counted = function_url(measured["aggregated"]["share_id"], measured["aggregated"]["document_id"])
    finally:
        running.stop()
    rows = []
    for name, design, through_api_gateway in FRONT_DOORS:
        m = measured[design]
        extra = 0.0 if through_api_gateway else adapter_ms
        with_api, without, modelled_ms = cost_per_million(m["calls"], m["reads"], m["writes"], extra)
        cost = with_api if through_api_gateway else without
        rows.append([name, "1000", f"{m['calls'] * 1000:.0f}", f"{m['reads'] * 1000:.0f}", f"{m['writes'] * 1000:.0f}",
                     str(m["hottest"]), f"{m['service_ms']:.0f} ({modelled_ms})", f"{cost:.2f}", cost])
    baseline = rows[0][-1]
    for row in rows:
        row[-1] = f"{row[-1] / baseline:.2f}x"
    print_header(f"A viral link: {args.views} views at {args.rate}/s over {args.instances} function instances, "
                 "DynamoDB Local")
    print_table(["design, front door", "origin requests / 1k views", "DynamoDB calls / 1k", "read units / 1k",
                 "write units / 1k", "hottest item writes/s", "ms / beacon here (priced)", "$ / million views",
                 "cost vs write-through"], rows)
    print(f"function URL event translation: {adapter_ms * 1000:.1f} µs per beacon (measured, priced above); "
          f"{counted} beacons through edge.handle and the app on DynamoDB Local, all counted")
    print("$ per million views = the beacon's API Gateway (where used) + Lambda + DynamoDB "
          "(the page and its content come from CloudFront's cache).")
    deployed = float(rows[-1][7])
    ok = all(int(r[5]) <= ITEM_WRITE_TARGET for r in rows[1:]) and deployed < COST_GOAL
    print(f"goal: under ${COST_GOAL:.2f} per million views: {'met' if deployed < COST_GOAL else 'NOT met'} "
          f"(${deployed:.2f})")
    return 0 if ok else 1


def function_url(share_id: str, document_id: str, beacons: int = 50, rounds: int = 2000) -> tuple[float, int]:
    """(ms of event translation per beacon, beacons counted): the share function's front
    door. `beacons` real beacons go through edge.handle and the app (DynamoDB Local), each
    from its own address; then the translation alone (request in, answer out) is timed."""
    from chalicelib.entrypoints import edge
    from chalicelib.wiring import new_context

    os.environ["DOCPUB_VIEW_FLUSH_SECONDS"] = os.environ["DOCPUB_SHARE_CACHE_SECONDS"] = "0"  # counted at once
    views = new_context().views
    ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"

    def event(n: int) -> dict:
        path = f"/d/{share_id}/view"
        return {"version": "2.0", "rawPath": path, "rawQueryString": "v=3", "cookies": [],
                "headers": {"user-agent": ua, "x-docpub-site": "main", "content-length": "0"},
                "requestContext": {"requestId": f"r{n}", "domainName": "x.lambda-url.us-east-1.on.aws",
                                   "http": {"method": "POST", "path": path, "sourceIp": f"198.18.{n // 256}.{n % 256}",
                                            "userAgent": ua}},
                "isBase64Encoded": False}

    before = views.counts(document_id, "2000-01-01", "2100-01-01").total
    for n in range(beacons):
        answer = edge.handle(event(n), None)
        assert answer["statusCode"] == 204, answer
    after = views.counts(document_id, "2000-01-01", "2100-01-01").total
    assert after - before == beacons, (before, after)
    sample = event(0)
    reply = {"statusCode": 204, "headers": {"Cache-Control": "no-store", "X-Robots-Tag": "noindex, nofollow",
                                            "X-Content-Type-Options": "nosniff"},
             "multiValueHeaders": {}, "body": ""}
    start = time.perf_counter()
    for _ in range(rounds):
        edge.url_response(reply) if edge.rest_event(sample) else None
    return (time.perf_counter() - start) / rounds * 1000, after - before


def run(name: str, flush: str, cache: str, args, meter: Meter, current: dict) -> list:
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key
    from chalicelib.wiring import new_context
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.views import ViewService
    from chalicelib.services.workspaces import WorkspaceService
    from tests.helpers import FakeClock

    os.environ["DOCPUB_VIEW_FLUSH_SECONDS"], os.environ["DOCPUB_SHARE_CACHE_SECONDS"] = flush, cache
    clock = FakeClock()
    setup = new_context(clock=clock)
    _, key = WorkspaceService(setup).create_workspace("Viral", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(setup)
    first = documents.publish(who, PublishRequest(title="Viral", html="<p>v1</p>")).response
    for n in (2, 3):
        documents.publish(who, PublishRequest(title="Viral", html=f"<p>v{n}</p>", document_id=first.document_id))
    share_id = setup.documents.get(first.document_id).share_id

    # Each instance: its own context (clock) and view service (buffer, link cache), as in Lambda.
    clocks = [FakeClock(clock.now) for _ in range(args.instances)]
    instances = [ViewService(new_context(clock=c)) for c in clocks]
    current["t"] = clock.now
    ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
    lock = threading.Lock()
    busy = [threading.Lock() for _ in instances]  # one request at a time per instance, as in Lambda
    spent = [0.0]
    meter.reset()

    def view(i: int) -> None:
        t = clock.now + i / args.rate
        n = i % args.instances
        with busy[n]:
            clocks[n].now = t
            with lock:
                current["t"] = max(current["t"], t)
            start = time.perf_counter()
            instances[n].record(share_id, None, None, f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", ua, {})
            with lock:
                spent[0] += time.perf_counter() - start

    next_view = [0]

    def worker() -> None:
        while True:
            with lock:
                i = next_view[0]
                next_view[0] += 1
            if i >= args.views:
                return
            view(i)

    threads = [threading.Thread(target=worker) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    measured = (dict(meter.calls), meter.read_units, meter.write_units, dict(meter.item_writes))
    flushes = 0
    for n, service in enumerate(instances):  # what is still added up goes out with the next beacon
        if service.buffer.pending():
            clocks[n].now += 2
            service.record(share_id, None, None, "192.0.2.1", ua, {})
            flushes += 1
    counted = setup.views.counts(first.document_id, "2000-01-01", "2100-01-01").total
    assert counted == args.views + flushes, (counted, args.views, flushes)  # nothing lost
    calls, read_units, write_units, item_writes = measured
    return {"calls": sum(calls.values()) / args.views, "reads": read_units / args.views,
            "writes": write_units / args.views, "hottest": max(item_writes.values()) if item_writes else 0,
            "service_ms": spent[0] / args.views * 1000, "share_id": share_id, "document_id": first.document_id}


# ------------------------------------------------------------------ all-in, before and after issue 38

"""`--all-in`: what a million views of a public link cost with CloudFront included, as
deployed before issue 38 (the page and content from the share function on a cache miss,
a beacon through the function per view) and after it (page and content static in S3,
the beacon a cached object counted from CloudFront's real-time logs through a Kinesis
stream), in one run, on moto in-process (no engines needed).

Measured here: the bytes of a view (the page and content as written, gzip as CloudFront
compresses them), the storage calls of a page miss and a content miss through the app,
of the beacon (the view service at the deployed settings over many instances) and of
counting one stream batch (services/view_logs.count_records on `--views-per-batch`
real-time records, each from its own address). Modelled, and said so: DynamoDB units
from the calls (1 write unit per item write, 2 in a transaction; 0.5 read unit per
eventually consistent item read, 1 strongly consistent: every item here is under 1 KB /
4 KB), Lambda time as in-region time (2 ms + 4 ms per storage call + the parsing
measured here), hit ratios (80 % page, 95 % content, as docs/deploy.md) and how many
views one batch holds (the mapping's BatchSize, 1,000, for a link seen 1,000 times a
minute or more, a million in under 17 hours; a slower link's batch is a minute's views,
one invocation a minute: `--views-per-batch 500` is a million views in about 33 hours). Real-time logs and Kinesis at AWS's us-east-1 prices:
$0.01 per million log lines, $0.014 per million PUT payload units (a record of ~300
bytes is one 25 KB unit), $0.015 per shard-hour (1 shard: $10.95 a month, fixed,
whatever the views; spread over `--views-per-month` in the last line)."""

CLOUDFRONT_PER_10K_REQUESTS = 0.0100
CLOUDFRONT_PER_GB = 0.085
CLOUDFRONT_FUNCTION_PER_MILLION = 0.10
S3_GET_PER_1000 = 0.0004
PAGE_HIT, CONTENT_HIT = 0.80, 0.95
REQUESTS_PER_VIEW = 3  # page, content, beacon (docs/deploy.md)
HEADER_BYTES = 600  # response headers per answer (CloudFront's and ours)
LOG_FUNCTION_GB = 0.5  # ViewLogFunction's memory
REALTIME_LOG_LINES_PER_MILLION = 0.01  # CloudFront real-time logs
KINESIS_PUT_UNITS_PER_MILLION = 0.014  # one 25 KB payload unit per record
KINESIS_SHARD_HOUR = 0.015
SHARD_MONTH = KINESIS_SHARD_HOUR * 730
ALL_IN_GOAL, ORIGIN_GOAL, ORIGIN_REQUESTS_GOAL = 6.00, 0.10, 1.0


class Units:
    """Storage calls and modelled DynamoDB units, S3 GETs, from botocore hooks on moto."""

    def __init__(self):
        from chalicelib.adapters.aws import clients as aws

        self.reset()
        aws.dynamodb().meta.events.register("before-parameter-build.dynamodb", self._dynamodb)
        aws.s3().meta.events.register("before-parameter-build.s3", self._s3)

    def reset(self):
        self.calls, self.reads, self.writes, self.s3_gets = 0, 0.0, 0.0, 0

    def snapshot(self) -> tuple[int, float, float, int]:
        return self.calls, self.reads, self.writes, self.s3_gets

    def _dynamodb(self, params, model, **_kwargs):
        self.calls += 1
        name = model.name
        if name == "TransactWriteItems":
            self.writes += 2 * len(params["TransactItems"])
        elif name in ("PutItem", "UpdateItem", "DeleteItem"):
            self.writes += 1
        elif name == "BatchWriteItem":
            self.writes += sum(len(v) for v in params["RequestItems"].values())
        elif name == "GetItem":
            self.reads += 1 if params.get("ConsistentRead") else 0.5
        elif name == "BatchGetItem":
            self.reads += sum(len(v["Keys"]) * (1 if v.get("ConsistentRead") else 0.5)
                              for v in params["RequestItems"].values())
        elif name == "Query":
            self.reads += 1 if params.get("ConsistentRead") else 0.5

    def _s3(self, params, model, **_kwargs):
        self.s3_gets += model.name == "GetObject"


def lambda_cost(invocations: float, ms_each: float, gb: float = LAMBDA_MEMORY_GB) -> float:
    return invocations * (LAMBDA_REQUEST_PER_MILLION / 1e6 + LAMBDA_GB_SECOND * gb * ms_each / 1000)


def dynamodb_cost(reads: float, writes: float) -> float:
    return reads * READ_UNIT_PER_MILLION / 1e6 + writes * WRITE_UNIT_PER_MILLION / 1e6


def representative_html(size: int = 50_000) -> str:
    """A report of varied prose (seeded), about `size` bytes: compresses like real text."""
    import random

    rng = random.Random(38)
    words = ("the a of to and in is that for on with as by it this are be from or at an which was we our "
             "results quarter revenue growth customers report model latency budget team launch region cost "
             "analysis figure table section summary risk plan review metric weekly baseline forecast").split()
    parts, total, n = ["<!doctype html><html><head><title>Report</title></head><body><h1>Quarterly report</h1>"], 0, 0
    while total < size:
        n += 1
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + "."
        chunk = (f"<h2>Section {n}</h2>" if n % 12 == 1 else "") + f"<p>{sentence} {rng.randint(1, 9999)}</p>"
        parts.append(chunk)
        total += len(chunk)
    return "".join(parts) + "</body></html>"


def all_in(args) -> int:
    import gzip

    import moto

    from bench._common import fake_aws_env

    fake_aws_env()
    os.environ.update({"DOCPUB_TABLE": "bench-viral", "DOCPUB_BUCKET": "bench-viral", "DOCPUB_STATIC_PAGES": "on",
                       "DOCPUB_BASE_URL": "https://docs.example.com", "DOCPUB_VIEW_RATE_LIMIT": "30",
                       "DOCPUB_VIEW_FLUSH_SECONDS": "1", "DOCPUB_SHARE_CACHE_SECONDS": "5"})
    with moto.mock_aws():
        from chalice.test import Client

        from app import app
        from chalicelib import wiring
        from chalicelib.adapters.aws.schema import ensure_storage
        from chalicelib.domain import view_logs as log_lines
        from chalicelib.domain.view_logs import AddressCaps
        from chalicelib.models import PublishRequest
        from chalicelib.services.auth import credentials_from_key
        from chalicelib.services.documents import DocumentService
        from chalicelib.services.view_logs import count_records
        from chalicelib.services.views import ViewService
        from chalicelib.services.workspaces import WorkspaceService
        from tests.cloudfront_logs import CHROME, realtime_beacon
        from tests.helpers import FakeClock

        ensure_storage()
        wiring.reset()
        clock = FakeClock()
        ctx = wiring.new_context(clock=clock)
        units = Units()
        _, key = WorkspaceService(ctx).create_workspace("Viral", "pro")
        html = representative_html()
        done = DocumentService(ctx).publish(credentials_from_key(key.api_key),
                                            PublishRequest(title="Quarterly report", html=html)).response
        doc = ctx.documents.get(done.document_id)
        share = doc.share_id
        page = ctx.static.get("main", f"/d/{share}")
        content = ctx.static.get("main", f"/d/{share}/v/{doc.latest_version_id}")
        assert page is not None and content is not None
        page_gz, content_gz = len(gzip.compress(page.body, 6)), len(gzip.compress(content.body, 6))
        bytes_per_view = page_gz + content_gz + REQUESTS_PER_VIEW * HEADER_BYTES

        # Before: a page miss and a content miss through the function (the app), and the beacon.
        with Client(app) as client:
            units.reset()
            assert client.http.get(f"/d/{share}").status_code == 200
            page_miss = units.snapshot()
            units.reset()
            assert client.http.get(f"/d/{share}/v/{doc.latest_version_id}").status_code == 200
            content_miss = units.snapshot()
        clocks = [FakeClock(clock.now) for _ in range(args.instances)]
        instances = [ViewService(wiring.new_context(clock=c)) for c in clocks]
        units.reset()
        for i in range(args.views):
            n = i % args.instances
            clocks[n].now = clock.now + i / args.rate
            instances[n].record(share, None, None, f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", CHROME, {})
        beacon_calls, beacon_reads, beacon_writes, _ = (x / args.views for x in units.snapshot())

        # After: one stream batch of the link's beacons, counted (and parsed alone, timed).
        now_ms = int(clock.now * 1000)
        lines = [realtime_beacon(share, now_ms + i, 1, ip=f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}")
                 for i in range(args.views_per_batch)]
        start = time.perf_counter()
        for _ in range(5):
            for text in lines:
                log_lines.parse(text, log_lines.REALTIME_FIELDS)
        parse_ms = (time.perf_counter() - start) / 5 * 1000
        units.reset()
        records = [(str(10**20 + i), (text + "\n").encode()) for i, text in enumerate(lines)]
        report = count_records(ctx, "shardId-000000000000", records, AddressCaps())
        assert report.counted == args.views_per_batch, report
        file_calls, file_reads, file_writes, _ = units.snapshot()

    million = 1e6
    cloudfront = REQUESTS_PER_VIEW * million / 1e4 * CLOUDFRONT_PER_10K_REQUESTS
    data = bytes_per_view * million / 1e9 * CLOUDFRONT_PER_GB

    def miss_cost(miss: tuple[int, float, float, int], count: float) -> float:
        calls, reads, writes, gets = miss
        return (lambda_cost(count, LAMBDA_BASE_MS + LAMBDA_MS_PER_CALL * (calls + gets))
                + dynamodb_cost(reads * count, writes * count) + gets * count * S3_GET_PER_1000 / 1000)

    page_misses, content_misses = million * (1 - PAGE_HIT), million * (1 - CONTENT_HIT)
    before_beacon = (lambda_cost(million, LAMBDA_BASE_MS + LAMBDA_MS_PER_CALL * beacon_calls)
                     + dynamodb_cost(beacon_reads * million, beacon_writes * million))
    before_misses = miss_cost(page_miss, page_misses) + miss_cost(content_miss, content_misses)
    before_origin = before_beacon + before_misses
    files = million / args.views_per_batch
    file_ms = LAMBDA_BASE_MS + LAMBDA_MS_PER_CALL * file_calls + parse_ms  # the records come in the event
    after_origin = lambda_cost(files, file_ms, LOG_FUNCTION_GB) + dynamodb_cost(file_reads * files, file_writes * files)
    realtime_logs = million * REALTIME_LOG_LINES_PER_MILLION / 1e6  # one line per view: the beacon
    stream_puts = million * KINESIS_PUT_UNITS_PER_MILLION / 1e6
    shard_share = SHARD_MONTH * million / args.views_per_month
    after_edge_extra = million * CLOUDFRONT_FUNCTION_PER_MILLION / 1e6  # StaticRouteFunction on the page request
    after_static_gets = (page_misses + content_misses) * S3_GET_PER_1000 / 1000
    before_total = cloudfront + data + before_origin
    after_total = cloudfront + data + after_edge_extra + after_static_gets + realtime_logs + stream_puts + after_origin
    with_shard = after_total + shard_share
    break_even = SHARD_MONTH / max(ALL_IN_GOAL - after_total, 1e-9) * million
    before_requests = (million + page_misses + content_misses) / 1000
    after_requests = files / 1000

    print_header(f"A public link, all-in: a million views, before and after issue 38 (moto, in-process; "
                 f"{args.views} beacons over {args.instances} instances, {args.views_per_batch} views per stream batch)")
    print(f"a view: page {len(page.body):,} B ({page_gz:,} gzip), content {len(content.body):,} B ({content_gz:,} gzip), "
          f"{REQUESTS_PER_VIEW} answers' headers {REQUESTS_PER_VIEW * HEADER_BYTES:,} B: {bytes_per_view:,} B to the viewer")
    print(f"page miss: {page_miss[0]} DynamoDB calls, {page_miss[3]} S3 GETs; content miss: {content_miss[0]} calls, "
          f"{content_miss[3]} S3 GETs; beacon: {beacon_calls:.3f} calls, {beacon_reads:.3f} read and "
          f"{beacon_writes:.3f} write units per view; a stream batch of {args.views_per_batch} views: {file_calls} calls, "
          f"{file_reads:g} read and {file_writes:g} write units, {parse_ms:.1f} ms parsing\n")
    rows = [
        ["CloudFront requests (3 per view)", f"{cloudfront:.2f}", f"{cloudfront:.2f}"],
        [f"CloudFront data ({bytes_per_view / 1e3:.1f} KB per view)", f"{data:.2f}", f"{data:.2f}"],
        ["CloudFront Function (StaticRouteFunction, the page request)", "0.00", f"{after_edge_extra:.2f}"],
        ["S3 GET, static copies on a miss (80 % / 95 % hits)", "0.00", f"{after_static_gets:.2f}"],
        ["origin: page + content misses (function, DynamoDB, S3)", f"{before_misses:.2f}", "0.00"],
        ["origin: view beacon (function URL, DynamoDB)", f"{before_beacon:.2f}", "0.00"],
        ["CloudFront real-time logs ($0.01 per million lines, 1 per view)", "0.00", f"{realtime_logs:.3f}"],
        ["Kinesis PUT payload units ($0.014 per million, 1 per view)", "0.00", f"{stream_puts:.3f}"],
        ["origin: counting the stream's batches (function, DynamoDB)", "0.00", f"{after_origin:.3f}"],
        ["**origin**", f"**{before_origin:.2f}**", f"**{after_origin:.3f}**"],
        ["**all-in, $ per million views**", f"**{before_total:.2f}**", f"**{after_total:.2f}**"],
        ["origin requests per 1,000 views (after: counting invocations)", f"{before_requests:.0f}",
         f"{after_requests:.2f}"],
    ]
    print_table(["per million views of a public link", "before (function on a miss, beacon per view)",
                 "after (static in S3, views from the real-time logs)"], rows)
    print(f"\nfixed: 1 Kinesis shard, ${KINESIS_SHARD_HOUR} per shard-hour = ${SHARD_MONTH:.2f} a month whatever the "
          f"views; spread over {args.views_per_month / 1e6:g} million views a month: +${shard_share:.2f} per million, "
          f"all-in ${with_shard:.2f}; the all-in goal holds with the shard from "
          f"{break_even / 1e6:.1f} million views a month")
    ok = after_total <= ALL_IN_GOAL and after_origin <= ORIGIN_GOAL and after_requests <= ORIGIN_REQUESTS_GOAL
    print(f"\ngoal: all-in at most ${ALL_IN_GOAL:.2f} (${after_total:.2f}), origin at most ${ORIGIN_GOAL:.2f} "
          f"(${after_origin:.3f}), at most {ORIGIN_REQUESTS_GOAL:g} origin request per 1,000 views "
          f"({after_requests:.2f}): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
