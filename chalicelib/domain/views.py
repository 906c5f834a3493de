"""View counting rules, pure (no I/O): what counts as a view, days, shards.

A view is one page load of a share link's wrapper page by a person's browser,
reported by a beacon the page sends once it is visible. Not counted (the
documented rule, docs/sharing.md):

- user agents that name themselves as robots, crawlers, link-preview fetchers,
  monitors, command-line or library HTTP clients, or headless browsers
  (`BOT_PATTERN`), and requests with no User-Agent at all;
- prefetches and prerenders: a request that says so (`Sec-Purpose`/`Purpose`/
  `X-Purpose`/`X-Moz` naming prefetch, prerender or preview); the page itself
  only sends its beacon when visible (a prerendered or background page waits);
- more than `view_rate_limit()` views of one document from one address per
  window (a reload loop or a beacon flood cannot grow counts faster than a
  person loading pages would).
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Mapping, Optional

# Counters of one document are spread over this many items per day and for the
# totals, so a document viewed 10,000 times a second writes ~625 times a second
# to each item, under DynamoDB's ~1,000 writes/s per item (docs/scaling.md).
SHARDS = 16
MAX_STATS_DAYS = 90
DEFAULT_STATS_DAYS = 30

BOT_PATTERN = re.compile(
    r"bot\b|bot/|crawl|spider|slurp|archiver|scrap|preview|fetch|monitor|checker|validator|lighthouse|"
    r"pagespeed|headless|phantomjs|selenium|puppeteer|playwright|"
    r"facebookexternalhit|embedly|quora link|whatsapp|telegram|skypeuripreview|slack|discord|"
    r"curl/|wget/|httpie|python-requests|python-urllib|aiohttp|httpx|go-http-client|okhttp|java/|"
    r"libwww|node-fetch|axios|postman|insomnia",
    re.IGNORECASE)
_PREFETCH = re.compile(r"prefetch|prerender|preview", re.IGNORECASE)
PURPOSE_HEADERS = ("sec-purpose", "purpose", "x-purpose", "x-moz")


def is_bot(user_agent: Optional[str]) -> bool:
    """True for an empty User-Agent or one matching `BOT_PATTERN`."""
    if not user_agent or not user_agent.strip():
        return True
    return bool(BOT_PATTERN.search(user_agent))


def is_prefetch(headers: Mapping[str, str]) -> bool:
    """True when the request declares itself a prefetch, prerender or preview."""
    return any(_PREFETCH.search(headers.get(name) or "") for name in PURPOSE_HEADERS)


def counted(user_agent: Optional[str], headers: Mapping[str, str]) -> bool:
    return not is_bot(user_agent) and not is_prefetch(headers)


def day_of(ms: int) -> str:
    """The UTC calendar day (YYYY-MM-DD) of a time in ms."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


def window(now_ms: int, days: int) -> list[str]:
    """The last `days` UTC days ending today, oldest first."""
    today = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc).date()
    return [(today - timedelta(days=offset)).isoformat() for offset in range(days - 1, -1, -1)]


def rate_window(now_ms: int, window_seconds: int) -> tuple[int, int]:
    """(window number, seconds until the next window) of a fixed window."""
    seconds = now_ms // 1000
    return seconds // window_seconds, window_seconds - seconds % window_seconds
