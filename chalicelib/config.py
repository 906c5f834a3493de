"""Configuration from environment variables, read lazily.

Everything is read at call time, never at import time: Chalice's test client and
the local stack set variables per call, and Lambda cold starts stay cheap.
"""
from __future__ import annotations

import hmac
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


def content_url() -> str:
    """DOCPUB_CONTENT_URL: a separate origin (ideally another registrable domain)
    that serves document content and nothing else; empty: content is served
    sandboxed from the base URL."""
    return _get("DOCPUB_CONTENT_URL", "").rstrip("/")


def upgrade_url() -> str:
    """DOCPUB_UPGRADE_URL: where a workspace goes to move to Pro (a billing page); `{workspace_id}`
    in it is replaced by the workspace's id. Empty (or not http/https): no link is shown."""
    value = _get("DOCPUB_UPGRADE_URL", "").strip()
    return value if value.startswith(("https://", "http://")) else ""


def operator_emails() -> frozenset[str]:
    """DOCPUB_OPERATOR_EMAILS: comma-separated emails of the people who run this service (they
    are shown the operator command that changes a plan); `*` means everyone signed in (`make
    run` on loopback sets it: whoever reaches it is at the machine that runs `make admin`)."""
    return frozenset(e.strip().lower() for e in _get("DOCPUB_OPERATOR_EMAILS", "").split(",") if e.strip())


def write_rate_limit() -> int:
    return int(_get("DOCPUB_WRITE_RATE_LIMIT", "60"))


def write_rate_window_seconds() -> int:
    return int(_get("DOCPUB_WRITE_RATE_WINDOW", "60"))


def viewer_rate_limit() -> int:
    """Unlock attempts / feedback posts per client IP per document per window."""
    return int(_get("DOCPUB_VIEWER_RATE_LIMIT", "10"))


def viewer_rate_window_seconds() -> int:
    return int(_get("DOCPUB_VIEWER_RATE_WINDOW", "600"))


LOCAL_SECRET_KEY = "docpub-local-development-secret-not-for-production"
MIN_SECRET_KEY_CHARS = 32


class ConfigurationError(RuntimeError):
    """A setting the service cannot run safely without."""


def deployed() -> bool:
    """Running as a Lambda function (the runtime always sets this), not the local stack or tests."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def unlock_failure_budget() -> int:
    """Failed unlocks per document across all addresses per window (then 429 for everyone)."""
    return int(_get("DOCPUB_UNLOCK_FAILURE_BUDGET", "100"))


def unlock_failure_window_seconds() -> int:
    return int(_get("DOCPUB_UNLOCK_FAILURE_WINDOW", "3600"))


def secret_key() -> str:
    """Signs share-unlock cookies, CSRF tokens and cursors. Deployed, it must be
    set: the local default is public, so anyone could forge cookies with it."""
    value = _get("DOCPUB_SECRET_KEY", "")
    if value and not hmac.compare_digest(value.encode(), LOCAL_SECRET_KEY.encode()):
        if deployed() and len(value) < MIN_SECRET_KEY_CHARS:
            raise ConfigurationError(
                f"DOCPUB_SECRET_KEY is too short: Docpub refuses to start with a signing key of fewer than "
                f"{MIN_SECRET_KEY_CHARS} characters (use at least 32 random characters; infra/deploy.sh stores "
                "64 in Secrets Manager).")
        return value
    if deployed():
        raise ConfigurationError(
            "DOCPUB_SECRET_KEY is not set (or is the public development value): Docpub refuses to start "
            "without a secret signing key. Deploy with infra/deploy.sh (it stores one in Secrets Manager), "
            "or set DOCPUB_SECRET_KEY to at least 32 random characters in .chalice/config.json.")
    return LOCAL_SECRET_KEY


def check_startup() -> None:
    """Fail closed at start instead of running with an insecure fallback: the deployed
    function fails at init (app.py imports this), `make run` exits non-zero (scripts.local_stack)."""
    secret_key()
    check_forwarded_address_trust()


def check_forwarded_address_trust() -> None:
    """A forwarded client-address header counts only with the origin secret that proves it came
    from the operator's proxy: without it, anyone sends the header and picks the address every
    per-address limit counts (contract 4, "Bounds, second pass")."""
    if trust_cloudfront_ip_header() and not origin_secret().strip():
        raise ConfigurationError(
            "DOCPUB_TRUST_CLOUDFRONT is on but DOCPUB_ORIGIN_SECRET is empty: Docpub refuses to start, "
            "because anyone could then send the viewer-address header and choose the client address of "
            "every per-address limit. Set DOCPUB_ORIGIN_SECRET to the value CloudFront sends in "
            "X-Docpub-Origin-Secret (infra/deploy.sh does), or turn DOCPUB_TRUST_CLOUDFRONT off.")


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


def signing_kms_key() -> str:
    """The KMS key (ARN) that signs versions deployed (contract 7g); empty: the key file in data_dir()."""
    return _get("DOCPUB_SIGNING_KMS_KEY", "")


def storage() -> str:
    """`aws` (DynamoDB + S3) or `sqlite` (embedded, in data_dir()); default: aws in Lambda, else sqlite."""
    default = "aws" if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else "sqlite"
    return _get("DOCPUB_STORAGE", default).strip().lower()


def disk_reserve_bytes() -> int:
    """Embedded store: space kept back (a file in the data folder) so that deletes
    still work when the disk is full; 0 turns it off."""
    return int(_get("DOCPUB_DISK_RESERVE_BYTES", str(1024 * 1024)))


def dashboard_session_seconds() -> int:
    """Absolute lifetime of a dashboard session (checked on every read)."""
    return int(_get("DOCPUB_SESSION_SECONDS", str(7 * 24 * 3600)))


def argon2_cost() -> tuple[int, int, int]:
    """argon2id (time_cost, memory_kib, parallelism); defaults are argon2-cffi's (RFC 9106 low-memory)."""
    return (int(_get("DOCPUB_ARGON2_TIME_COST", "3")), int(_get("DOCPUB_ARGON2_MEMORY_KIB", "65536")),
            int(_get("DOCPUB_ARGON2_PARALLELISM", "4")))


