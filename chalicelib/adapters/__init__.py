"""Storage adapters: the only code that talks to a database or a blob store.

`aws` (DynamoDB + S3) runs in Lambda; `sqlite` (SQLite + files) runs `make run`
and the admin CLI. Both implement chalicelib.ports; `build_repositories` picks one
from `DOCPUB_STORAGE` (see chalicelib/config.py)."""
from __future__ import annotations

from typing import Optional

from chalicelib import config


def build_repositories(kind: Optional[str] = None):
    """A `Repositories` bundle for `kind` (default: config.storage())."""
    kind = kind or config.storage()
    if kind == "aws":
        from chalicelib.adapters.aws import repositories

        return repositories()
    if kind == "sqlite":
        from chalicelib.adapters.sqlite import repositories

        return repositories(config.data_dir())
    raise ValueError(f"DOCPUB_STORAGE must be 'sqlite' or 'aws', not {kind!r}")


def build_mailer():
    """Outgoing mail (ports/mail.py), as DOCPUB_MAIL says (chalicelib/adapters/mail)."""
    from chalicelib.adapters.mail import build_mailer as build

    return build()


def build_cdn():
    """The CDN withdrawn share links are invalidated in (ports/cdn.py): CloudFront when a
    distribution is configured, else nothing (see chalicelib/adapters/cdn.py)."""
    from chalicelib.adapters.cdn import default_invalidator

    return default_invalidator()


def build_webhook_sender():
    """The outbound side of webhooks (adapters/webhook_sender.py): `send`, `check_target`,
    `TargetRefused`."""
    from chalicelib.adapters import webhook_sender

    return webhook_sender


def build_outbox_nudge():
    """Called after a committed event: deployed (a queue configured), an SQS message that wakes
    the webhook worker; else nothing (the `make run` worker polls the outbox every second)."""
    from chalicelib import config

    if not config.webhook_queue_url():
        return lambda: None
    from chalicelib.adapters.aws.outbox import nudge

    return nudge


def build_mailer():
    """Outgoing mail (adapters/mail/): DOCPUB_MAIL picks the adapter."""
    from chalicelib.adapters.mail import build_mailer as build

    return build()
