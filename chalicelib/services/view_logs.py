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

The per-address cap holds across batches: an address reloading in a loop spans many
batches (1,000 records or 60 s each), so the counts are carried from one batch to the
next in the counting process's memory (domain/view_logs.AddressCaps: per document,
address key and window), not in storage (a claimed counter per address per batch would
be a write per viewer: at $0.625 per million write units at least $0.63 more per million
views, ~$1.25 as a 2-unit conditional claim, over the $6.00 goal from $5.61). That is
enough because one process sees the stream in order: the `ViewLogStream` has one shard
and the mapping reads it with one invocation at a time (`ShardCount: 1`,
`ParallelizationFactor: 1`, infra/resources.yaml); the entrypoint keeps one
`AddressCaps` per process. What is still lost: a new instance (a cold start, a deploy,
a crashed or timed-out invocation, a second shard or a higher parallelization factor,
each reader with its own counts) starts from empty counts, so an address may have one
more cap counted per window per new instance (or per concurrent reader); a batch that
fails for good (20 retries) leaves its admissions in the counts (they may hold back that
address's later views in the window); the counts'
bound (600,000, the shard's whole capacity in a default window) and its window pruning
are in AddressCaps. `count_log` caps a file on its own unless given an `AddressCaps`
(a backfill of many files passes one, in the files' order).

Idempotent per log file and line: the file's tallies (a function of its lines and the
cap decisions) are written in batches named `<file>#<n>`, each batch with its marker in one
atomic step (`ViewCounterRepository.add_views_once`): a retried file (Lambda retries,
a duplicate notification) adds nothing twice, and a file cut off half-way finishes
its remaining batches on the retry. A retry gets the cap decisions of its first attempt
(AddressCaps remembers them by the batch's name), so its tallies are the same, not capped
by its own first attempt; a retry in a new instance may admit more (empty counts), so
the tally batches are cut from every tally the file could make before the cap (the
same cut whatever the cap decides) and none is written twice. A stream batch is named by
its shard and its first and last sequence numbers: Lambda retries a failed batch as the same records (the event
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


def count_records(ctx: Context, shard_id: str, records: Sequence[tuple[str, Optional[bytes]]],
                  caps: view_logs.AddressCaps) -> LogReport:
    """Count one batch of real-time log records read from a stream shard: (sequence number,
    data) in order, data None when it could not be decoded (malformed). Named by the shard
    and the batch's first and last sequence numbers: the same batch again adds nothing.
    `caps`: the process's per-address counts, carried from batch to batch."""
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
    report = count_log(ctx, name, lines, view_logs.REALTIME_FIELDS, caps)
    report.lines += unreadable
    report.malformed += unreadable
    return report


def count_log(ctx: Context, log_name: str, lines: Iterable[str],
              fields: Sequence[str] = view_logs.FIELDS, caps: Optional[view_logs.AddressCaps] = None) -> LogReport:
    """Count the beacons of one log file (its name identifies it; its lines in order;
    `fields` unless a `#Fields:` line says otherwise). `caps` carries the per-address
    counts from earlier files or batches; without it the file is capped on its own."""
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
    views = _views(ctx, beacons, report)
    admitted = (caps if caps is not None else view_logs.AddressCaps()).admit(
        log_name, [view.cap for view in views], config.view_rate_limit())
    tallies: dict[_TallyKey, ViewTally] = {}
    for view, ok in zip(views, admitted):
        if not ok:
            report.capped += 1
            continue
        old = tallies.get(view.tally)
        tallies[view.tally] = ViewTally(*view.tally, (old.count if old else 0) + 1,
                                        max(old.last_ms if old else 0, view.at_ms))
    # The batches are cut from every tally the file could have (before the cap), so they are
    # the same on a retry whatever the cap decides then (a new process: counts from 0).
    ordered = sorted({view.tally for view in views})
    file_ref = hashlib.sha256(log_name.encode()).hexdigest()[:32]
    expires_at = ctx.now_ms() // 1000 + MARKER_SECONDS
    for number, start in enumerate(range(0, len(ordered), MAX_TALLIES_PER_BATCH)):
        batch = [tallies[key] for key in ordered[start:start + MAX_TALLIES_PER_BATCH] if key in tallies]
        if not batch:
            continue  # every view of these tallies capped: nothing to write
        report.batches += 1
        if ctx.views.add_views_once(f"{file_ref}#{number}", batch, expires_at):
            report.counted += sum(t.count for t in batch)
        else:
            report.batches_seen_before += 1
    return report


_TallyKey = tuple[str, str, str]  # document, version, UTC day


@dataclass(frozen=True)
class _View:
    """A human beacon of a link anyone may see: what the cap counts it by, what it adds to."""
    cap: view_logs.CapKey
    tally: _TallyKey
    at_ms: int


def _views(ctx: Context, beacons: list[view_logs.Beacon], report: LogReport) -> list[_View]:
    sharing = ShareService(ctx)
    versions: dict[tuple[str, Optional[int]], Optional[tuple[str, str]]] = {}
    window_seconds = config.view_rate_window_seconds()
    views: list[_View] = []
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
        views.append(_View((document_id, limit_key(beacon.client_ip), window),  # IPv6 by its /64, as the function
                           (document_id, version_id, rules.day_of(beacon.at_ms)), beacon.at_ms))
    return views


def _visible(sharing: ShareService, share_id: str, version: Optional[int]) -> Optional[tuple[str, str]]:
    """(document, version) a viewer without cookies sees at this link now, else None."""
    try:
        looked_up = sharing.lookup(share_id, version, consistent=False)
        granted = sharing.access(share_id, None, version, looked_up=looked_up)
    except DocpubError:
        return None  # unknown, withdrawn, expired, protected, members only, no such version
    return granted.doc.document_id, granted.version_id
