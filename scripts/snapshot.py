"""Persist the emulated S3 + DynamoDB to a folder, and restore it.

moto keeps state in memory only. A snapshot is every table item (one JSON
file, rewritten atomically when it changes) plus one file per S3 object
(objects are immutable, so only new ones are copied). The folder stays the
size of the data, however many requests are served.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from chalicelib import config
from chalicelib.adapters.aws import clients as aws


class Snapshotter:
    def __init__(self, data_dir: str):
        self.root = Path(data_dir)
        self.items_file = self.root / "dynamodb-items.json"
        self.objects_dir = self.root / "s3"
        self._last_digest: str | None = None

    def restore(self) -> tuple[int, int]:
        items = 0
        if self.items_file.exists():
            data = json.loads(self.items_file.read_text("utf-8"))
            rows = data.get("items", [])
            client = aws.dynamodb()
            for start in range(0, len(rows), 25):
                chunk = rows[start:start + 25]
                request = {config.table_name(): [{"PutRequest": {"Item": row}} for row in chunk]}
                while request:
                    request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
            items = len(rows)
            self._last_digest = hashlib.sha256(self.items_file.read_bytes()).hexdigest()
        objects = 0
        if self.objects_dir.exists():
            for path in self.objects_dir.rglob("*"):
                if path.is_file():
                    key = path.relative_to(self.objects_dir).as_posix()
                    aws.s3().put_object(Bucket=config.bucket_name(), Key=key, Body=path.read_bytes(),
                                        ContentType="text/html; charset=utf-8")
                    objects += 1
        return items, objects

    def save(self) -> bool:
        """Write what changed since the last save; True if anything did."""
        changed = self._save_items()
        changed = self._save_objects() or changed
        return changed

    def _save_items(self) -> bool:
        rows = []
        paginator = aws.dynamodb().get_paginator("scan")
        for page in paginator.paginate(TableName=config.table_name(), ConsistentRead=True):
            rows.extend(page.get("Items", []))
        rows.sort(key=lambda r: (r["PK"]["S"], r["SK"]["S"]))
        blob = json.dumps({"items": rows}, sort_keys=True, ensure_ascii=False).encode("utf-8")
        digest = hashlib.sha256(blob).hexdigest()
        if digest == self._last_digest:
            return False
        _atomic_write(self.items_file, blob)
        self._last_digest = digest
        return True

    def _save_objects(self) -> bool:
        changed = False
        remote = set()
        paginator = aws.s3().get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=config.bucket_name()):
            for obj in page.get("Contents", []):
                remote.add(obj["Key"])
        local = set()
        if self.objects_dir.exists():
            local = {p.relative_to(self.objects_dir).as_posix() for p in self.objects_dir.rglob("*") if p.is_file()}
        for key in remote - local:
            body = aws.s3().get_object(Bucket=config.bucket_name(), Key=key)["Body"].read()
            _atomic_write(self.objects_dir / key, body)
            changed = True
        for key in local - remote:
            (self.objects_dir / key).unlink(missing_ok=True)
            changed = True
        return changed


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)
