"""The view-log function (infra/resources.yaml `ViewLogFunction`, issue 38): CloudFront
writes a standard log file into the access-log bucket, S3 tells EventBridge, EventBridge
invokes this with the file's bucket and key; the file's beacon lines are counted
(services/view_logs.py) and the outcome is logged with its numbers as CloudWatch metrics
(embedded metric format, namespace `Docpub`: ViewLogLines, ViewLogViews,
ViewLogMalformedLines, ViewLogBatchesSeenBefore), so malformed lines show on a graph
without a PutMetricData permission. A failure raises: EventBridge retries the call, and
the batches already added are not added again.

Also takes S3's own notification shape (`Records[].s3`), for a bucket notification
instead of EventBridge.
"""
from __future__ import annotations

import json
import logging
from dataclasses import asdict
from typing import Any, Iterator
from urllib.parse import unquote_plus

log = logging.getLogger("docpub.view_logs")

METRICS = {"lines": "ViewLogLines", "counted": "ViewLogViews", "malformed": "ViewLogMalformedLines",
           "batches_seen_before": "ViewLogBatchesSeenBefore"}


def files_of(event: dict) -> Iterator[tuple[str, str]]:
    """(bucket, key) of every log file the event names."""
    detail = event.get("detail") or {}
    if detail.get("bucket") and detail.get("object"):
        yield detail["bucket"]["name"], detail["object"]["key"]
    for record in event.get("Records") or []:
        s3 = record.get("s3") or {}
        if s3.get("bucket") and s3.get("object"):
            yield s3["bucket"]["name"], unquote_plus(s3["object"]["key"])


def metric_line(report: dict, now_ms: int) -> str:
    """One CloudWatch embedded-metric-format record of a file's numbers."""
    return json.dumps({"_aws": {"Timestamp": now_ms, "CloudWatchMetrics": [{
        "Namespace": "Docpub", "Dimensions": [[]],
        "Metrics": [{"Name": name, "Unit": "Count"} for name in METRICS.values()]}]},
        **{name: report[field] for field, name in METRICS.items()}})


def handle(event: dict, context: Any = None) -> dict:
    from chalicelib import logs, wiring
    from chalicelib.services.view_logs import count_log

    logs.configure()
    ctx = wiring.default_context()
    reports = []
    for bucket, key in files_of(event):
        report = asdict(count_log(ctx, key, wiring.read_access_log(bucket, key)))
        print(metric_line(report, ctx.now_ms()), flush=True)
        log.info("view log counted", extra={"result": json.dumps(report, sort_keys=True)})
        reports.append(report)
    return {"files": reports}
