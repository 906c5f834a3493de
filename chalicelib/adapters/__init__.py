"""Storage adapters: the only code that talks to a database or a blob store.

`aws` (DynamoDB + S3) runs in Lambda; `sqlite` (SQLite + files) runs `make run`
and the admin CLI. Both implement chalicelib.ports and raise only the port's
errors (chalicelib/ports/errors.py). chalicelib/wiring.py, the composition root,
picks one from `DOCPUB_STORAGE`; nothing else imports this package."""
from __future__ import annotations

import importlib
from typing import Any, Callable

# Both adapters keep each repository in a module of the same name: (field of
# ports.Repositories, module, class), each class built over the adapter's store.
REPOSITORIES = (
    ("workspaces", "workspaces", "WorkspaceRepository"), ("keys", "workspaces", "ApiKeyRepository"),
    ("documents", "documents", "DocumentRepository"), ("feedback", "feedback", "FeedbackRepository"),
    ("rates", "rates", "RateLimitRepository"), ("users", "accounts", "UserRepository"),
    ("sessions", "accounts", "SessionRepository"), ("views", "views", "ViewCounterRepository"),
    ("oauth", "oauth", "OAuthRepository"), ("cdn_pending", "cdn", "PendingInvalidationRepository"),
    ("webhooks", "webhooks", "WebhookRepository"), ("people", "people", "PeopleRepository"),
    ("reviews", "reviews", "ReviewRepository"), ("leases", "leases", "LeaseRepository"),
    ("exports", "exports", "ExportRepository"), ("recipients", "recipients", "RecipientRepository"),
    ("signing_keys", "signing_keys", "SigningKeyRepository"),
)


def repository_factories(package: str, store: Any) -> dict[str, Callable[[], Any]]:
    """For each repository, what builds it over `store` (importing its module only then):
    a process imports only the adapter modules, and records, of what it serves."""
    def factory(module: str, name: str) -> Callable[[], Any]:
        return lambda: getattr(importlib.import_module(f"{package}.{module}"), name)(store)

    return {field: factory(module, name) for field, module, name in REPOSITORIES}
