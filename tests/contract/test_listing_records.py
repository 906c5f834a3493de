"""A document listing is read from listing records (ports.repositories.LISTING): on
DynamoDB from GSI1, which since issue 23 carries only those attributes, not whole
items. The listing, "find" and the most-viewed ranking must answer exactly what the
whole documents say, on both adapters."""
from __future__ import annotations

import pytest

from chalicelib.models import PublishRequest, UpdateDocumentRequest
from chalicelib.services.auth import credentials_from_key


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_listing_records_answer_what_the_whole_documents_say(services, ctx, clock):
    _, key = services.workspaces.create_workspace("Listing", "pro")
    who = credentials_from_key(key.api_key)
    docs = services.documents
    plain = docs.publish(who, PublishRequest(title="Plain report", html="<p>a</p>")).response
    rich = docs.publish(who, PublishRequest(
        title="Rich report", html="<p>b</p>", description="quarterly numbers", share_enabled=False,
        share_expires_at="2027-03-01T00:00:00Z", share_access="workspace")).response
    clock.advance(1)
    second = docs.publish(who, PublishRequest(title="Rich report", html="<p>c</p>",
                                              document_id=rich.document_id)).response
    docs.delete_version(who, rich.document_id, rich.version_id)  # versions_deleted
    docs.update(who, plain.document_id, UpdateDocumentRequest(description="renamed"))
    ids = [plain.document_id, rich.document_id]
    # From the documents themselves; list items carry the summary's fields (and views).
    whole = {i: s.model_dump() for i, s in docs.summaries(who, ids).items()}
    fields = set(next(iter(whole.values())))
    listed = {d.document_id: d for d in docs.list(who, limit=10).documents}
    assert {i: d.model_dump(include=fields) for i, d in listed.items()} == whole
    assert listed[rich.document_id].version_count == 1 and listed[rich.document_id].share_enabled is False
    assert listed[rich.document_id].latest_version_id == second.version_id
    found = docs.list(who, limit=10, query="quarterly").documents
    assert [d.document_id for d in found] == [rich.document_id]
    assert found[0].model_dump(include=fields) == whole[rich.document_id]
    # The records hold at least LISTING (what the adapter promises), whatever the adapter.
    from chalicelib.ports.repositories import LISTING

    ws = ctx.documents.get(plain.document_id).workspace_id
    for record in ctx.documents.list_all(ws):
        full = ctx.documents.get(record.document_id)
        assert {k: getattr(record, k) for k in LISTING} == {k: getattr(full, k) for k in LISTING}
