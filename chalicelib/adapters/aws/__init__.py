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
    """One of each repository, over the configured table and bucket."""
    from chalicelib.adapters.aws.accounts import SessionRepository, UserRepository
    from chalicelib.adapters.aws.blobs import BlobStore
    from chalicelib.adapters.aws.cdn import PendingInvalidationRepository
    from chalicelib.adapters.aws.documents import DocumentRepository
    from chalicelib.adapters.aws.feedback import FeedbackRepository
    from chalicelib.adapters.aws.oauth import OAuthRepository
    from chalicelib.adapters.aws.rates import RateLimitRepository
    from chalicelib.adapters.aws.leases import LeaseRepository
    from chalicelib.adapters.aws.exports import ExportRepository
    from chalicelib.adapters.aws.signing_keys import SigningKeyRepository
    from chalicelib.adapters.aws.table import Table
    from chalicelib.adapters.aws.views import ViewCounterRepository
    from chalicelib.adapters.aws.webhooks import WebhookRepository
    from chalicelib.adapters.aws.workspaces import ApiKeyRepository, WorkspaceRepository
    from chalicelib.adapters.aws.people import PeopleRepository
    from chalicelib.adapters.aws.reviews import ReviewRepository
    from chalicelib.adapters.aws.recipients import RecipientRepository
    from chalicelib.ports import Repositories

    table = Table()
    return Repositories(
        workspaces=WorkspaceRepository(table), keys=ApiKeyRepository(table), documents=DocumentRepository(table),
        feedback=FeedbackRepository(table), rates=RateLimitRepository(table), users=UserRepository(table),
        sessions=SessionRepository(table), blobs=BlobStore(), health=AwsHealth(),
        views=ViewCounterRepository(table), kind="aws", oauth=OAuthRepository(table),
        cdn_pending=PendingInvalidationRepository(table), webhooks=WebhookRepository(table),
        people=PeopleRepository(table), reviews=ReviewRepository(table), leases=LeaseRepository(table),
        exports=ExportRepository(table), recipients=RecipientRepository(table),
        signing_keys=SigningKeyRepository(table))
