"""CloudFront standard log lines (pure, no I/O): what a static share page's view beacon
left in them (issue 38; services/view_logs.py counts it).

The format is AWS's ("Standard logging reference", log file fields): a `#Version:` line,
a `#Fields:` line naming the fields, then one tab-separated line per request, 33 fields
in this order (the legacy standard log; `#Fields:` is honoured when it differs):

    date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status
    cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type
    x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for
    ssl-protocol ssl-cipher x-edge-response-result-type cs-protocol-version fle-status
    fle-encrypted-fields c-port time-to-first-byte x-edge-detailed-result-type
    sc-content-type sc-content-len sc-range-start sc-range-end

Times are UTC; `-` is an empty field; the User-Agent and the query are URL-encoded
(a space is `%20`, possibly twice encoded). A beacon is a GET (or HEAD) of
`/d/<share>/seen` answered 200 or 304 (the cached empty object; 403 means the link has
no static copy any more: not a view). A line that does not parse (too few fields, a
bad date or status: a truncated file) is malformed: skipped and counted, never fatal.

Real-time logs (what is counted deployed, `REALTIME_FIELDS`): CloudFront puts one record
per request into a Kinesis data stream within seconds, a tab-separated line of the fields
the `RealtimeLogConfig` names, in the order of AWS's "Real-time log configuration
fields" list (the order the records carry). Their names differ from the standard log's:
`timestamp` (Unix seconds with milliseconds, `1764331200.123`) instead of `date` and
`time`, `cs-user-agent` and `cs-referer` instead of `cs(User-Agent)` and `cs(Referer)`.
`parse(line, REALTIME_FIELDS)` reads them with the same rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional, Sequence
from urllib.parse import parse_qs, unquote

FIELDS = ("date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) "
          "cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header "
          "cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher "
          "x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port "
          "time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start "
          "sc-range-end").split()
# infra/resources.yaml ViewRealtimeLogConfig's Fields, in this order (a template test checks).
REALTIME_FIELDS = ("timestamp", "c-ip", "sc-status", "cs-method", "cs-uri-stem", "cs-user-agent", "cs-referer",
                   "cs-uri-query", "x-edge-result-type")
REALTIME_NAMES = {"cs-user-agent": "cs(User-Agent)", "cs-referer": "cs(Referer)"}
NEEDED = ("date", "time", "c-ip", "cs-method", "cs-uri-stem", "sc-status", "cs(User-Agent)", "cs-uri-query")
BEACON = re.compile(r"^/d/([A-Za-z0-9_-]{16,64})/seen$")
COUNTED_STATUS = (200, 304)


class Malformed(ValueError):
    """A line that is not a standard log line (truncated, wrong fields)."""


@dataclass(frozen=True)
class Beacon:
    share_id: str
    version: Optional[int]  # the page's `?v=N` (the latest when it was written), None if absent or bad
    client_ip: str
    user_agent: str
    at_ms: int


def fields_of(header: str) -> Optional[list[str]]:
    """The field names of a `#Fields:` line, else None."""
    if not header.startswith("#Fields:"):
        return None
    return header[len("#Fields:"):].split()


def _decode(value: str) -> str:
    if value == "-":
        return ""
    once = unquote(value)
    return unquote(once) if "%" in once else once  # CloudFront encodes some fields twice


def parse(line: str, names: Sequence[str] = FIELDS) -> Optional[Beacon]:
    """The beacon this line records, None for any other request (pages, content, errors),
    Malformed for a line that is not a whole log line."""
    values = line.rstrip("\r\n").split("\t")
    if len(values) < len(names):
        raise Malformed(f"{len(values)} fields, {len(names)} expected")
    row = {REALTIME_NAMES.get(name, name): value for name, value in zip(names, values)}
    if "timestamp" in row:  # a real-time record
        row["date"] = row["time"] = ""
    if any(name not in row for name in NEEDED):
        raise Malformed("a needed field is missing from #Fields")
    try:
        moment = _moment(row)
        status = int(row["sc-status"])
    except ValueError as exc:
        raise Malformed(str(exc)) from exc
    found = BEACON.match(row["cs-uri-stem"])
    if not found or row["cs-method"] not in ("GET", "HEAD") or status not in COUNTED_STATUS:
        return None
    if not row["c-ip"] or row["c-ip"] == "-":
        raise Malformed("no client address")
    query = parse_qs(_decode(row["cs-uri-query"]))
    raw = (query.get("v") or [""])[0]
    version = int(raw) if re.fullmatch(r"[0-9]{1,9}", raw) and int(raw) >= 1 else None
    return Beacon(found.group(1), version, row["c-ip"], _decode(row["cs(User-Agent)"]), moment)


def _moment(row: dict[str, str]) -> int:
    """The request's time in ms: a real-time record's `timestamp`, a standard line's date and time."""
    if "timestamp" in row:
        if not re.fullmatch(r"[0-9]{9,11}(\.[0-9]{1,6})?", row["timestamp"]):
            raise ValueError(f"bad timestamp {row['timestamp'][:20]!r}")
        return round(float(row["timestamp"]) * 1000)
    moment = datetime.strptime(f"{row['date']} {row['time']}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)
