"""Issue 33 finding 5: pending uploads are bounded (contract 4, "Bounds, second pass"),
on both stores, through the services on the injected clock:

- at most 10 pending (created, neither published nor expired) per workspace; the 11th
  is 429 until one is published or expires;
- their declared sizes count in `usage.storage_bytes` and `usage.pending_upload_bytes`
  from creation until published or expired, so a creation (or a publish) that would
  pass the quota is 403 `plan_limit_reached`;
- the local server's PUT is streamed (at most 1 MiB read at a time) and a refused PUT
  leaves no bytes behind.

Old code: 150 uploads in 7.9 s, 8 x 36 MiB stored with `storage_bytes: 0`, ~36 MB of
server memory per PUT in flight."""
from __future__ import annotations

import io
from urllib.parse import parse_qs, urlsplit

import pytest

from chalicelib.domain import limits
from chalicelib.errors import PlanLimitReached, RateLimited, ValidationFailed
from chalicelib.models import PublishRequest
from chalicelib.services.auth import credentials_from_key

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
MIB = 1024 * 1024


@pytest.fixture
def uploads(ctx):
    from chalicelib.services.uploads import UploadService

    return UploadService(ctx)


@pytest.fixture
def who(services):
    _, key = services.workspaces.create_workspace("Uploader", "free")
    return credentials_from_key(key.api_key)


def _usage(services, who) -> dict:
    return services.workspaces.me(who).workspace.usage.model_dump()


def _put(uploads, ticket, data: bytes) -> None:
    """The client's PUT to upload_url: the local server's route on the embedded store;
    deployed, S3 stores what the presigned URL allows (here: the object, as S3 would)."""
    from chalicelib.services.uploads import data_key

    token = parse_qs(urlsplit(ticket.upload_url).query).get("token")
    if token:
        uploads.receive(ticket.upload_id, token[0], io.BytesIO(data), len(data))
    else:
        workspace_id = urlsplit(ticket.upload_url).path.split("/")[-2]
        uploads.ctx.blobs.put_file(data_key(workspace_id, ticket.upload_id), data)


@BOTH
def test_at_most_ten_uploads_pending_at_once(uploads, services, who, clock, storage):
    tickets = [uploads.create(who, f"page{i}.html", 10) for i in range(limits.PENDING_UPLOADS_PER_WORKSPACE)]
    with pytest.raises(RateLimited) as refused:
        uploads.create(who, "one-more.html", 10)
    assert refused.value.status == 429 and refused.value.code == "rate_limited"
    assert 1 <= refused.value.retry_after_seconds <= 3600
    # Publishing one gives its place back.
    _put(uploads, tickets[0], b"<p>hi</p>\n")
    services.documents.publish(who, PublishRequest(title="Up", upload_id=tickets[0].upload_id))  # type: ignore[call-arg]
    uploads.create(who, "now.html", 10)
    with pytest.raises(RateLimited):
        uploads.create(who, "again.html", 10)
    # So does expiring (an hour after creation), without any sweep.
    clock.advance(3600 + 1)
    assert _usage(services, who)["pending_upload_bytes"] == 0
    for i in range(limits.PENDING_UPLOADS_PER_WORKSPACE):
        uploads.create(who, f"later{i}.html", 10)


