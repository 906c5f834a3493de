"""sweep-orphans streams the listing (issue 23): it used to list every S3 key
into memory first and keep every document's version set to the end. Now it
consumes the listing a key at a time and keeps only the current document's
versions, so its memory does not grow with the bucket."""
from __future__ import annotations

import dataclasses
import tracemalloc

import pytest

from chalicelib.ports.records import Document, Version
from chalicelib.services.context import Context
from chalicelib.services.maintenance import sweep_orphans

OBJECTS = 20_000


class Listing:
    """A bucket of OBJECTS version objects (2 per document), produced lazily; every
    one is referenced by its document, so the sweep deletes nothing."""

    def __init__(self, real):
        self.real = real
        self.consumed = 0

    def iter_keys(self, prefix):
        if prefix != "documents/":
            yield from self.real.iter_keys(prefix)
            return
        for n in range(OBJECTS):
            self.consumed += 1
            yield f"documents/ws/doc{n // 2:06d}/v{n % 2}.html", 0.0

    def list_keys(self, prefix):
        assert prefix != "documents/", "the sweep must stream the listing, not take it whole"
        return self.real.list_keys(prefix)

    def __getattr__(self, name):
        return getattr(self.real, name)


class Documents:
    def __init__(self, real):
        self.real = real

    def get_with_versions(self, document_id):
        doc = Document(document_id=document_id, workspace_id="ws", title="t", share_id="s", created_ms=0,
                       updated_ms=0, version_count=2, latest_version_id="v1", latest_size=1)
        return doc, [Version(version_id=f"v{n}", number=n + 1, created_ms=0, size_bytes=1, blob_key="k")
                     for n in range(2)]

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def swept(ctx):
    repos = dataclasses.replace(ctx.repos, blobs=Listing(ctx.repos.blobs), documents=Documents(ctx.repos.documents))
    return Context(repos=repos, clock=ctx.clock), repos.blobs


def peak_bytes(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_sweep_consumes_the_listing_lazily_in_constant_memory(swept):
    from chalicelib.services import cdn, content, documents, uploads  # noqa: F401 - imports are not the sweep's memory

    sweep_ctx, listing = swept
    peak = peak_bytes(lambda: sweep_orphans(sweep_ctx))
    assert listing.consumed == OBJECTS
    # 20,000 keys held at once (as the old list did), or 10,000 version sets, take
    # several MB; streaming keeps a few hundred KB whatever the count.
    assert peak < 1_000_000, peak
