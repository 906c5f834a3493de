"""Views counted from the CDN's logs (issue 38): a static share page's beacon is a GET
CloudFront answers from a cached empty object (`/d/<share>/seen?v=N`), so no function
runs per view; CloudFront's real-time logs (domain/view_logs.py) carry it within seconds
to a Kinesis data stream, and the `ViewLogFunction` (infra/resources.yaml) counts each
batch of records Lambda reads from it (`count_records`; a batch per minute at most).
`count_log` counts a standard log file the same way (tests, benchmarks, a manual
backfill): deployed, the standard logs are kept for audit and no longer counted, so only
one path counts a view.

The contract's rules, as the function's beacon applies them (services/views.py):
bots (by User-Agent) count nothing; the link must still resolve to a version anyone may
see (a link withdrawn since counts nothing: unknown, disabled, expired, protected or
members-only); at most `view_rate_limit()` views per document per address per window
(`view_rate_window_seconds()`), the window being the request's own time. Prefetches
count nothing without a rule here: the page fetches the beacon only once visible, and
the logs carry no Sec-Purpose.

The per-address cap is applied within one log file or stream batch (an address that
reloads in a loop is in one batch): across batches it is not shared, which bounds what a
flood adds at the cap per batch, not at the cap.

Idempotent per log file and line: the file's tallies (a deterministic function of its
lines) are written in batches named `<file>#<n>`, each batch with its marker in one
atomic step (`ViewCounterRepository.add_views_once`): a retried file (Lambda retries,
a duplicate notification) adds nothing twice, and a file cut off half-way finishes
its remaining batches on the retry. A stream batch is named by its shard and its first
and last sequence numbers: Lambda retries a failed batch as the same records (the event
source mapping neither bisects nor reports partial failures, which would rename them).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from chalicelib import config
from chalicelib.domain import view_logs
from chalicelib.domain.addresses import limit_key
from chalicelib.domain import views as rules
from chalicelib.errors import DocpubError
from chalicelib.ports.views import MAX_TALLIES_PER_BATCH, ViewTally
from chalicelib.services.context import Context
from chalicelib.services.sharing import ShareService

# Batch markers are kept this long: CloudFront may deliver a period's lines up to 24 hours
# late, in a file of their own; a retry of a file comes within minutes.
MARKER_SECONDS = 7 * 24 * 3600


@dataclass
class LogReport:
    lines: int = 0
    beacons: int = 0
    counted: int = 0
    bots: int = 0
    capped: int = 0
    not_visible: int = 0  # the link is withdrawn (or was never public) now
    malformed: int = 0
    batches: int = 0
    batches_seen_before: int = 0
    errors: list[str] = field(default_factory=list)


def count_records(ctx: Context, shard_id: str, records: Sequence[tuple[str, Optional[bytes]]]) -> LogReport:
    """Count one batch of real-time log records read from a stream shard: (sequence number,
    data) in order, data None when it could not be decoded (malformed). Named by the shard
    and the batch's first and last sequence numbers: the same batch again adds nothing."""
    if not records:
        return LogReport()
    lines: list[str] = []
    unreadable = 0  # not base64, not UTF-8, or empty: malformed records
    for _, data in records:
        try:
            text = data.decode("utf-8") if data is not None else ""
        except UnicodeDecodeError:
            text = ""
        found = [line for line in text.splitlines() if line.strip()]
        unreadable += not found
        lines.extend(found)
    name = f"kinesis:{shard_id}:{records[0][0]}:{records[-1][0]}"
    report = count_log(ctx, name, lines, view_logs.REALTIME_FIELDS)
    report.lines += unreadable
    report.malformed += unreadable
    return report


def count_log(ctx: Context, log_name: str, lines: Iterable[str],
              fields: Sequence[str] = view_logs.FIELDS) -> LogReport:
    """Count the beacons of one log file (its name identifies it; its lines in order;
    `fields` unless a `#Fields:` line says otherwise)."""
    report = LogReport()
    names: list[str] = list(fields)
    beacons: list[view_logs.Beacon] = []
    for line in lines:
        if not line.strip():
            continue
        if line.startswith("#"):
            names = view_logs.fields_of(line) or names
            continue
        report.lines += 1
        try:
            beacon = view_logs.parse(line, names)
        except view_logs.Malformed:
            report.malformed += 1
            continue
        if beacon is not None:
            beacons.append(beacon)
    report.beacons = len(beacons)
    tallies = _tally(ctx, beacons, report)
    ordered = sorted(tallies.values(), key=lambda t: (t.document_id, t.version_id, t.day))
    file_ref = hashlib.sha256(log_name.encode()).hexdigest()[:32]
    expires_at = ctx.now_ms() // 1000 + MARKER_SECONDS
    for number, start in enumerate(range(0, len(ordered), MAX_TALLIES_PER_BATCH)):
        batch = ordered[start:start + MAX_TALLIES_PER_BATCH]
        report.batches += 1
        if ctx.views.add_views_once(f"{file_ref}#{number}", batch, expires_at):
            report.counted += sum(t.count for t in batch)
        else:
            report.batches_seen_before += 1
    return report


def _tally(ctx: Context, beacons: list[view_logs.Beacon], report: LogReport) -> dict[tuple[str, str, str], ViewTally]:
    sharing = ShareService(ctx)
    versions: dict[tuple[str, Optional[int]], Optional[tuple[str, str]]] = {}
    per_address: dict[tuple[str, str, int], int] = {}
    tallies: dict[tuple[str, str, str], ViewTally] = {}
    limit, window_seconds = config.view_rate_limit(), config.view_rate_window_seconds()
    for beacon in beacons:
        if rules.is_bot(beacon.user_agent):
            report.bots += 1
            continue
        key = (beacon.share_id, beacon.version)
        if key not in versions:
            versions[key] = _visible(sharing, beacon.share_id, beacon.version)
        seen = versions[key]
        if seen is None:
            report.not_visible += 1
            continue
        document_id, version_id = seen
        window = rules.rate_window(beacon.at_ms, window_seconds)[0]
        address = (document_id, limit_key(beacon.client_ip), window)  # IPv6 by its /64, as the function
        if per_address.get(address, 0) >= limit:
            report.capped += 1
            continue
        per_address[address] = per_address.get(address, 0) + 1
        day = rules.day_of(beacon.at_ms)
        old = tallies.get((document_id, version_id, day))
        tallies[(document_id, version_id, day)] = ViewTally(
            document_id, version_id, day, (old.count if old else 0) + 1, max(old.last_ms if old else 0, beacon.at_ms))
    return tallies


def _visible(sharing: ShareService, share_id: str, version: Optional[int]) -> Optional[tuple[str, str]]:
    """(document, version) a viewer without cookies sees at this link now, else None."""
    try:
        looked_up = sharing.lookup(share_id, version, consistent=False)
        granted = sharing.access(share_id, None, version, looked_up=looked_up)
    except DocpubError:
        return None  # unknown, withdrawn, expired, protected, members only, no such version
    return granted.doc.document_id, granted.version_id
