"""View counters in DynamoDB: sharded items in the documents table.

    PK VIEWS#<document_id>  SK D#<YYYY-MM-DD>#<shard:02d>   views            (per day)
    PK VIEWS#<document_id>  SK P#<version_id>#<shard:02d>   views            (per version, all time)
    PK VIEWS#<document_id>  SK T#<shard:02d>                 views, last_ms   (all time)
    PK RATE#view#<scope>#<window>  SK RATE                   hits, expires_at (per-address limit)

Counting is three `UpdateItem … ADD :n` calls on one random shard's day,
version and total items (atomic increments: concurrent writers never lose a
count); `n` is what one function instance added up since its last write
(services/views.py), so a viral link writes each item at most a few times a
second per instance, whatever its views per second (bench/viral_link.py). Not a
transaction on purpose: transactions on the same items conflict under load,
plain ADDs do not. Per-version counts live in their own items: nothing grows
with the number of versions (the old `v#<version_id>` attributes on the total
items are still read, and no longer written).

Reading a document's stats is one Query (all its pages): `SK BETWEEN D#<first day> AND T#~`
returns the window's day items, the version items (`P` sorts between `D` and `T`)
and the total items.
"""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

from chalicelib.adapters.aws.keys import day_sk, total_sk, version_views_sk, views_pk
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction
from chalicelib.domain.views import SHARDS
from chalicelib.ports.views import MAX_TALLIES_PER_BATCH, ViewCounts, ViewTally
from chalicelib.adapters.aws.errors import storage_errors

VERSION_PREFIX = "v#"
TOTALS_PARALLEL = 8  # documents' totals read at once for a listing


@storage_errors
class ViewCounterRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def add_view(self, document_id: str, version_id: str, day: str, now_ms: int, shard: int,
                 count: int = 1) -> None:
        pk = views_pk(document_id)
        self.table.update({"PK": pk, "SK": day_sk(day, shard)}, "ADD #views :n",
                          names={"#views": "views"}, values={":n": count}, returned="NONE")
        self.table.update({"PK": pk, "SK": version_views_sk(version_id, shard)}, "ADD #views :n",
                          names={"#views": "views"}, values={":n": count}, returned="NONE")
        self.table.update({"PK": pk, "SK": total_sk(shard)}, "ADD #views :n SET last_ms = :now",
                          names={"#views": "views"}, values={":n": count, ":now": now_ms}, returned="NONE")

    def add_views_once(self, batch_id: str, tallies: Sequence[ViewTally], expires_at: int) -> bool:
        """One transaction: the batch's marker (`VIEWLOG#<batch>`, only if absent) and one ADD
        per counter item the tallies touch (an item appears once in a transaction: tallies
        of one document share its total item, so they are added up per item first)."""
        if len(tallies) > MAX_TALLIES_PER_BATCH:
            raise ValueError(f"at most {MAX_TALLIES_PER_BATCH} tallies per batch")
        shard = int(hashlib.sha256(batch_id.encode()).hexdigest(), 16) % SHARDS
        items: dict[tuple[str, str], list[int]] = {}
        for tally in tallies:
            pk = views_pk(tally.document_id)
            for sk in (day_sk(tally.day, shard), version_views_sk(tally.version_id, shard), total_sk(shard)):
                entry = items.setdefault((pk, sk), [0, 0])
                entry[0] += tally.count
                entry[1] = max(entry[1], tally.last_ms)
        tx = Transaction()
        tx.put({"PK": f"VIEWLOG#{batch_id}", "SK": "DONE", "expires_at": expires_at},
               "attribute_not_exists(PK)")
        for (pk, sk), (count, last_ms) in items.items():
            if sk.startswith("T#"):
                tx.update({"PK": pk, "SK": sk}, "ADD #views :n SET last_ms = :now", names={"#views": "views"},
                          values={":n": count, ":now": last_ms})
            else:
                tx.update({"PK": pk, "SK": sk}, "ADD #views :n", names={"#views": "views"}, values={":n": count})
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(0):
                return False  # counted before (a retried batch)
            raise
        return True

    def counts(self, document_id: str, first_day: str, last_day: str) -> ViewCounts:
        # Every page: 16 shards a day plus per-version totals can pass DynamoDB's 1 MB page.
        items = self.table.query_all("PK = :pk AND SK BETWEEN :first AND :last",
                                     {":pk": views_pk(document_id), ":first": f"D#{first_day}",
                                      ":last": "T#~"})
        result = ViewCounts()
        for item in items:
            sk = item["SK"]
            if sk.startswith("D#"):
                day = sk[2:12]
                if first_day <= day <= last_day:
                    result.days[day] = result.days.get(day, 0) + item.get("views", 0)
                continue
            if sk.startswith("P#"):
                version_id = sk[2:].rsplit("#", 1)[0]
                result.versions[version_id] = result.versions.get(version_id, 0) + item.get("views", 0)
                continue
            result.total += item.get("views", 0)
            last = item.get("last_ms")
            if last is not None and (result.last_viewed_ms is None or last > result.last_viewed_ms):
                result.last_viewed_ms = last
            for name, value in item.items():
                if name.startswith(VERSION_PREFIX):
                    version_id = name[len(VERSION_PREFIX):]
                    result.versions[version_id] = result.versions.get(version_id, 0) + value
        return result

    def counts_many(self, document_ids: Sequence[str], first_day: str, last_day: str) -> dict[str, ViewCounts]:
        """`counts` per document, TOTALS_PARALLEL documents at a time (one Query each)."""
        ids = list(dict.fromkeys(document_ids))
        if not ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(TOTALS_PARALLEL, len(ids))) as pool:
            return dict(zip(ids, pool.map(lambda d: self.counts(d, first_day, last_day), ids)))

    def totals(self, document_ids: Sequence[str]) -> dict[str, tuple[int, Optional[int]]]:
        """One small Query per document (its total shards only, eventually consistent),
        a few at a time: a page of 20 costs about 10 read units, where a BatchGetItem of
        every shard (16 items of at least 0.5 unit each per document) would cost 160."""
        ids = list(dict.fromkeys(document_ids))
        if not ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(TOTALS_PARALLEL, len(ids))) as pool:
            return dict(zip(ids, pool.map(self._total, ids)))

    def _total(self, document_id: str) -> tuple[int, Optional[int]]:
        items = self.table.query_all("PK = :pk AND begins_with(SK, :total)",
                                     {":pk": views_pk(document_id), ":total": "T#"}, consistent=False)
        total = sum(int(item.get("views", 0)) for item in items)
        last = max((int(item["last_ms"]) for item in items if item.get("last_ms") is not None), default=None)
        return total, last

    def admit(self, scope: str, window: int, limit: int, expires_at: int) -> bool:
        try:
            self.table.update({"PK": f"RATE#view#{scope}#{window}", "SK": "RATE"},
                              "ADD hits :one SET expires_at = :exp",
                              "attribute_not_exists(hits) OR hits < :limit",
                              values={":one": 1, ":exp": expires_at, ":limit": limit})
        except ConditionFailed:
            return False
        return True

    def delete_for_document(self, document_id: str) -> None:
        items = self.table.query_all("PK = :pk", {":pk": views_pk(document_id)})
        self.table.delete_keys([{"PK": i["PK"], "SK": i["SK"]} for i in items])
