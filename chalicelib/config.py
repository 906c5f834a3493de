"""Configuration from environment variables, read lazily.

Everything is read at call time, never at import time: Chalice's test client and
the local stack set variables per call, and Lambda cold starts stay cheap.
"""
from __future__ import annotations

import os

DEFAULT_PORT = 8000


def _get(name: str, default: str) -> str:
    value = os.environ.get(name, "")
    return value if value else default


def table_name() -> str:
    return _get("DOCPUB_TABLE", "docpub")


def bucket_name() -> str:
    return _get("DOCPUB_BUCKET", "docpub-documents")


def base_url() -> str:
    port = _get("PORT", str(DEFAULT_PORT))
    return _get("DOCPUB_BASE_URL", f"http://127.0.0.1:{port}").rstrip("/")


def write_rate_limit() -> int:
    return int(_get("DOCPUB_WRITE_RATE_LIMIT", "60"))


def write_rate_window_seconds() -> int:
    return int(_get("DOCPUB_WRITE_RATE_WINDOW", "60"))


def viewer_rate_limit() -> int:
    """Unlock attempts / feedback posts per client IP per document per window."""
    return int(_get("DOCPUB_VIEWER_RATE_LIMIT", "10"))


def viewer_rate_window_seconds() -> int:
    return int(_get("DOCPUB_VIEWER_RATE_WINDOW", "600"))


def secret_key() -> str:
    """Signs share-unlock cookies, CSRF tokens and cursors. Must be set in AWS."""
    return _get("DOCPUB_SECRET_KEY", "docpub-local-development-secret-not-for-production")


def origin_secret() -> str:
    """The value CloudFront sends in X-Docpub-Origin-Secret (empty: not required)."""
    return _get("DOCPUB_ORIGIN_SECRET", "")


def trust_cloudfront_ip_header() -> bool:
    return _get("DOCPUB_TRUST_CLOUDFRONT", "false").lower() in ("1", "true", "yes")


def aws_region() -> str:
    return _get("AWS_REGION", _get("AWS_DEFAULT_REGION", "us-east-1"))


def data_dir() -> str:
    """Where the embedded store keeps `docpub.sqlite3` and `blobs/`."""
    return _get("DOCPUB_DATA_DIR", ".local")


def storage() -> str:
    """`aws` (DynamoDB + S3) or `sqlite` (embedded, in data_dir()); default: aws in Lambda, else sqlite."""
    default = "aws" if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else "sqlite"
    return _get("DOCPUB_STORAGE", default).strip().lower()


def dashboard_session_seconds() -> int:
    """Absolute lifetime of a dashboard session (checked on every read)."""
    return int(_get("DOCPUB_SESSION_SECONDS", str(7 * 24 * 3600)))


def argon2_cost() -> tuple[int, int, int]:
    """argon2id (time_cost, memory_kib, parallelism); defaults are argon2-cffi's (RFC 9106 low-memory)."""
    return (int(_get("DOCPUB_ARGON2_TIME_COST", "3")), int(_get("DOCPUB_ARGON2_MEMORY_KIB", "65536")),
            int(_get("DOCPUB_ARGON2_PARALLELISM", "4")))


def cimd_allowed_hosts() -> str:
    """Comma-separated `host:port` whose client ID metadata documents may be fetched
    from non-public addresses (a local test server). Empty in production."""
    return _get("DOCPUB_CIMD_ALLOWED_HOSTS", "")


def cimd_ca_file() -> str:
    """An extra CA certificate (PEM file) to trust when fetching client metadata documents."""
    return _get("DOCPUB_CIMD_CA_FILE", "")