def cdn_distribution_id() -> str:
    """CloudFront distribution whose cache every link withdrawal invalidates (empty: none)."""
    return _get("DOCPUB_CDN_DISTRIBUTION_ID", "")


def cdn_distribution_parameter() -> str:
    """SSM parameter holding that distribution's id (how the deployed stack passes it)."""
    return _get("DOCPUB_CDN_DISTRIBUTION_PARAMETER", "")


def cimd_allowed_hosts() -> str:
    """Comma-separated `host:port` whose client ID metadata documents may be fetched
    from non-public addresses (a local test server). Empty in production."""
    return _get("DOCPUB_CIMD_ALLOWED_HOSTS", "")


def cimd_ca_file() -> str:
    """An extra CA certificate (PEM file) to trust when fetching client metadata documents."""
    return _get("DOCPUB_CIMD_CA_FILE", "")


def sign_up_per_hour() -> int:
    """Dashboard sign-ups per client address per hour (DOCPUB_SIGN_UP_PER_HOUR, default 10): raise
    it where many people share one address (an office behind NAT, a test stack on loopback)."""
    return max(1, int(_get("DOCPUB_SIGN_UP_PER_HOUR", "10")))


def view_rate_limit() -> int:
    """Counted views per document per client address per window (beacon flood cap)."""
    return int(_get("DOCPUB_VIEW_RATE_LIMIT", "30"))


def view_rate_window_seconds() -> int:
    return int(_get("DOCPUB_VIEW_RATE_WINDOW", "600"))


# ------------------------------------------------------------------ the review loop (contract 7c)

def webhook_retry_base_seconds() -> float:
    """DOCPUB_WEBHOOKS_RETRY_BASE_S: the first retry of a failed delivery after this many
    seconds, doubling each time (for 24 hours)."""
    return float(_get("DOCPUB_WEBHOOKS_RETRY_BASE_S", "30"))


def webhooks_allow_private() -> bool:
    """DOCPUB_WEBHOOKS_ALLOW_PRIVATE=true: webhook targets may be http and private or
    loopback addresses (local development only)."""
    return _get("DOCPUB_WEBHOOKS_ALLOW_PRIVATE", "false").lower() == "true"


def webhook_queue_url() -> str:
    """DOCPUB_WEBHOOK_QUEUE_URL (deployed): the SQS queue webhook deliveries go through;
    empty: deliveries wait for the worker (make run) or the periodic sweep."""
    return _get("DOCPUB_WEBHOOK_QUEUE_URL", "")


def webhook_ca_file() -> str:
    """DOCPUB_WEBHOOKS_CA_FILE: an extra CA to trust for webhook targets (tests only)."""
    return _get("DOCPUB_WEBHOOKS_CA_FILE", "")


