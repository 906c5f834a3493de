"""Health: can the service reach its storage?"""
from __future__ import annotations

from chalicelib import config
from chalicelib.adapters import aws
from chalicelib.errors import ServiceUnavailable


def check_storage() -> None:
    try:
        aws.dynamodb().describe_table(TableName=config.table_name())
        aws.s3().head_bucket(Bucket=config.bucket_name())
    except Exception as exc:  # any failure means "not healthy", said cleanly
        raise ServiceUnavailable("Storage is not reachable.") from exc
