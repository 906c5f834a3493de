"""CloudFront's standard log files in the access-log bucket (gzip, UTF-8 text): read
line by line, streamed (a file of a busy period holds hundreds of thousands of lines).
A file cut short (a truncated gzip stream) yields the lines before the cut; the
counter skips a partial last line as malformed."""
from __future__ import annotations

import zlib
from typing import Iterator

from chalicelib.adapters.aws import clients as aws


def read_lines(bucket: str, key: str) -> Iterator[str]:
    body = aws.s3().get_object(Bucket=bucket, Key=key)["Body"]
    yield from decode_lines(iter(lambda: body.read(1 << 16), b""), key.endswith(".gz"))


def decode_lines(chunks: Iterator[bytes], gzipped: bool) -> Iterator[str]:
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    pending = b""
    for chunk in chunks:
        try:
            data = inflate.decompress(chunk) if inflate else chunk
        except zlib.error:
            break  # corrupt from here on: what came before is counted
        pending += data
        *whole, pending = pending.split(b"\n")
        for line in whole:
            yield line.decode("utf-8", "replace")
    if inflate is not None:
        try:
            pending += inflate.flush()
        except zlib.error:
            pass
    if pending:
        yield pending.decode("utf-8", "replace")
