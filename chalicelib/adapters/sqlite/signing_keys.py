"""Signing keys (ports/signing.py): one row per key; adding one retires the others in
the same write transaction."""
from __future__ import annotations

import json

from chalicelib.adapters.sqlite.db import Database
from chalicelib.ports.records import SigningKey


def _record(row: dict) -> SigningKey:
    return SigningKey(kid=row["kid"], alg=row["alg"], public_jwk=json.loads(row["public_jwk"]), holder=row["holder"],
                      created_ms=row["created_ms"], not_after_ms=row.get("not_after_ms"))


class SigningKeyRepository:
    def __init__(self, db: Database):
        self.db = db

    def list_keys(self) -> list[SigningKey]:
        return [_record(r) for r in self.db.all("SELECT * FROM signing_keys ORDER BY created_ms, kid", ())]

    def add_key(self, key: SigningKey, retire_others_ms: int) -> bool:
        with self.db.write() as tx:
            if tx.execute("SELECT 1 FROM signing_keys WHERE kid = ?", (key.kid,)).fetchone():
                return False
            tx.execute("UPDATE signing_keys SET not_after_ms = ? WHERE not_after_ms IS NULL", (retire_others_ms,))
            tx.execute("INSERT INTO signing_keys (kid, alg, public_jwk, holder, created_ms) VALUES (?, ?, ?, ?, ?)",
                       (key.kid, key.alg, json.dumps(dict(key.public_jwk), sort_keys=True), key.holder,
                        key.created_ms))
        return True
