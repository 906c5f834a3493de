"""Plans and what they entitle a workspace to (docs/contract.md, Limits and plans)."""
from __future__ import annotations

from chalicelib import config
from chalicelib.models import MAX_HTML_BYTES, Entitlements, RateLimitEntitlement

PLANS = ("free", "pro")
# Plans without document or key caps.
UNCAPPED_PLANS = ("pro",)
FREE_MAX_DOCUMENTS = 5
FREE_MAX_API_KEYS = 1


def entitlements(plan: str) -> Entitlements:
    pro = plan == "pro"
    return Entitlements(
        max_documents=None if pro else FREE_MAX_DOCUMENTS,
        max_api_keys=None if pro else FREE_MAX_API_KEYS,
        passphrase_links=pro,
        dashboard_editing=pro,
        custom_branding=pro,
        max_html_bytes=MAX_HTML_BYTES,
        write_rate_limit=RateLimitEntitlement(
            limit=config.write_rate_limit(), window_seconds=config.write_rate_window_seconds()),
    )
