"""A viral link against the view-counter design: simulated 10,000 views/s.

    .venv/bin/python -m bench.view_counters [--rate 10000] [--seconds 1] [--shards 16]

Drives the real DynamoDB counter adapter (in-process moto) with `rate` views
per simulated second for `seconds` simulated seconds, the shard of each view
picked the way the view service picks it (uniformly at random), and records
every write the adapter sends (botocore `provide-client-params` hook: table,
key, simulated second). Prints the writes per item per second (DynamoDB takes
at most ~1,000 write units/s per item/partition key) and the calls and items
a stats read costs (one Query, whatever the window). moto's own speed is not
the point: time is simulated, the counts are exact.

Exits non-zero if any item takes 1,000 or more writes in a simulated second
or a stats read takes more than one call.
"""
from __future__ import annotations

import argparse
import collections
import random
import sys
import time
import uuid

from bench._common import fake_aws_env, print_header, print_table

ITEM_WRITE_LIMIT = 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=10_000, help="views per simulated second")
    parser.add_argument("--seconds", type=int, default=1, help="simulated seconds")
    parser.add_argument("--shards", type=int, default=None, help="override the design's shard count")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    fake_aws_env()

    import moto

    mock = moto.mock_aws()
    mock.start()
    try:
        return run(args)
    finally:
        mock.stop()


def run(args) -> int:
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.adapters.aws.schema import ensure_storage
    from chalicelib.adapters.aws.views import ViewCounterRepository
    from chalicelib.domain import views as rules

    ensure_storage()
    shards = args.shards or rules.SHARDS
    rng = random.Random(args.seed)
    repo = ViewCounterRepository()
    document_id = str(uuid.uuid4())
    versions = ["v_first", "v_second"]
    start_ms = 1_795_000_000_000
    writes: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    now = {"second": 0}

    def on_params(params, model, **_kwargs):
        calls[model.name] += 1
        if model.name in ("UpdateItem", "PutItem"):
            key = params["Key"] if "Key" in params else {k: params["Item"][k] for k in ("PK", "SK")}
            writes[(now["second"], key["PK"]["S"], key["SK"]["S"])] += 1

    events = aws.dynamodb().meta.events
    events.register("provide-client-params.dynamodb", on_params, unique_id="bench-view-counters")
    total = args.rate * args.seconds
    wall = time.perf_counter()
    for i in range(total):
        now_ms = start_ms + i * 1000 // args.rate
        now["second"] = (now_ms - start_ms) // 1000
        repo.add_view(document_id, versions[i % 2], rules.day_of(now_ms), now_ms, rng.randrange(shards))
    wall = time.perf_counter() - wall

    per_item = collections.defaultdict(list)  # item → writes in each simulated second
    for (second, pk, sk), count in writes.items():
        per_item[(pk, sk)].append(count)
    peak_item, peak = max(((item, max(counts)) for item, counts in per_item.items()), key=lambda p: p[1])
    per_partition = collections.Counter()
    for (second, pk, _sk), count in writes.items():
        per_partition[(second, pk)] += count

    calls.clear()
    day = rules.day_of(start_ms)
    window = {d: repo.counts(document_id, rules.window(start_ms, d)[0], day) for d in (1, 30, 90)}
    read_calls = calls["Query"] + calls["GetItem"] + calls["BatchGetItem"] + calls["Scan"]
    counted = window[30]

    print_header(f"View counters: {args.rate:,} views/s for {args.seconds} s, {shards} shards")
    print_table(["measure", "value"], [
        ["views simulated", f"{total:,}"],
        ["write calls (UpdateItem ADD)", f"{sum(writes.values()):,} ({sum(writes.values()) / total:.0f} per view)"],
        ["items written", f"{len(per_item)}"],
        ["max writes to one item in a second", f"{peak:,} ({peak_item[1]})"],
        ["mean writes per item per second", f"{sum(writes.values()) / len(per_item) / args.seconds:,.0f}"],
        ["item limit (DynamoDB, write units/s)", f"{ITEM_WRITE_LIMIT:,}"],
        ["same document, one unsharded item would take", f"{args.rate:,} writes/s"],
        ["writes per partition key per second (all shards)", f"{max(per_partition.values()):,}"],
        ["views counted (total / per version)", f"{counted.total:,} / "
                                                + ", ".join(f"{v}: {n:,}" for v, n in sorted(counted.versions.items()))],
        ["stats read, 1/30/90-day windows: calls", f"{read_calls} for 3 reads (Query each)"],
        ["wall time (moto in-process)", f"{wall:.1f} s"],
    ])
    ok = peak < ITEM_WRITE_LIMIT and read_calls == 3 and counted.total == total
    print("\nOK: every item stays under 1,000 writes/s; one Query per stats read" if ok else "\nFAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
