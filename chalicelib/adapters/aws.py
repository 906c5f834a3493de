"""Lazily created, cached boto3 clients.

Created on first use (cheap cold start; moto patches clients made after it is
imported). Retries are deliberate: standard mode, bounded attempts, timeouts
well below Lambda's so a slow call becomes a clean 503 rather than a timeout.
"""
from __future__ import annotations

import functools

from chalicelib import config


@functools.lru_cache(maxsize=None)
def _botocore_config():
    from botocore.config import Config

    return Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=2,
        read_timeout=10,
        max_pool_connections=50,
    )


@functools.lru_cache(maxsize=None)
def dynamodb():
    import boto3

    return boto3.client("dynamodb", region_name=config.aws_region(), config=_botocore_config())


@functools.lru_cache(maxsize=None)
def s3():
    import boto3

    return boto3.client("s3", region_name=config.aws_region(), config=_botocore_config())


def reset_clients() -> None:
    """Forget cached clients (tests that switch endpoints)."""
    dynamodb.cache_clear()
    s3.cache_clear()
