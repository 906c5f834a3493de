"""The view-log function (infra/resources.yaml `ViewLogFunction`, issue 38): CloudFront
puts a real-time log record of every static beacon request into the `ViewLogStream`
Kinesis data stream within seconds; Lambda's event source mapping reads it and invokes
this with a batch of records (at most a minute's worth, `MaximumBatchingWindowInSeconds`),
which is counted (services/view_logs.count_records) and the outcome logged with its
numbers as CloudWatch metrics (embedded metric format, namespace `Docpub`: ViewLogLines,
ViewLogViews, ViewLogMalformedLines, ViewLogBatchesSeenBefore), so malformed records show
on a graph without a PutMetricData permission. A failure (storage trouble) raises: Lambda
retries the same batch, and the tally batches already added are not added again.

The per-address cap's counts live in this process (`address_caps()`, one per process,
built on the first batch) and carry over from one batch to the next: the mapping reads
the one shard with one invocation at a time (`ShardCount: 1`, `ParallelizationFactor: 1`),
so one warm instance sees the shard's batches in order. A new instance (a cold start, a
deploy, a crash) starts from empty counts (services/view_logs.py).

The Kinesis event as Lambda delivers it: `Records[]`, each with `eventID`
(`<shard id>:<sequence number>`) and `kinesis.data` (base64) and `kinesis.sequenceNumber`.
CloudFront's standard log files are no longer counted (one path only counts a view).
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from chalicelib.domain.view_logs import AddressCaps

log = logging.getLogger("docpub.view_logs")

METRICS = {"lines": "ViewLogLines", "counted": "ViewLogViews", "malformed": "ViewLogMalformedLines",
           "batches_seen_before": "ViewLogBatchesSeenBefore"}


def shards_of(event: dict) -> dict[str, list[tuple[str, Optional[bytes]]]]:
    """The event's records by shard, in order: (sequence number, data or None if not base64)."""
    shards: dict[str, list[tuple[str, Optional[bytes]]]] = {}
    for record in event.get("Records") or []:
        kinesis = record.get("kinesis") or {}
        sequence = str(kinesis.get("sequenceNumber") or "")
        shard = str(record.get("eventID") or "").rsplit(":", 1)[0] or "shard"
        try:
            data: Optional[bytes] = base64.b64decode(kinesis.get("data") or "", validate=True)
        except (binascii.Error, ValueError, TypeError):
            data = None
        shards.setdefault(shard, []).append((sequence, data))
    return shards


_caps: Optional["AddressCaps"] = None


def address_caps() -> "AddressCaps":
    """This process's per-address counts (built on first use; tests set `_caps` to None)."""
    global _caps
    if _caps is None:
        from chalicelib.domain.view_logs import AddressCaps

        _caps = AddressCaps()
    return _caps


def metric_line(report: dict, now_ms: int) -> str:
    """One CloudWatch embedded-metric-format record of a batch's numbers."""
    return json.dumps({"_aws": {"Timestamp": now_ms, "CloudWatchMetrics": [{
        "Namespace": "Docpub", "Dimensions": [[]],
        "Metrics": [{"Name": name, "Unit": "Count"} for name in METRICS.values()]}]},
        **{name: report[field] for field, name in METRICS.items()}})


def handle(event: dict, context: Any = None) -> dict:
    from chalicelib import logs, wiring
    from chalicelib.services.view_logs import count_records

    logs.configure()
    ctx = wiring.default_context()
    reports = []
    for shard, records in shards_of(event).items():
        report = asdict(count_records(ctx, shard, records, address_caps()))
        print(metric_line(report, ctx.now_ms()), flush=True)
        log.info("view records counted", extra={"result": json.dumps(report, sort_keys=True)})
        reports.append(report)
    return {"batches": reports}
