"""Recipients (ports/recipients.py, contract 7f) on both stores: views counted only for a
recipient that is not revoked, one live code per address, a wrong try counted once per
read, a code used once, the audience by entry newest first."""
from __future__ import annotations

import pytest

from chalicelib.ports.records import RecipientCode

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


@BOTH
def test_views_are_counted_until_revoked_and_restored(ctx, storage):
    repo = ctx.recipients
    assert repo.get("doc_a", "ann@example.com") is None
    assert repo.record_open("doc_a", "ws_a", "ann@example.com", 500, views=0)  # verified, not a view yet
    assert repo.get("doc_a", "ann@example.com").views == 0
    assert repo.record_open("doc_a", "ws_a", "ann@example.com", 1_000)
    assert repo.record_open("doc_a", "ws_a", "ann@example.com", 5_000)
    ann = repo.get("doc_a", "ann@example.com")
    assert (ann.views, ann.first_opened_ms, ann.last_opened_ms, ann.revoked_ms) == (2, 500, 5_000, None)
    assert ann.workspace_id == "ws_a"
    repo.revoke("doc_a", "ws_a", "ann@example.com", 6_000)
    repo.revoke("doc_a", "ws_a", "ann@example.com", 7_000)  # twice: the first time stays
    assert not repo.record_open("doc_a", "ws_a", "ann@example.com", 8_000)
    ann = repo.get("doc_a", "ann@example.com")
    assert (ann.views, ann.revoked_ms) == (2, 6_000)
    # Revoking someone who never opened it records them, revoked.
    repo.revoke("doc_a", "ws_a", "bob@example.com", 6_500)
    assert [(r.email, r.views, r.revoked_ms) for r in repo.list_for_document("doc_a")] == [
        ("ann@example.com", 2, 6_000), ("bob@example.com", 0, 6_500)]
    repo.restore("doc_a", "ann@example.com")
    repo.restore("doc_a", "nobody@example.com")  # harmless
    assert repo.record_open("doc_a", "ws_a", "ann@example.com", 9_000)
    assert repo.get("doc_a", "ann@example.com").views == 3
    assert repo.list_for_document("doc_b") == []


@BOTH
def test_a_code_is_replaced_tried_and_used_once(ctx, storage):
    repo = ctx.recipients
    repo.put_code(RecipientCode("doc_a", "ann@example.com", "h1", 60_000))
    code = repo.get_code("doc_a", "ann@example.com")
    assert code == RecipientCode("doc_a", "ann@example.com", "h1", 60_000, 0)
    assert repo.spend_try(code)
    assert not repo.spend_try(code)  # read before the other try: not counted twice
    code = repo.get_code("doc_a", "ann@example.com")
    assert code.tries == 1
    assert not repo.use_code(RecipientCode("doc_a", "ann@example.com", "h1", 60_000, 0))  # stale
    # A new code replaces the old one, tries back to 0.
    repo.put_code(RecipientCode("doc_a", "ann@example.com", "h2", 90_000))
    fresh = repo.get_code("doc_a", "ann@example.com")
    assert (fresh.code_hash, fresh.tries, fresh.expires_ms) == ("h2", 0, 90_000)
    assert not repo.use_code(code)  # the replaced code
    assert repo.use_code(fresh)
    assert not repo.use_code(fresh)  # once
    assert repo.get_code("doc_a", "ann@example.com") is None
    # A revocation drops the live code.
    repo.put_code(RecipientCode("doc_a", "ann@example.com", "h3", 90_000))
    repo.revoke("doc_a", "ws_a", "ann@example.com", 1)
    assert repo.get_code("doc_a", "ann@example.com") is None


@BOTH
def test_the_audience_by_entry_newest_first(ctx, storage):
    repo = ctx.recipients
    repo.index_audience("doc_1", "ws_a", ["ann@example.com", "@example.com"], [], 1_000)
    repo.index_audience("doc_2", "ws_b", ["@example.com"], [], 2_000)
    repo.index_audience("doc_3", "ws_b", ["bob@other.org"], [], 3_000)
    repo.index_audience("doc_1", "ws_a", ["ann@example.com"], [], 9_000)  # listed already: keeps its time
    found = repo.shared_with(["ann@example.com", "@example.com"])
    assert [(a.entry, a.document_id, a.workspace_id, a.added_ms) for a in found] == [
        ("@example.com", "doc_2", "ws_b", 2_000), ("@example.com", "doc_1", "ws_a", 1_000),
        ("ann@example.com", "doc_1", "ws_a", 1_000)]
    repo.index_audience("doc_1", "ws_a", [], ["@example.com"], 10_000)
    assert [(a.entry, a.document_id) for a in repo.shared_with(["ann@example.com", "@example.com"])] == [
        ("@example.com", "doc_2"), ("ann@example.com", "doc_1")]
    assert repo.shared_with([]) == []


@BOTH
def test_a_deleted_documents_recipients_codes_and_audience_go(ctx, storage):
    repo = ctx.recipients
    repo.record_open("doc_gone", "ws_a", "ann@example.com", 1_000)
    repo.revoke("doc_gone", "ws_a", "bob@example.com", 1_000)
    repo.put_code(RecipientCode("doc_gone", "cy@example.com", "h", 9_000))
    repo.index_audience("doc_gone", "ws_a", ["ann@example.com", "@example.com"], [], 1_000)
    repo.record_open("doc_kept", "ws_a", "ann@example.com", 1_000)
    repo.index_audience("doc_kept", "ws_a", ["@example.com"], [], 2_000)
    repo.delete_for_document("doc_gone", ["ann@example.com", "@example.com"])
    repo.delete_for_document("doc_gone", ["ann@example.com", "@example.com"])  # safe to repeat
    assert repo.list_for_document("doc_gone") == [] and repo.get_code("doc_gone", "cy@example.com") is None
    assert [a.document_id for a in repo.shared_with(["ann@example.com", "@example.com"])] == ["doc_kept"]
    assert [r.email for r in repo.list_for_document("doc_kept")] == ["ann@example.com"]
