"""Lazily created, cached boto3 clients.

Created on first use (cheap cold start; moto patches clients made after it is
imported). Retries are deliberate: standard mode (retries throttling, 5xx and
transient network errors with jittered exponential backoff), bounded attempts,
and timeouts short enough that one call that keeps failing ends well inside
the Lambda timeout, as a clean 503 rather than an API Gateway 504.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from chalicelib import config

# .chalice/config.json `lambda_timeout` (API Gateway's own limit is 29 s); a test keeps them equal.
LAMBDA_TIMEOUT_SECONDS = 29


@dataclass(frozen=True)
class RetryProfile:
    connect_timeout: float
    read_timeout: float
    max_attempts: int  # total tries, the first one included

    def worst_case_seconds(self) -> float:
        """Every attempt times out, with the longest backoff between them
        (standard mode waits up to 2**n seconds before retry n+1)."""
        backoff = sum(min(20, 2 ** n) for n in range(self.max_attempts - 1))
        return self.max_attempts * (self.connect_timeout + self.read_timeout) + backoff


PROFILES = {
    # DynamoDB answers in milliseconds; 3 s covers a busy transaction.
    "dynamodb": RetryProfile(connect_timeout=1, read_timeout=3, max_attempts=3),
    # S3 writes up to 4 MiB per version.
    "s3": RetryProfile(connect_timeout=1, read_timeout=5, max_attempts=3),
    # Best effort, inside an API call: one try, short; a failure is retried later (services/cdn.py).
    "cloudfront": RetryProfile(connect_timeout=1, read_timeout=2, max_attempts=1),
    "ssm": RetryProfile(connect_timeout=1, read_timeout=2, max_attempts=2),
    # One message per call (sign-up, reset, invite); a refusal is answered, not retried for long.
    "ses": RetryProfile(connect_timeout=1, read_timeout=5, max_attempts=2),
    # The webhook nudge, inside an API call after the commit: one short try (the sweep catches up).
    "sqs": RetryProfile(connect_timeout=1, read_timeout=2, max_attempts=1),
    # Signing a version's statement (contract 7g), inside the publish: milliseconds, retried once.
    "kms": RetryProfile(connect_timeout=1, read_timeout=2, max_attempts=2),
}


@functools.lru_cache(maxsize=None)
def _botocore_config(service: str):
    from botocore.config import Config

    profile = PROFILES[service]
    return Config(
        retries={"mode": "standard", "total_max_attempts": profile.max_attempts},
        connect_timeout=profile.connect_timeout,
        read_timeout=config.emulator_read_timeout() or profile.read_timeout,
        max_pool_connections=50,
    )


@functools.lru_cache(maxsize=None)
def dynamodb():
    import boto3

    return boto3.client("dynamodb", region_name=config.aws_region(), config=_botocore_config("dynamodb"))


@functools.lru_cache(maxsize=None)
def s3():
    import boto3

    return boto3.client("s3", region_name=config.aws_region(), config=_botocore_config("s3"))


@functools.lru_cache(maxsize=None)
def s3_presigner():
    """Signs upload URLs (SigV4: the signed Content-Length makes S3 refuse any other size).
    Signing is local: this client sends nothing."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", region_name=config.aws_region(),
                        config=_botocore_config("s3").merge(Config(signature_version="s3v4")))


@functools.lru_cache(maxsize=None)
def cloudfront():
    import boto3

    # CloudFront's API lives in us-east-1 whatever the stack's region.
    return boto3.client("cloudfront", region_name="us-east-1", config=_botocore_config("cloudfront"))


@functools.lru_cache(maxsize=None)
def ssm():
    import boto3

    return boto3.client("ssm", region_name=config.aws_region(), config=_botocore_config("ssm"))


@functools.lru_cache(maxsize=None)
def ses():
    import boto3

    # SES v2 (`sesv2`); its IAM actions are still named `ses:*`.
    return boto3.client("sesv2", region_name=config.aws_region(), config=_botocore_config("ses"))


@functools.lru_cache(maxsize=None)
def kms():
    import boto3

    return boto3.client("kms", region_name=config.aws_region(), config=_botocore_config("kms"))


def reset_clients() -> None:
    """Forget cached clients (tests that switch endpoints)."""
    dynamodb.cache_clear()
    s3.cache_clear()
    s3_presigner.cache_clear()
    cloudfront.cache_clear()
    ssm.cache_clear()
    ses.cache_clear()
    kms.cache_clear()


@functools.lru_cache(maxsize=None)
def sqs():
    import boto3

    return boto3.client("sqs", region_name=config.aws_region(), config=_botocore_config("sqs"))