def live_poll_seconds() -> int:
    """DOCPUB_LIVE_POLL_SECONDS: how often an open share page asks for a newer version
    (default 10; tests shorten it)."""
    return max(1, int(_get("DOCPUB_LIVE_POLL_SECONDS", "10")))


def emulator_read_timeout() -> float:
    """DOCPUB_EMULATOR_READ_TIMEOUT: seconds; replaces the AWS clients' read timeouts
    for emulators on a busy machine (DynamoDB Local can take seconds where
    DynamoDB takes milliseconds). Never set on the deployed function."""
    return float(_get("DOCPUB_EMULATOR_READ_TIMEOUT", "0"))


def view_flush_seconds() -> float:
    """How long one process adds up views before writing them (services/views.py):
    0 writes every view at once (the embedded store; tests); the deployed stack sets 1."""
    return float(_get("DOCPUB_VIEW_FLUSH_SECONDS", "0"))


def share_cache_seconds() -> float:
    """How long the view beacon reuses a link's lookup in one process (eventually
    consistent reads); 0: every beacon reads storage. Counting only: pages never use it."""
    return float(_get("DOCPUB_SHARE_CACHE_SECONDS", "0"))


def mail() -> str:
    """Outgoing mail: `outbox` (files in outbox_dir(); the default outside Lambda), an
    `smtp://` / `smtps://` URL, or `ses` (Amazon SES v2; the default in Lambda)."""
    return _get("DOCPUB_MAIL", "ses" if deployed() else "outbox")


def mail_from() -> str:
    """The From of every message (deployed: an address of the identity verified in SES)."""
    return _get("DOCPUB_MAIL_FROM", "Docpub <no-reply@docpub.localhost>")


def outbox_dir() -> str:
    """Where `DOCPUB_MAIL=outbox` writes `.eml` files."""
    return os.path.join(data_dir(), "outbox")


def webhooks_worker_enabled() -> bool:
    """DOCPUB_WEBHOOKS_WORKER=off: `make run` does not start its webhook worker thread
    (events wait in the outbox; tests use it to crash between an event and its send)."""
    return _get("DOCPUB_WEBHOOKS_WORKER", "on").lower() not in ("off", "false", "0")


def static_pages() -> bool:
    """DOCPUB_STATIC_PAGES=on: public share links are also written as static objects
    (services/static_pages.py) that CloudFront serves with no function; the deployed
    stack sets it. Off (the default, `make run`): every share answer is the function's."""
    return _get("DOCPUB_STATIC_PAGES", "off").lower() in ("on", "true", "1")


# ------------------------------------------------------------------ single sign-on (contract 7f)

def oidc_issuer() -> str:
    """DOCPUB_OIDC_ISSUER: the OpenID provider's issuer identifier (its discovery document is
    `<issuer>/.well-known/openid-configuration`); empty: no single sign-on."""
    return _get("DOCPUB_OIDC_ISSUER", "").strip()


def oidc_client_id() -> str:
    """DOCPUB_OIDC_CLIENT_ID: Docpub's client at that provider."""
    return _get("DOCPUB_OIDC_CLIENT_ID", "").strip()


def oidc_client_secret() -> str:
    """DOCPUB_OIDC_CLIENT_SECRET: the client's secret, given directly (`make run`, tests).
    The deployed stack names an SSM SecureString parameter instead (oidc_client_secret_parameter)."""
    return _get("DOCPUB_OIDC_CLIENT_SECRET", "")


def oidc_client_secret_parameter() -> str:
    """DOCPUB_OIDC_CLIENT_SECRET_PARAMETER: the SSM Parameter Store SecureString holding the
    client secret (the deployed stack; read once per process, decrypted)."""
    return _get("DOCPUB_OIDC_CLIENT_SECRET_PARAMETER", "").strip()


def oidc_name() -> str:
    """DOCPUB_OIDC_NAME: what the sign-in button says ("Sign in with NAME"); default "SSO"."""
    return _get("DOCPUB_OIDC_NAME", "SSO").strip()[:60] or "SSO"


def sso_enabled() -> bool:
    """Single sign-on is offered when the issuer, the client id and a secret (or the SSM
    parameter holding it) are all set."""
    return bool(oidc_issuer() and oidc_client_id() and (oidc_client_secret() or oidc_client_secret_parameter()))
