"""Workspace exports (ports/exports.py) on both stores: one running export per workspace,
decided atomically (of concurrent starts exactly one is stored), a running export past its
deadline frees the place, an outcome is stored once."""
from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.ports.records import Export
from tests.helpers import run_together

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
NOW = 1_795_000_000_000


def _export(export_id: str, workspace_id: str = "ws_a", now: int = NOW) -> Export:
    return Export(export_id=export_id, workspace_id=workspace_id, status="running", created_ms=now,
                  deadline_ms=now + 900_000, expires_at=now // 1000 + 90_000, requested_by="api_key:k1")


@BOTH
def test_one_running_export_per_workspace(ctx, storage):
    first = _export("exp_aaaaaaaaaaaaaaaa")
    assert ctx.exports.start(first, NOW) is None
    assert ctx.exports.get(first.export_id) == first
    refused = ctx.exports.start(_export("exp_bbbbbbbbbbbbbbbb"), NOW + 1000)
    assert refused == first  # the one running, nothing written
    assert ctx.exports.get("exp_bbbbbbbbbbbbbbbb") is None
    # Another workspace is apart.
    assert ctx.exports.start(_export("exp_cccccccccccccccc", "ws_b"), NOW) is None
    # Finished: the place is free again, and the outcome is stored once.
    done = replace(first, status="ready", finished_ms=NOW + 5000, blob_key="exports/ws_a/x.zip", size_bytes=123,
                   available_until_ms=NOW + 3_605_000)
    assert ctx.exports.finish(done) is True
    assert ctx.exports.get(first.export_id) == done
    assert ctx.exports.finish(replace(done, status="failed", error="late")) is False
    assert ctx.exports.get(first.export_id) == done
    assert ctx.exports.start(_export("exp_dddddddddddddddd", now=NOW + 6000), NOW + 6000) is None


@BOTH
def test_a_stuck_export_frees_the_place_at_its_deadline(ctx, storage):
    stuck = _export("exp_aaaaaaaaaaaaaaaa")
    assert ctx.exports.start(stuck, NOW) is None
    assert ctx.exports.start(_export("exp_bbbbbbbbbbbbbbbb"), stuck.deadline_ms - 1) == stuck
    later = _export("exp_cccccccccccccccc", now=stuck.deadline_ms)
    assert ctx.exports.start(later, stuck.deadline_ms) is None
    # The stuck build's late outcome is still its own (it does not free the newer one's place).
    assert ctx.exports.finish(replace(stuck, status="failed", finished_ms=stuck.deadline_ms + 1, error="x"))
    assert ctx.exports.get(stuck.export_id).status == "failed"
    assert ctx.exports.start(_export("exp_dddddddddddddddd"), stuck.deadline_ms + 2) == later


@BOTH
def test_concurrent_starts_store_exactly_one(ctx, storage):
    ids = [f"exp_{str(i) * 16}" for i in range(6)]
    results, failures = run_together([lambda i=i: ctx.exports.start(_export(i), NOW) for i in ids])
    assert failures == []
    stored = [i for i in ids if ctx.exports.get(i) is not None]
    assert len(stored) == 1
    assert results.count(None) == 1
    assert all(r is not None and r.export_id == stored[0] for r in results if r is not None)


@BOTH
def test_unknown_export_is_none(ctx, storage):
    assert ctx.exports.get("exp_zzzzzzzzzzzzzzzz") is None
    assert ctx.exports.finish(_export("exp_zzzzzzzzzzzzzzzz")) is False


@BOTH
def test_a_streamed_object_larger_than_a_part_and_read_back_in_chunks(ctx, storage):
    """What an export's zip goes through: put_stream (S3: a multipart upload of 8 MiB
    parts) and read_stream (the local server's download); a stream that fails stores nothing."""
    import hashlib
    import os

    from chalicelib.ports import BlobNotFound

    pieces = [os.urandom(3 * 1024 * 1024 + 17) for _ in range(7)]  # ~21 MiB: two full parts and a last one
    ctx.blobs.put_stream("exports/ws_a/exp_aaaaaaaaaaaaaaaa.zip", iter(pieces))
    read = list(ctx.blobs.read_stream("exports/ws_a/exp_aaaaaaaaaaaaaaaa.zip", 1 << 20))
    assert max(len(c) for c in read) <= 1 << 20
    assert hashlib.sha256(b"".join(read)).digest() == hashlib.sha256(b"".join(pieces)).digest()

    def failing():
        yield from pieces[:4]
        raise RuntimeError("the build died")

    with pytest.raises(RuntimeError):
        ctx.blobs.put_stream("exports/ws_a/exp_bbbbbbbbbbbbbbbb.zip", failing())
    with pytest.raises(BlobNotFound):
        ctx.blobs.read_stream("exports/ws_a/exp_bbbbbbbbbbbbbbbb.zip")
    assert [k for k, _ in ctx.blobs.list_keys("exports/")] == ["exports/ws_a/exp_aaaaaaaaaaaaaaaa.zip"]
