"""Signing keys (ports/signing.py): one partition, `SIGNKEYS` / `<kid>`, read with one
Query. Adding a key is one transaction: the new item (`attribute_not_exists`) and
`not_after_ms` on every other key still without one (conditional on that)."""
from __future__ import annotations

import json
from typing import Optional

from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction
from chalicelib.ports.records import SigningKey

PARTITION = "SIGNKEYS"


def _record(item: dict) -> SigningKey:
    not_after = item.get("not_after_ms")
    return SigningKey(kid=item["SK"], alg=item["alg"], public_jwk=json.loads(item["public_jwk"]),
                      holder=item["holder"], created_ms=int(item["created_ms"]),
                      not_after_ms=int(not_after) if not_after is not None else None)


@storage_errors
class SigningKeyRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def list_keys(self) -> list[SigningKey]:
        items = self.table.query_all("PK = :pk", {":pk": PARTITION})
        return sorted((_record(i) for i in items), key=lambda k: (k.created_ms, k.kid))

    def add_key(self, key: SigningKey, retire_others_ms: int) -> bool:
        current = [k for k in self.list_keys() if k.not_after_ms is None and k.kid != key.kid]
        item = {"PK": PARTITION, "SK": key.kid, "alg": key.alg, "holder": key.holder, "created_ms": key.created_ms,
                "public_jwk": json.dumps(dict(key.public_jwk), sort_keys=True)}
        if not current:  # the first key: one conditional put
            try:
                self.table.put(item, "attribute_not_exists(PK)")
            except ConditionFailed:
                return False
            return True
        tx = Transaction()
        tx.put(item, "attribute_not_exists(PK)")
        for other in current:
            tx.update({"PK": PARTITION, "SK": other.kid}, "SET not_after_ms = :t",
                      "attribute_exists(PK) AND attribute_not_exists(not_after_ms)", values={":t": retire_others_ms})
        try:
            tx.commit()
        except ConditionFailed as exc:
            if exc.failed(0):
                return False
            return self.add_key(key, retire_others_ms)  # another key was retired meanwhile: look again
        return True
