"""The composition root: the only module outside chalicelib/adapters/ that imports
an adapter (tests/unit/test_layers.py checks it).

It picks the storage adapter from configuration (`DOCPUB_STORAGE` = sqlite | aws),
the CDN invalidator, builds the process's default `Context`, and hands out one
cached instance of each service. Entrypoints (app.py, the blueprints, MCP tools,
scripts/) ask it for services; services receive their Context and see ports only.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from chalicelib import config
from chalicelib.services.context import Context

if TYPE_CHECKING:  # the ports name types only here (a cold start imports what a request uses)
    from chalicelib.ports import Repositories
    from chalicelib.ports.cdn import CdnInvalidator
    from chalicelib.ports.mail import Mailer
    from chalicelib.ports.outbound import OutboundHttp
    from chalicelib.ports.signing import SignerFactory
    from chalicelib.services.activity import ActivityService
    from chalicelib.services.people import PeopleService
    from chalicelib.services.reviews import ReviewService
    from chalicelib.services.recipients import RecipientService, SharedWithMe
    from chalicelib.services.provenance import ProvenanceService
    from chalicelib.services.sso import SsoService
    from chalicelib.services.accounts import AccountService
    from chalicelib.services.dashboard_pages import DashboardPages
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.editing import EditingService
    from chalicelib.services.exports import ExportService
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.services.suggestions import SuggestionService
    from chalicelib.services.oauth import OAuthService
    from chalicelib.services.sharing import ShareService
    from chalicelib.services.uploads import UploadService
    from chalicelib.services.views import ViewService
    from chalicelib.services.webhooks import WebhookService
    from chalicelib.services.workspaces import WorkspaceService


# ------------------------------------------------------------------ adapters

def build_repositories(kind: Optional[str] = None) -> Repositories:
    """A `Repositories` bundle for `kind` (default: config.storage())."""
    kind = kind or config.storage()
    if kind == "aws":
        from chalicelib.adapters.aws import repositories

        return repositories()
    if kind == "sqlite":
        from chalicelib.adapters.sqlite import repositories as sqlite_repositories

        return sqlite_repositories(config.data_dir())
    raise ValueError(f"DOCPUB_STORAGE must be 'sqlite' or 'aws', not {kind!r}")


def build_cdn() -> CdnInvalidator:
    """CloudFront when a distribution is configured, else nothing (adapters/cdn.py)."""
    from chalicelib.adapters.cdn import default_invalidator

    return default_invalidator()


def build_static() -> tuple[Any, Any]:
    """(static site, page renderer) when DOCPUB_STATIC_PAGES is on: S3 under `static/`
    (aws) or files under the data folder (sqlite); else nothing (ports/static.py)."""
    from chalicelib.ports.static import NoStaticSite

    if not config.static_pages():
        return NoStaticSite(), None
    from chalicelib.entrypoints.share_pages import static_objects

    if config.storage() == "aws":
        from chalicelib.adapters.aws.static import S3StaticSite

        return S3StaticSite(), static_objects
    from chalicelib.adapters.sqlite.static import FileStaticSite

    return FileStaticSite(Path(config.data_dir()) / "static"), static_objects


def build_mailer() -> Mailer:
    """The configured Mailer (DOCPUB_MAIL: outbox, smtp(s)://, ses; adapters/mail)."""
    from chalicelib.adapters.mail import build_mailer as configured

    return configured()


def build_signers() -> SignerFactory:
    """Who signs versions (contract 7g): the KMS key the stack names, else a key file in the data folder."""
    if config.signing_kms_key():
        from chalicelib.adapters.aws.kms import KmsSigners

        return KmsSigners()
    return _local_signers(str(Path(config.data_dir()).resolve()))


@functools.lru_cache(maxsize=None)
def _local_signers(data_dir: str) -> SignerFactory:
    from chalicelib.adapters.signing import LocalSigners

    return LocalSigners(data_dir)


def build_outbound() -> OutboundHttp:
    """The one fenced client for requests to addresses strangers chose (adapters/outbound.py)."""
    from chalicelib.adapters.outbound import PinnedHttp

    return PinnedHttp()


def build_identity_provider() -> Any:
    """The OpenID provider of this deployment (adapters/oidc.py, Authlib), or None without
    DOCPUB_OIDC_* settings."""
    from chalicelib.adapters.oidc import configured_provider

    return configured_provider()


def build_webhook_sender() -> Any:
    """The outbound side of webhooks (adapters/webhook_sender.py): `send`, `check_target`,
    `TargetRefused`."""
    from chalicelib.adapters import webhook_sender

    return webhook_sender


def build_outbox_nudge() -> Callable[[], None]:
    """Called after a committed event: deployed (a queue configured), an SQS message that wakes
    the webhook worker; else nothing (the `make run` worker polls the outbox every second)."""
    if not config.webhook_queue_url():
        return lambda: None
    from chalicelib.adapters.aws.outbox import nudge

    return nudge


def build_export_runner() -> Callable[[str], None]:
    """How a started export is built in the background (services/exports.py): deployed (a
    queue configured), an SQS message the worker function builds it from; else a thread of
    this process (`make run`, the embedded store)."""
    if config.webhook_queue_url():
        from chalicelib.adapters.aws.outbox import send_export

        return send_export
    return export_in_thread


def export_in_thread(export_id: str) -> Any:
    """Build the export in a daemon thread of this process; the thread (tests join it)."""
    import threading

    thread = threading.Thread(target=lambda: exports().build(export_id), name=f"export-{export_id}", daemon=True)
    thread.start()
    return thread


def build_quiet_runner(ctx: Context) -> Callable[[dict], Any]:
    """How a quiet step runs after the answer (services/quiet_steps.py): deployed (a queue
    configured), an SQS message the worker function runs it from; else a daemon thread of
    this process, on `ctx`."""
    if config.webhook_queue_url():
        from chalicelib.adapters.aws.outbox import send_quiet_step

        return send_quiet_step
    return functools.partial(quiet_step_in_thread, ctx)


# The quiet steps' threads of this process not yet joined (`settle_quiet_steps`).
_QUIET_THREADS: list[Any] = []


def quiet_step_in_thread(ctx: Context, step: dict) -> Any:
    """Run the quiet step in a daemon thread of this process; the thread."""
    import threading

    thread = threading.Thread(target=run_quiet_step, args=(ctx, step), name="quiet-" + str(step.get("step")),
                              daemon=True)
    _QUIET_THREADS[:] = [t for t in _QUIET_THREADS if t.is_alive()] + [thread]
    thread.start()
    return thread


def run_quiet_step(ctx: Context, step: dict) -> None:
    """Run a quiet step on `ctx` (a thread of this process, or the worker's handler): the
    service method it names; failures logged, not raised (services/quiet_steps.run)."""
    from chalicelib.services import quiet_steps

    quiet_steps.run(ctx, step, _deliver_quiet_step)


def _deliver_quiet_step(ctx: Context, message: dict) -> None:
    from chalicelib.services import quiet_steps

    if message["step"] == quiet_steps.RECIPIENT_CODE:
        from chalicelib.services.recipients import RecipientService

        RecipientService(ctx).deliver_code(message["share_id"], message["email"])
    elif message["step"] == quiet_steps.RESET:
        from chalicelib.services.accounts import AccountService

        AccountService(ctx).deliver_reset(message["email"])
    elif message["step"] == quiet_steps.SIGN_UP:
        from chalicelib.services.accounts import AccountService

        AccountService(ctx).deliver_sign_up(message["email"], message["workspace_id"], message["workspace_name"])


def settle_quiet_steps(timeout: float = 30.0) -> None:
    """Wait for this process's quiet-step threads (tests read the outbox after them)."""
    while _QUIET_THREADS:
        _QUIET_THREADS.pop().join(timeout)


def read_outbox(limit: int) -> dict:
    """The latest messages of the outbox folder (`make admin ARGS=outbox`)."""
    from chalicelib.adapters.mail.outbox import read_outbox as read

    return {"outbox": config.outbox_dir(), "messages": read(config.outbox_dir(), limit)}


def new_context(**overrides: Any) -> Context:
    """A Context on the configured adapters; `overrides` replace fields (clock, sleep, repos, cdn, mail_factory)."""
    if "repos" not in overrides:
        overrides["repos"] = build_repositories()
    if "cdn" not in overrides:
        overrides["cdn"] = build_cdn()
    if "static" not in overrides:
        overrides["static"], overrides["static_render"] = build_static()
    overrides.setdefault("mail_factory", build_mailer)
    if "nudge_outbox" not in overrides:
        overrides["nudge_outbox"] = build_outbox_nudge()
    overrides.setdefault("signers_factory", build_signers)
    if "outbound" not in overrides:
        overrides["outbound"] = build_outbound()
    if "webhook_sender" not in overrides:
        overrides["webhook_sender"] = build_webhook_sender()
    if "run_export" not in overrides:
        overrides["run_export"] = build_export_runner()
    run_quiet = overrides.pop("run_quiet", None)
    ctx = Context(**overrides)
    ctx.run_quiet = run_quiet or build_quiet_runner(ctx)
    return ctx


@functools.lru_cache(maxsize=None)
def _process_context() -> Context:
    return new_context()


def default_context() -> Context:
    """The process's Context (what every request is served with; tests may swap it)."""
    return _process_context()


# ------------------------------------------------------------------ operator steps (scripts/)

def prepare_embedded_storage(data_dir: Path) -> Optional[dict]:
    """Create or migrate the SQLite database (importing an old snapshot folder once);
    the import's counts, or None when there was nothing to import."""
    from chalicelib.adapters.sqlite import open_storage
    from chalicelib.adapters.sqlite.importer import import_snapshot

    result = import_snapshot(data_dir)
    db, _blobs = open_storage(data_dir)
    db.close()
    return result


def ensure_aws_storage() -> None:
    """Create the DynamoDB table and S3 bucket if missing (emulators and tests only)."""
    from chalicelib.adapters.aws.schema import ensure_storage

    ensure_storage()


# ------------------------------------------------------------------ services (one per process)

@functools.lru_cache(maxsize=None)
def documents() -> DocumentService:
    from chalicelib.services.documents import DocumentService

    return DocumentService(default_context())


@functools.lru_cache(maxsize=None)
def workspaces() -> WorkspaceService:
    from chalicelib.services.workspaces import WorkspaceService

    return WorkspaceService(default_context())


@functools.lru_cache(maxsize=None)
def sharing() -> ShareService:
    from chalicelib.services.sharing import ShareService

    return ShareService(default_context())


@functools.lru_cache(maxsize=None)
def suggestions() -> SuggestionService:
    from chalicelib.services.suggestions import SuggestionService

    return SuggestionService(default_context())


@functools.lru_cache(maxsize=None)
def feedback() -> FeedbackService:
    from chalicelib.services.feedback import FeedbackService

    return FeedbackService(default_context())


@functools.lru_cache(maxsize=None)
def webhooks() -> WebhookService:
    from chalicelib.services.webhooks import WebhookService

    return WebhookService(default_context())


@functools.lru_cache(maxsize=None)
def accounts() -> AccountService:
    from chalicelib.services.accounts import AccountService

    return AccountService(default_context())


@functools.lru_cache(maxsize=None)
def editing() -> EditingService:
    from chalicelib.services.editing import EditingService

    return EditingService(default_context())


@functools.lru_cache(maxsize=None)
def views() -> ViewService:
    from chalicelib.services.views import ViewService

    return ViewService(default_context())


@functools.lru_cache(maxsize=None)
def oauth() -> OAuthService:
    from chalicelib.services.oauth import OAuthService

    return OAuthService(default_context())


@functools.lru_cache(maxsize=None)
def uploads() -> UploadService:
    from chalicelib.services.uploads import UploadService

    return UploadService(default_context())


@functools.lru_cache(maxsize=None)
def people() -> PeopleService:
    from chalicelib.services.people import PeopleService

    return PeopleService(default_context())


@functools.lru_cache(maxsize=None)
def activity() -> ActivityService:
    from chalicelib.services.activity import ActivityService

    return ActivityService(default_context())


@functools.lru_cache(maxsize=None)
def provenance() -> ProvenanceService:
    from chalicelib.services.provenance import ProvenanceService

    return ProvenanceService(default_context())


@functools.lru_cache(maxsize=None)
def reviews() -> ReviewService:
    from chalicelib.services.reviews import ReviewService

    return ReviewService(default_context())


@functools.lru_cache(maxsize=None)
def exports() -> ExportService:
    from chalicelib.services.exports import ExportService

    return ExportService(default_context())


@functools.lru_cache(maxsize=None)
def recipients() -> RecipientService:
    from chalicelib.services.recipients import RecipientService

    return RecipientService(default_context())


@functools.lru_cache(maxsize=None)
def shared_with_me() -> SharedWithMe:
    from chalicelib.services.recipients import SharedWithMe

    return SharedWithMe(default_context())


@functools.lru_cache(maxsize=None)
def dashboard_pages() -> DashboardPages:
    from chalicelib.services.dashboard_pages import DashboardPages

    return DashboardPages(documents(), workspaces(), feedback(), sharing(), views(), editing(), reviews(),
                          recipients())


def sso() -> SsoService:
    """Not cached: the provider follows the DOCPUB_OIDC_* settings (read lazily)."""
    from chalicelib.services.sso import SsoService

    return SsoService(default_context(), build_identity_provider())


_SERVICES = (documents, workspaces, sharing, feedback, suggestions, webhooks, accounts, editing, views, oauth, uploads, people, activity,
             reviews, recipients, shared_with_me, provenance, dashboard_pages, exports)


def reset() -> None:
    """Forget the cached Context and services (tests that swap storage or the clock)."""
    for accessor in _SERVICES:
        accessor.cache_clear()
    _process_context.cache_clear()
