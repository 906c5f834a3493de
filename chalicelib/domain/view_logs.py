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

`AddressCaps`: the per-address cap's counts, carried from one batch to the next in the
counting process's memory (services/view_logs.py says why that is enough and what a
new process loses).
"""
from __future__ import annotations

import re
import sys
from collections import OrderedDict
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


# (document id, address key (domain/addresses.limit_key), window number): what the cap counts by.
CapKey = tuple[str, str, int]


class AddressCaps:
    """How many views each address has had counted per document per window, across the
    batches one process counts (pure: no clock, no I/O; the windows come from the
    beacons' own times). `admit` decides a batch's beacons in order, at most `limit`
    per key, and remembers its decisions under the batch's name: the same batch again
    (Lambda retrying it after a failed write) gets the same decisions, not ones capped
    by its own first attempt, so its tallies, and the store's batch markers, are the same.

    Bounded:
    - windows: only the newest window seen and the one before it are kept (a record may
      arrive a few seconds after the next window began); a beacon of an older window
      (records come seconds late at most, in the stream's order) starts from 0 again;
    - entries: at most `max_entries` (document, address) counts over the windows kept;
      beyond it the older window's go first, then the newest window's smallest counts
      (an address seen once or twice, never the capped reloader), down to three
      quarters of the bound. An address whose count went may have that many views
      counted again within the window. The default, 600,000, is all a shard can carry
      in a default window (1,000 records/s for 600 s), so at the deployed settings no
      count of the current window goes; ~200 bytes each, 92 MB at the bound (measured,
      tracemalloc), in a 512 MB function;
    - batches: the decisions of the last `max_batches` batches (a retry comes before any
      later batch of its shard: the shard waits for it), each at most its own keys.
    """

    def __init__(self, max_entries: int = 600_000, max_batches: int = 16) -> None:
        self.max_entries = max_entries
        self.max_batches = max_batches
        self._windows: dict[int, dict[tuple[str, str], int]] = {}
        self._entries = 0
        self._batches: OrderedDict[str, dict[CapKey, int]] = OrderedDict()

    def __len__(self) -> int:
        return self._entries

    def batches(self) -> int:
        return len(self._batches)

    def count(self, key: CapKey) -> int:
        document_id, address, window = key
        return self._windows.get(window, {}).get((document_id, address), 0)

    def admit(self, batch_id: str, keys: Sequence[CapKey], limit: int) -> list[bool]:
        """Which of a batch's beacons (their keys, in the batch's order) count: a key's
        first ones while its window's count is under `limit`; a batch decided before
        (the same `batch_id`) gets the decisions it had."""
        granted = self._batches.get(batch_id)
        replay = granted is not None
        if granted is None:
            granted = self._batches[batch_id] = {}
            while len(self._batches) > self.max_batches:
                self._batches.popitem(last=False)
        decided = set(granted) if replay else set()
        used: dict[CapKey, int] = {}
        admitted: list[bool] = []
        for key in keys:
            if key in decided:  # the batch again: its first decision stands
                ok = used.get(key, 0) < granted[key]
                used[key] = used.get(key, 0) + ok
            else:
                ok = self._take(key, limit)
                granted[key] = granted.get(key, 0) + ok
            admitted.append(ok)
        return admitted

    def _take(self, key: CapKey, limit: int) -> bool:
        document_id, address, window = key
        newest = max(self._windows, default=window)
        if window > newest:
            for old in [w for w in self._windows if w < window - 1]:
                self._entries -= len(self._windows.pop(old))
        counts = self._windows.setdefault(window, {})
        seen = counts.get((document_id, address), 0)
        if seen >= limit:
            return False
        if not seen:
            self._entries += 1
            document_id = sys.intern(document_id)  # one copy of a viral link's id, not one per address
        counts[(document_id, address)] = seen + 1
        if self._entries > self.max_entries:
            self._shrink()
        return True

    def _shrink(self) -> None:
        """Down to three quarters of the bound: older windows first, then the smallest counts."""
        target = self.max_entries * 3 // 4
        for window in sorted(self._windows)[:-1]:
            self._entries -= len(self._windows.pop(window))
            if self._entries <= target:
                return
        [(window, counts)] = self._windows.items()
        smallest = sorted(counts, key=counts.__getitem__)[:self._entries - target]
        for name in smallest:
            del counts[name]
        self._entries = len(counts)
