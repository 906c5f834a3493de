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

Designs (same code, two settings):
- write-through: DOCPUB_VIEW_FLUSH_SECONDS=0, DOCPUB_SHARE_CACHE_SECONDS=0: every
  beacon reads the link with strongly consistent reads and writes its counters
  (today's request pattern; one ADD more than the old layout's two, for the
  per-version item);
- aggregated: 1 s and 5 s, what the deployed stack sets (infra/resources.yaml).

Prices (us-east-1 list prices, on-demand; docs/scaling.md uses this table):
API Gateway REST $3.50 per million requests, Lambda $0.20 per million requests +
$0.0000166667 per GB-s (1 GB function; duration modelled as 2 ms + 4 ms per
DynamoDB call, in-region latency: DynamoDB Local on a loaded 2-core machine is
far slower, its time is printed but not priced), DynamoDB on-demand $0.625 per
million write units and $0.125 per million read units. The last column drops
API Gateway (a beacon sent to a Lambda function URL behind CloudFront): what
the $2 goal needs, not built yet (docs/scaling.md).
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

DESIGNS = {"write-through (today's pattern)": ("0", "0"), "aggregated (after)": ("1", "5")}


def cost_per_million(calls_per_view: float, read_units_per_view: float, write_units_per_view: float
                     ) -> tuple[float, float, int]:
    """($ per million views with API Gateway, without it, priced Lambda ms per beacon)."""
    modelled_ms = math.ceil(LAMBDA_BASE_MS + LAMBDA_MS_PER_CALL * calls_per_view)
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
        rows = [run(name, flush, cache, args, meter, current) for name, (flush, cache) in DESIGNS.items()]
    finally:
        running.stop()
    print_header(f"A viral link: {args.views} views at {args.rate}/s over {args.instances} function instances, "
                 "DynamoDB Local")
    print_table(["design", "origin requests / 1k views", "DynamoDB calls / 1k", "read units / 1k",
                 "write units / 1k", "hottest item writes/s", "ms / beacon here (priced)",
                 "$ / million views", "$ / million, no API Gateway"],
                [r[:-1] for r in rows])
    baseline, after = rows[0][-1], rows[1][-1]
    print(f"after / write-through cost: {after / baseline:.2f}x")
    print("$ per million views = API Gateway + Lambda + DynamoDB for the beacon (page and content from the edge).")
    return 0 if all(int(r[5]) <= ITEM_WRITE_TARGET for r in rows[1:]) else 1


def run(name: str, flush: str, cache: str, args, meter: Meter, current: dict) -> list:
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key
    from chalicelib.services.context import Context
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.views import ViewService
    from chalicelib.services.workspaces import WorkspaceService
    from tests.helpers import FakeClock

    os.environ["DOCPUB_VIEW_FLUSH_SECONDS"], os.environ["DOCPUB_SHARE_CACHE_SECONDS"] = flush, cache
    clock = FakeClock()
    setup = Context(clock=clock)
    _, key = WorkspaceService(setup).create_workspace("Viral", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(setup)
    first = documents.publish(who, PublishRequest(title="Viral", html="<p>v1</p>")).response
    for n in (2, 3):
        documents.publish(who, PublishRequest(title="Viral", html=f"<p>v{n}</p>", document_id=first.document_id))
    share_id = setup.documents.get(first.document_id)["share_id"]

    # Each instance: its own context (clock) and view service (buffer, link cache), as in Lambda.
    clocks = [FakeClock(clock.now) for _ in range(args.instances)]
    instances = [ViewService(Context(clock=c)) for c in clocks]
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
    per_k = 1000 / args.views
    hottest = max(item_writes.values()) if item_writes else 0
    service_ms = spent[0] / args.views * 1000
    calls_per_view = sum(calls.values()) / args.views
    cost, without, modelled_ms = cost_per_million(calls_per_view, read_units / args.views, write_units / args.views)
    return [name, f"{1000:.0f}", f"{calls_per_view * 1000:.0f}", f"{read_units * per_k:.0f}",
            f"{write_units * per_k:.0f}", str(hottest), f"{service_ms:.0f} ({modelled_ms})",
            f"{cost:.2f}", f"{without:.2f}", cost]


if __name__ == "__main__":
    sys.exit(main())