@BOTH
def test_declared_sizes_count_against_the_quota_until_published_or_expired(uploads, services, who, clock,
                                                                            storage):
    assert _usage(services, who) == {"documents": 0, "versions": 0, "storage_bytes": 0, "pending_upload_bytes": 0}
    first = uploads.create(who, "a.html", MIB)
    uploads.create(who, "b.zip", 36 * MIB)
    uploads.create(who, "c.zip", 36 * MIB)
    assert _usage(services, who)["storage_bytes"] == 73 * MIB
    assert _usage(services, who)["pending_upload_bytes"] == 73 * MIB
    with pytest.raises(PlanLimitReached) as refused:  # 73 + 36 > 100 MiB
        uploads.create(who, "d.zip", 36 * MIB)
    assert refused.value.status == 403 and refused.value.code == "plan_limit_reached"
    details = refused.value.details
    assert details["entitlement"] == "max_storage_bytes" and details["limit"] == limits.FREE_MAX_STORAGE_BYTES
    assert details["current"] == 73 * MIB and "pending uploads" in refused.value.message
    assert _usage(services, who)["pending_upload_bytes"] == 73 * MIB  # the refused one holds nothing
    uploads.create(who, "d.zip", 26 * MIB)  # 99 MiB: fits
    # A publish needs room beside the pending uploads too.
    page = "<p>" + "x" * (2 * MIB) + "</p>"
    with pytest.raises(PlanLimitReached) as refused:
        services.documents.publish(who, PublishRequest(title="Big", html=page))  # type: ignore[call-arg]
    assert refused.value.details["current"] == 99 * MIB
    # Publishing an upload trades its declared size for what the version stores.
    _put(uploads, first, b"<p>small</p>" + b" " * (MIB - 12))
    services.documents.publish(who, PublishRequest(title="Up", upload_id=first.upload_id))  # type: ignore[call-arg]
    usage = _usage(services, who)
    assert usage["pending_upload_bytes"] == 98 * MIB
    assert usage["storage_bytes"] == 98 * MIB + MIB
    # An hour after creation the rest stop counting.
    clock.advance(3600 + 1)
    usage = _usage(services, who)
    assert usage["pending_upload_bytes"] == 0 and usage["storage_bytes"] == MIB
    services.documents.publish(who, PublishRequest(title="Big", html=page))  # type: ignore[call-arg]


class Recording(io.BytesIO):
    """A request body that remembers the largest read asked of it."""

    largest = 0

    def read(self, size: int | None = -1) -> bytes:
        self.largest = max(self.largest, size if size is not None and size >= 0 else len(self.getvalue()))
        return super().read(size)


@BOTH
def test_a_stream_is_stored_whole_or_not_at_all(ctx, storage):
    def chunks(n: int, fail: bool = False):
        for i in range(n):
            yield bytes([65 + i]) * MIB
        if fail:
            raise ValidationFailed.field("body", "ended early")

    ctx.blobs.put_stream("uploads/ws_x/up_whole.bin", chunks(9))
    assert ctx.blobs.get_html("uploads/ws_x/up_whole.bin") == b"".join(chunks(9))
    with pytest.raises(ValidationFailed):
        ctx.blobs.put_stream("uploads/ws_x/up_broken.bin", chunks(2, fail=True))
    assert [k for k, _ in ctx.blobs.list_keys("uploads/ws_x/")] == ["uploads/ws_x/up_whole.bin"]


def test_a_put_is_streamed_and_a_refused_one_leaves_no_bytes(uploads, services, who, ctx):
    """The embedded store's PUT route (deployed, the PUT goes to S3 with its size signed)."""
    from chalicelib.services.uploads import data_key

    size = 5 * MIB + 3
    ticket = uploads.create(who, "site.zip", size)
    token = parse_qs(urlsplit(ticket.upload_url).query)["token"][0]
    workspace_id = ctx.keys.get(who.key_id).workspace_id
    stored = data_key(workspace_id, ticket.upload_id)

    def keys() -> list[str]:
        return [k for k, _ in ctx.blobs.list_keys(f"uploads/{workspace_id}/")]

    # Another length than declared: refused before a byte is read.
    body = Recording(b"x" * (size - 1))
    with pytest.raises(ValidationFailed):
        uploads.receive(ticket.upload_id, token, body, size - 1)
    assert body.largest == 0 and stored not in keys()
    # A body that ends early (the client went away): nothing is left behind.
    with pytest.raises(ValidationFailed):
        uploads.receive(ticket.upload_id, token, Recording(b"x" * (size - 10)), size)
    assert stored not in keys()
    assert [k for k in keys() if "tmp" in k] == []
    # The declared length: read at most 1 MiB at a time, stored whole.
    body = Recording(b"y" * size)
    uploads.receive(ticket.upload_id, token, body, size)
    assert 0 < body.largest <= MIB
    assert ctx.blobs.get_html(stored) == b"y" * size


def test_a_creation_that_lost_every_race_for_its_place_is_busy_not_over_quota(uploads, who, ctx, monkeypatch):
    """Places free and room left, but the claim kept losing to concurrent ones (DynamoDB
    re-reads a bounded number of times): 429 with Retry-After 1, never a false 403."""
    monkeypatch.setattr(ctx.leases, "acquire", lambda *args, **kwargs: False)
    with pytest.raises(RateLimited) as refused:
        uploads.create(who, "page.html", 10)
    assert refused.value.retry_after_seconds == 1
