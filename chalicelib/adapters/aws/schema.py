"""The table and bucket definitions, for the local stack and tests.

infra/resources.yaml declares the same shape for AWS; a test keeps them equal.
"""
from __future__ import annotations

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.ports.repositories import LISTING as DOCUMENT_LISTING

KEY_ATTRIBUTES = ["PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"]
TTL_ATTRIBUTE = "expires_at"

# What each index carries besides the keys (INCLUDE): no wider than its queries read.
# A query reads from the index only what is listed here (`Table.query(projected=...)`
# refuses anything else); every other index query reads the keys and then the items
# themselves (one BatchGetItem per page, `Table.query` without `projected`).
#   GSI1: a workspace's document list (the listing and "find" read these from the index,
#         docs/architecture.md), and the filter of a workspace's feedback list;
#   GSI2: the filter of a document's feedback list, and what deleting its feedback needs.
FEEDBACK_FILTER = ("status", "workspace_id")
INDEX_PROJECTIONS: dict[str, tuple[str, ...]] = {
    "GSI1": tuple(sorted(set(DOCUMENT_LISTING) | set(FEEDBACK_FILTER))),
    "GSI2": tuple(sorted(set(FEEDBACK_FILTER) | {"reply_count"})),
}


def table_definition(name: str) -> dict:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in KEY_ATTRIBUTES],
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [
            {"IndexName": index,
             "KeySchema": [{"AttributeName": f"{index}PK", "KeyType": "HASH"},
                           {"AttributeName": f"{index}SK", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(INDEX_PROJECTIONS[index])}}
            for index in ("GSI1", "GSI2")
        ],
    }


def ensure_storage() -> None:
    """Create the table and bucket if missing (idempotent)."""
    dynamodb, s3 = aws.dynamodb(), aws.s3()
    name = config.table_name()
    existing = dynamodb.list_tables().get("TableNames", [])
    if name not in existing:
        dynamodb.create_table(**table_definition(name))
        dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={
            "Enabled": True, "AttributeName": TTL_ATTRIBUTE})
    bucket = config.bucket_name()
    buckets = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if bucket not in buckets:
        if config.aws_region() == "us-east-1":
            s3.create_bucket(Bucket=bucket)
        else:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": config.aws_region()})
