"""Plans and what they entitle a workspace to (docs/contract.md, Limits and plans)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.domain import limits

if TYPE_CHECKING:
    from chalicelib.models import Entitlements

PLANS = ("free", "pro")
# Plans without document or key caps.
UNCAPPED_PLANS = ("pro",)


def custom_branding(plan: str) -> bool:
    """Whether the plan's share pages show the workspace's brand instead of the Docpub mark
    (`entitlements(plan).custom_branding`, without building the model: every share page asks)."""
    return plan == "pro"


def entitlements(plan: str) -> Entitlements:
    from chalicelib.models import Entitlements, RateLimitEntitlement  # pydantic: not at a share page's cold start

    pro = plan == "pro"
    rate = limits.write_rate()
    return Entitlements(
        max_documents=None if pro else limits.FREE_MAX_DOCUMENTS,
        max_api_keys=None if pro else limits.FREE_MAX_API_KEYS,
        passphrase_links=pro,
        dashboard_editing=pro,
        custom_branding=custom_branding(plan),
        max_html_bytes=limits.HTML_BYTES,
        write_rate_limit=RateLimitEntitlement(
            limit=rate.limit, window_seconds=rate.window_seconds),
        max_storage_bytes=limits.PRO_MAX_STORAGE_BYTES if pro else limits.FREE_MAX_STORAGE_BYTES,
        max_versions_per_document=(limits.PRO_MAX_VERSIONS_PER_DOCUMENT if pro
                                   else limits.FREE_MAX_VERSIONS_PER_DOCUMENT),
        workspace_write_rate_limit=RateLimitEntitlement(
            limit=limits.workspace_write_rate().limit, window_seconds=limits.workspace_write_rate().window_seconds),
    )
