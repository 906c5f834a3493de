"""CloudFront log lines for tests and benchmarks (issue 38): standard log lines in the
documented field order (domain/view_logs.FIELDS: AWS's "Log file fields" table, 33
fields), and real-time log records (REALTIME_FIELDS) in a Kinesis event as Lambda
delivers it."""
from __future__ import annotations

import base64
from datetime import datetime, timezone
from urllib.parse import quote

from chalicelib.domain.view_logs import FIELDS, REALTIME_FIELDS

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
HEADER = ["#Version: 1.0", "#Fields: " + " ".join(FIELDS)]


def line(path: str, at_ms: int, ip: str = "198.51.100.7", query: str = "-", status: int = 200,
         method: str = "GET", user_agent: str = CHROME, result: str = "Hit") -> str:
    moment = datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc)
    row = {
        "date": moment.strftime("%Y-%m-%d"), "time": moment.strftime("%H:%M:%S"), "x-edge-location": "FRA56-P1",
        "sc-bytes": "412", "c-ip": ip, "cs-method": method, "cs(Host)": "d111111abcdef8.cloudfront.net",
        "cs-uri-stem": path, "sc-status": str(status), "cs(Referer)": "-",
        "cs(User-Agent)": quote(user_agent, safe="/();,:."), "cs-uri-query": query, "cs(Cookie)": "-",
        "x-edge-result-type": result, "x-edge-request-id": "SOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==",
        "x-host-header": "docs.example.com", "cs-protocol": "https", "cs-bytes": "390", "time-taken": "0.001",
        "x-forwarded-for": "-", "ssl-protocol": "TLSv1.3", "ssl-cipher": "TLS_AES_128_GCM_SHA256",
        "x-edge-response-result-type": result, "cs-protocol-version": "HTTP/2.0", "fle-status": "-",
        "fle-encrypted-fields": "-", "c-port": "51234", "time-to-first-byte": "0.001",
        "x-edge-detailed-result-type": result, "sc-content-type": "text/plain;%20charset=utf-8",
        "sc-content-len": "0", "sc-range-start": "-", "sc-range-end": "-"}
    return "\t".join(row[name] for name in FIELDS)


def beacon(share_id: str, at_ms: int, version: int | None = 1, **kwargs) -> str:
    return line(f"/d/{share_id}/seen", at_ms, query=f"v={version}" if version else "-", **kwargs)


def realtime(path: str, at_ms: int, ip: str = "198.51.100.7", query: str = "-", status: int = 200,
             method: str = "GET", user_agent: str = CHROME, result: str = "Hit") -> str:
    """One real-time log record's line (the fields of infra/resources.yaml's config, in order)."""
    at_ms = int(at_ms)
    row = {"timestamp": f"{at_ms // 1000}.{at_ms % 1000:03d}", "c-ip": ip, "sc-status": str(status),
           "cs-method": method, "cs-uri-stem": path, "cs-user-agent": quote(user_agent, safe="/();,:."),
           "cs-referer": "https://docs.example.com/", "cs-uri-query": query, "x-edge-result-type": result}
    return "\t".join(row[name] for name in REALTIME_FIELDS)


def realtime_beacon(share_id: str, at_ms: int, version: int | None = 1, **kwargs) -> str:
    return realtime(f"/d/{share_id}/seen", at_ms, query=f"v={version}" if version else "-", **kwargs)


def kinesis_event(lines: list[str | bytes], shard: str = "shardId-000000000000", first: int = 1000,
                  stream_arn: str = "arn:aws:kinesis:us-east-1:123456789012:stream/docpub-views") -> dict:
    """A Kinesis event as Lambda's event source mapping delivers it: one record per line
    (CloudFront puts one log record per Kinesis record), base64 data (a `bytes` item is put
    as is: already base64 or not), sequence numbers rising, the shard in `eventID`."""
    records = []
    for n, item in enumerate(lines):
        sequence = f"4963{first + n:052d}"
        data = item.decode() if isinstance(item, bytes) else base64.b64encode((item + "\n").encode()).decode()
        records.append({
            "kinesis": {"kinesisSchemaVersion": "1.0", "partitionKey": "d111111abcdef8", "sequenceNumber": sequence,
                        "data": data, "approximateArrivalTimestamp": 1795000000.123},
            "eventSource": "aws:kinesis", "eventVersion": "1.0", "eventID": f"{shard}:{sequence}",
            "eventName": "aws:kinesis:record", "invokeIdentityArn": "arn:aws:iam::123456789012:role/view-logs",
            "awsRegion": "us-east-1", "eventSourceARN": stream_arn})
    return {"Records": records}
