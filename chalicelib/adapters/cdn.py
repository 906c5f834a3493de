"""CDN invalidation: CloudFront through boto3, or nothing (no CDN configured).

The distribution is named by `DOCPUB_CDN_DISTRIBUTION_ID`, or by the SSM
parameter `DOCPUB_CDN_DISTRIBUTION_PARAMETER` holds its id (the stack's way: the
function cannot refer to its own distribution directly, that would be a
dependency cycle; the parameter is read once per process).
"""
from __future__ import annotations

import functools
import uuid

from chalicelib import config
from chalicelib.adapters import aws


class NoCdn:
    """Nothing caches share answers (local runs): nothing to invalidate."""

    def invalidate(self, paths: list[str]) -> None:
        return None


class CloudFrontInvalidator:
    def __init__(self, distribution_id: str | None = None, parameter: str | None = None):
        self._distribution_id = distribution_id
        self._parameter = parameter

    def distribution_id(self) -> str:
        if not self._distribution_id:
            ssm = aws.ssm()
            self._distribution_id = ssm.get_parameter(Name=self._parameter)["Parameter"]["Value"]
        return self._distribution_id

    def invalidate(self, paths: list[str]) -> None:
        cloudfront = aws.cloudfront()
        cloudfront.create_invalidation(
            DistributionId=self.distribution_id(),
            InvalidationBatch={"Paths": {"Quantity": len(paths), "Items": list(paths)},
                               "CallerReference": f"docpub-{uuid.uuid4().hex}"})


@functools.lru_cache(maxsize=None)
def default_invalidator():
    distribution_id, parameter = config.cdn_distribution_id(), config.cdn_distribution_parameter()
    if distribution_id or parameter:
        return CloudFrontInvalidator(distribution_id or None, parameter or None)
    return NoCdn()
