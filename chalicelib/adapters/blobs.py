"""S3 repository for version HTML. Objects are immutable: one per version."""
from __future__ import annotations

from chalicelib import config
from chalicelib.adapters import aws


def version_key(workspace_id: str, document_id: str, version_id: str) -> str:
    return f"documents/{workspace_id}/{document_id}/{version_id}.html"


def document_prefix(workspace_id: str, document_id: str) -> str:
    return f"documents/{workspace_id}/{document_id}/"


class BlobStore:
    def __init__(self, bucket: str | None = None):
        self._bucket = bucket

    @property
    def bucket(self) -> str:
        return self._bucket or config.bucket_name()

    def put_html(self, key: str, data: bytes, sha256_b64: str | None = None) -> None:
        extra = {"ChecksumSHA256": sha256_b64} if sha256_b64 else {}
        aws.s3().put_object(Bucket=self.bucket, Key=key, Body=data,
                            ContentType="text/html; charset=utf-8", **extra)

    def get_html(self, key: str) -> bytes:
        return aws.s3().get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def delete(self, key: str) -> None:
        aws.s3().delete_object(Bucket=self.bucket, Key=key)

    def list_keys(self, prefix: str) -> list[tuple[str, float]]:
        """(key, last-modified epoch) of every object under prefix."""
        found: list[tuple[str, float]] = []
        paginator = aws.s3().get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                found.append((obj["Key"], obj["LastModified"].timestamp()))
        return found

    def delete_prefix(self, prefix: str) -> int:
        keys = [key for key, _ in self.list_keys(prefix)]
        for start in range(0, len(keys), 1000):
            chunk = keys[start:start + 1000]
            aws.s3().delete_objects(Bucket=self.bucket,
                                    Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
        return len(keys)
