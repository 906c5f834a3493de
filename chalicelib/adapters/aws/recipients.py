"""Recipients (ports/recipients.py) on DynamoDB.

| Item | PK | SK | attributes |
|---|---|---|---|
| Recipient | `RCPT#<document_id>` | `R#<email>` | workspace_id, views, first_opened_ms, last_opened_ms, revoked_ms |
| Code | `RCPT#<document_id>` | `C#<email>` | code_hash (keyed hash), expires_ms, tries, expires_at (TTL) |
| Audience entry | `AUD#<entry>` | `<document_id>` | workspace_id, added_ms |

A view is one UpdateItem conditional on `revoked_ms` being absent; a wrong try one
UpdateItem conditional on the hash and tries read; using a code one conditional
delete. TTL only cleans up (every read checks `expires_ms`)."""
from __future__ import annotations

from typing import Optional, Sequence

from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.adapters.aws.keys import audience_key, recipient_code_key, recipient_key, recipients_pk
from chalicelib.adapters.aws.table import ConditionFailed, Table, Transaction
from chalicelib.ports.records import AudienceEntry, Recipient, RecipientCode

SAME_CODE = "code_hash = :h AND tries = :t"


def _recipient(document_id: str, item: dict) -> Recipient:
    return Recipient(document_id=document_id, workspace_id=item.get("workspace_id", ""),
                     email=item["SK"][2:], views=int(item.get("views") or 0),
                     first_opened_ms=item.get("first_opened_ms"), last_opened_ms=item.get("last_opened_ms"),
                     revoked_ms=item.get("revoked_ms"))


@storage_errors
class RecipientRepository:
    def __init__(self, table: Optional[Table] = None):
        self.table = table or Table()

    def get(self, document_id: str, email: str) -> Optional[Recipient]:
        item = self.table.get(recipient_key(document_id, email))
        return _recipient(document_id, item) if item else None

    def list_for_document(self, document_id: str) -> list[Recipient]:
        items = self.table.query_all("PK = :pk AND begins_with(SK, :r)",
                                     {":pk": recipients_pk(document_id), ":r": "R#"}, consistent=True)
        return sorted((_recipient(document_id, i) for i in items), key=lambda r: r.email)

    def record_open(self, document_id: str, workspace_id: str, email: str, now_ms: int, views: int = 1) -> bool:
        try:
            self.table.update(recipient_key(document_id, email),
                              "SET workspace_id = :ws, last_opened_ms = :now, "
                              "first_opened_ms = if_not_exists(first_opened_ms, :now) ADD #views :one",
                              "attribute_not_exists(revoked_ms)", names={"#views": "views"},
                              values={":ws": workspace_id, ":now": now_ms, ":one": views}, returned="NONE")
        except ConditionFailed:
            return False
        return True

    def revoke(self, document_id: str, workspace_id: str, email: str, now_ms: int) -> None:
        tx = Transaction()
        tx.update(recipient_key(document_id, email),
                  "SET workspace_id = :ws, revoked_ms = if_not_exists(revoked_ms, :now)",
                  values={":ws": workspace_id, ":now": now_ms})
        tx.delete(recipient_code_key(document_id, email))
        tx.commit()

    def restore(self, document_id: str, email: str) -> None:
        try:
            self.table.update(recipient_key(document_id, email), "REMOVE revoked_ms", "attribute_exists(PK)",
                              returned="NONE")
        except ConditionFailed:
            pass  # never recorded: nothing to admit again

    def put_code(self, code: RecipientCode) -> None:
        self.table.put({**recipient_code_key(code.document_id, code.email), "code_hash": code.code_hash,
                        "expires_ms": code.expires_ms, "tries": 0, "expires_at": code.expires_ms // 1000 + 3600})

    def get_code(self, document_id: str, email: str) -> Optional[RecipientCode]:
        item = self.table.get(recipient_code_key(document_id, email))
        if item is None:
            return None
        return RecipientCode(document_id=document_id, email=email, code_hash=item["code_hash"],
                             expires_ms=int(item["expires_ms"]), tries=int(item.get("tries") or 0))

    def spend_try(self, code: RecipientCode) -> bool:
        try:
            self.table.update(recipient_code_key(code.document_id, code.email), "ADD tries :one", SAME_CODE,
                              values={":one": 1, ":h": code.code_hash, ":t": code.tries}, returned="NONE")
        except ConditionFailed:
            return False
        return True

    def use_code(self, code: RecipientCode) -> bool:
        tx = Transaction()
        tx.delete(recipient_code_key(code.document_id, code.email), SAME_CODE,
                  values={":h": code.code_hash, ":t": code.tries})
        try:
            tx.commit()
        except ConditionFailed:
            return False
        return True

    def index_audience(self, document_id: str, workspace_id: str, entries: Sequence[str],
                       dropped: Sequence[str], now_ms: int) -> None:
        if dropped:
            self.table.delete_keys([audience_key(entry, document_id) for entry in dropped])
        for entry in entries:
            try:
                self.table.put({**audience_key(entry, document_id), "workspace_id": workspace_id,
                                "added_ms": now_ms}, "attribute_not_exists(PK)")
            except ConditionFailed:
                pass  # listed already: keeps its time

    def delete_for_document(self, document_id: str, entries: Sequence[str]) -> None:
        items = self.table.query_all("PK = :pk", {":pk": recipients_pk(document_id)}, consistent=True)
        keys = [{"PK": i["PK"], "SK": i["SK"]} for i in items]
        keys += [audience_key(entry, document_id) for entry in dict.fromkeys(entries)]
        if keys:
            self.table.delete_keys(keys)

    def shared_with(self, entries: Sequence[str]) -> list[AudienceEntry]:
        found: list[AudienceEntry] = []
        for entry in dict.fromkeys(entries):
            for item in self.table.query_all("PK = :pk", {":pk": f"AUD#{entry}"}):
                found.append(AudienceEntry(entry=entry, document_id=item["SK"], workspace_id=item["workspace_id"],
                                           added_ms=int(item["added_ms"])))
        return sorted(found, key=lambda a: (-a.added_ms, a.document_id, a.entry))
