"""Which CDN to tell about withdrawn links (ports/cdn.py CdnInvalidator): CloudFront
when a distribution is configured (adapters/aws/cdn.py), otherwise nothing (local
runs: nothing caches share answers)."""
from __future__ import annotations

import functools

from chalicelib import config
from chalicelib.ports.cdn import NoCdn  # the null object lives with its port


@functools.lru_cache(maxsize=None)
def default_invalidator():
    distribution_id, parameter = config.cdn_distribution_id(), config.cdn_distribution_parameter()
    if distribution_id or parameter:
        from chalicelib.adapters.aws.cdn import CloudFrontInvalidator

        return CloudFrontInvalidator(distribution_id or None, parameter or None)
    return NoCdn()
