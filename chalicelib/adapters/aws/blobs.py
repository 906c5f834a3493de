"""S3 blob store for version HTML. Objects are immutable: one per version."""
from __future__ import annotations

import base64
import zlib
from typing import Iterable, Iterator

from botocore.exceptions import ClientError

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.ports.errors import BlobNotFound
from chalicelib.ports.repositories import document_prefix, version_key  # noqa: F401 (the key layout)
from chalicelib.adapters.aws.errors import storage_errors


# A streamed object goes to S3 in parts of this size (S3's least is 5 MiB but for the last).
PART_BYTES = 8 * 1024 * 1024


def crc32_b64(data: bytes) -> str:
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode("ascii")


@storage_errors
class BlobStore:
    def __init__(self, bucket: str | None = None):
        self._bucket = bucket

    @property
    def bucket(self) -> str:
        return self._bucket or config.bucket_name()

    def put_html(self, key: str, data: bytes, sha256_b64: str | None = None) -> None:
        """Store `data`; S3 verifies it against a checksum sent in a header.

        CRC32 by default (what botocore would compute itself, ~5x cheaper than
        SHA-256 on 4 MiB, bench/large_documents.py); sent precomputed so the
        body goes out as is, never re-wrapped in aws-chunked encoding."""
        extra = {"ChecksumSHA256": sha256_b64} if sha256_b64 else {"ChecksumCRC32": crc32_b64(data)}
        aws.s3().put_object(Bucket=self.bucket, Key=key, Body=data,
                            ContentType="text/html; charset=utf-8", **extra)

    def put_file(self, key: str, data: bytes) -> None:
        aws.s3().put_object(Bucket=self.bucket, Key=key, Body=data, ContentType="application/octet-stream",
                            ChecksumCRC32=crc32_b64(data))

    def put_stream(self, key: str, chunks: Iterable[bytes]) -> None:
        """The chunks sent as they come, at most `PART_BYTES` held at a time: one PutObject
        when the stream ends within a part, else a multipart upload of PART_BYTES parts (a
        workspace export, streamed by the worker function: never whole in memory or on
        disk). A stream that fails before its end stores nothing: the multipart upload is
        never completed (the bucket's lifecycle rule aborts it within a day)."""
        client = aws.s3()
        buffer = bytearray()
        upload_id = None
        parts: list[dict] = []
        for chunk in chunks:
            buffer += chunk
            while len(buffer) >= PART_BYTES:
                if upload_id is None:
                    upload_id = client.create_multipart_upload(
                        Bucket=self.bucket, Key=key, ContentType="application/octet-stream",
                        ChecksumAlgorithm="CRC32")["UploadId"]
                part, buffer = bytes(buffer[:PART_BYTES]), buffer[PART_BYTES:]
                number = len(parts) + 1
                sent = client.upload_part(Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number,
                                          Body=part, ChecksumCRC32=crc32_b64(part))
                parts.append({"PartNumber": number, "ETag": sent["ETag"], "ChecksumCRC32": crc32_b64(part)})
        if upload_id is None:
            data = bytes(buffer)
            client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType="application/octet-stream",
                              ChecksumCRC32=crc32_b64(data))
            return
        if buffer or not parts:
            last = bytes(buffer)
            number = len(parts) + 1
            sent = client.upload_part(Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number,
                                      Body=last, ChecksumCRC32=crc32_b64(last))
            parts.append({"PartNumber": number, "ETag": sent["ETag"], "ChecksumCRC32": crc32_b64(last)})
        client.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id,
                                         MultipartUpload={"Parts": parts})

    def upload_url(self, key: str, size_bytes: int, expires_seconds: int) -> str:
        """Presigned PUT; Content-Length is signed, so S3 refuses any other size."""
        return aws.s3_presigner().generate_presigned_url(
            "put_object", Params={"Bucket": self.bucket, "Key": key, "ContentLength": size_bytes},
            ExpiresIn=expires_seconds, HttpMethod="PUT")

    def download_url(self, key: str, content_type: str, expires_seconds: int,
                     filename: str | None = None) -> str:
        """Presigned GET; S3 answers with the type (and the attachment's name) signed in it."""
        params = {"Bucket": self.bucket, "Key": key, "ResponseContentType": content_type,
                  "ResponseCacheControl": "private, max-age=60"}
        if filename is not None:
            params["ResponseContentDisposition"] = f'attachment; filename="{filename}"'
        return aws.s3_presigner().generate_presigned_url("get_object", Params=params, ExpiresIn=expires_seconds)

    def touch(self, key: str) -> bool:
        """A server-side copy onto itself: S3 sets LastModified, no bytes pass through Lambda."""
        try:
            aws.s3().copy_object(Bucket=self.bucket, Key=key, CopySource={"Bucket": self.bucket, "Key": key},
                                 MetadataDirective="REPLACE", ContentType="application/octet-stream")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return False
            raise
        return True

    def get_html(self, key: str) -> bytes:
        try:
            return aws.s3().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise BlobNotFound("NoSuchKey") from exc
            raise

    def read_stream(self, key: str, chunk_bytes: int = 1 << 20) -> Iterator[bytes]:
        try:
            body = aws.s3().get_object(Bucket=self.bucket, Key=key)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise BlobNotFound("NoSuchKey") from exc
            raise
        return body.iter_chunks(chunk_bytes)

    def delete(self, key: str) -> None:
        aws.s3().delete_object(Bucket=self.bucket, Key=key)

    def iter_keys(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(key, last-modified epoch) of every object under prefix, in key order, one
        page (1,000 keys) at a time: constant memory for any bucket size."""
        paginator = aws.s3().get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                yield obj["Key"], obj["LastModified"].timestamp()

    def list_keys(self, prefix: str) -> list[tuple[str, float]]:
        """(key, last-modified epoch) of every object under prefix."""
        return list(self.iter_keys(prefix))

    def delete_prefix(self, prefix: str) -> int:
        keys = [key for key, _ in self.list_keys(prefix)]
        for start in range(0, len(keys), 1000):
            chunk = keys[start:start + 1000]
            aws.s3().delete_objects(Bucket=self.bucket,
                                    Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
        return len(keys)
