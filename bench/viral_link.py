"""A viral link on DynamoDB Local: N views of one link, today's write-through
pattern vs the aggregated one, in the same run (make bench-aws).

    .venv/bin/python -m bench.viral_link [--views 3000] [--rate 3000] [--instances 20]

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
    args = parser.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
