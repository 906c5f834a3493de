"""Edge coherence on AWS: CloudFront invalidations, and the DynamoDB record of those
CloudFront did not accept yet (ports/cdn.py).

The distribution is named by `DOCPUB_CDN_DISTRIBUTION_ID`, or by the SSM
parameter `DOCPUB_CDN_DISTRIBUTION_PARAMETER` holds its id (the stack's way: the
function cannot refer to its own distribution directly, that would be a
dependency cycle; the parameter is read once per process).

Pending invalidations: item `CDN#<path>` / `CDN`, listed oldest first through
GSI1 `CDN#PENDING` / `<created_ms:015d>#<path>`; a path pending twice is one
item (attempts counted).
"""
from __future__ import annotations

import uuid
from typing import Optional

from chalicelib.adapters.aws import clients as aws
from chalicelib.adapters.aws.keys import PENDING_INDEX_PK, pending_key
from chalicelib.adapters.aws.table import Table
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.ports.records import PendingInvalidation, from_fields


@storage_errors
class CloudFrontInvalidator:
    enabled = True

    def __init__(self, distribution_id: Optional[str] = None, parameter: Optional[str] = None):
        self._distribution_id = distribution_id
        self._parameter = parameter

    def distribution_id(self) -> str:
        if not self._distribution_id:
            ssm = aws.ssm()
            self._distribution_id = ssm.get_parameter(Name=self._parameter)["Parameter"]["Value"]
        return self._distribution_id

    def invalidate(self, paths: list[str]) -> None:
        cloudfront = aws.cloudfront()
        cloudfront.create_invalidation(
            DistributionId=self.distribution_id(),
            InvalidationBatch={"Paths": {"Quantity": len(paths), "Items": list(paths)},
                               "CallerReference": f"docpub-{uuid.uuid4().hex}"})


@storage_errors
class PendingInvalidationRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def add(self, path: str, reason: str, now_ms: int, error: str) -> None:
        self.table.update(
            pending_key(path),
            "SET #path = :path, reason = :reason, last_error = :error, last_attempt_ms = :now, "
            "created_ms = if_not_exists(created_ms, :now), GSI1PK = :gpk, "
            "GSI1SK = if_not_exists(GSI1SK, :gsk) ADD attempts :one",
            names={"#path": "path"},
            values={":path": path, ":reason": reason, ":error": error, ":now": now_ms,
                    ":gpk": PENDING_INDEX_PK, ":gsk": f"{now_ms:015d}#{path}", ":one": 1})

    def list(self, limit: int) -> list[PendingInvalidation]:
        items, _ = self.table.query("GSI1PK = :pk", {":pk": PENDING_INDEX_PK}, index="GSI1", limit=limit)
        return [from_fields(PendingInvalidation, item) for item in items]

    def remove(self, path: str) -> None:
        self.table.delete_keys([pending_key(path)])
