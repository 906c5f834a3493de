"""DynamoDB answers a Query one page (at most 1 MB) at a time. A document's view
counters (16 shards per day, per-version attributes on every total item) can pass
that, e.g. after thousands of versions were viewed; its counts must still be whole.
Pages are made small here (as if each were 1 MB) so the test stays fast."""
from __future__ import annotations

DOC = "00000000-0000-4000-8000-000000000001"


def test_counts_read_every_page_of_a_documents_counters(aws, monkeypatch):
    from chalicelib.wiring import build_repositories
    from chalicelib.adapters.aws.table import Table

    views = build_repositories("aws").views
    days = [f"2026-11-{d:02d}" for d in range(1, 11)]
    for i, day in enumerate(days):
        for shard in range(4):
            views.add_view(DOC, f"v_{shard}", day, 1_000 + i * 10 + shard, shard)
    whole = views.counts(DOC, days[0], days[-1])
    assert whole.total == 40

    query = Table.query

    def paged(self, key_condition, values, **kwargs):
        kwargs["limit"] = kwargs.get("limit") or 5  # DynamoDB's own page limit, made small
        return query(self, key_condition, values, **kwargs)

    monkeypatch.setattr(Table, "query", paged)
    counted = views.counts(DOC, days[0], days[-1])
    assert (counted.total, counted.days, counted.versions, counted.last_viewed_ms) == (
        whole.total, whole.days, whole.versions, whole.last_viewed_ms)
    assert counted.days == {day: 4 for day in days}
