"""The deployed adapter: DynamoDB (one table, see keys.py) and S3 (version HTML).

clients.py creates the boto3 clients (lazily, cached); table.py holds the item and
transaction plumbing; one module per aggregate implements the ports."""
from __future__ import annotations

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.adapters.aws.errors import storage_errors


@storage_errors
class AwsHealth:
    def check(self) -> None:
        aws.dynamodb().describe_table(TableName=config.table_name())
        aws.s3().head_bucket(Bucket=config.bucket_name())


def repositories():
    """One of each repository, over the configured table and bucket, each built (its module
    imported) when first used: a function imports only what its routes read."""
    from chalicelib.adapters import repository_factories
    from chalicelib.adapters.aws.table import Table
    from chalicelib.ports.repositories import lazy_repositories

    def blobs():
        from chalicelib.adapters.aws.blobs import BlobStore

        return BlobStore()

    return lazy_repositories("aws", {**repository_factories(__name__, Table()), "blobs": blobs, "health": AwsHealth})
