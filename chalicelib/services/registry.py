"""Default service instances, created on first use and cached per process."""
from __future__ import annotations

import functools

from chalicelib.services.context import default_context


@functools.lru_cache(maxsize=None)
def documents():
    from chalicelib.services.documents import DocumentService

    return DocumentService(default_context())


@functools.lru_cache(maxsize=None)
def workspaces():
    from chalicelib.services.workspaces import WorkspaceService

    return WorkspaceService(default_context())


@functools.lru_cache(maxsize=None)
def uploads():
    from chalicelib.services.uploads import UploadService

    return UploadService(default_context())


@functools.lru_cache(maxsize=None)
def sharing():
    from chalicelib.services.sharing import ShareService

    return ShareService(default_context())


@functools.lru_cache(maxsize=None)
def feedback():
    from chalicelib.services.feedback import FeedbackService

    return FeedbackService(default_context())


@functools.lru_cache(maxsize=None)
def webhooks():
    from chalicelib.services.webhooks import WebhookService

    return WebhookService(default_context())


@functools.lru_cache(maxsize=None)
def accounts():
    from chalicelib.services.accounts import AccountService

    return AccountService(default_context())


@functools.lru_cache(maxsize=None)
def editing():
    from chalicelib.services.editing import EditingService

    return EditingService(default_context())


@functools.lru_cache(maxsize=None)
def views():
    from chalicelib.services.views import ViewService

    return ViewService(default_context())


@functools.lru_cache(maxsize=None)
def oauth():
    from chalicelib.services.oauth import OAuthService

    return OAuthService(default_context())


@functools.lru_cache(maxsize=None)
def people():
    from chalicelib.services.people import PeopleService

    return PeopleService(default_context())


@functools.lru_cache(maxsize=None)
def activity():
    from chalicelib.services.activity import ActivityService

    return ActivityService(default_context())


@functools.lru_cache(maxsize=None)
def dashboard_pages():
    from chalicelib.services.dashboard_pages import DashboardPages

    return DashboardPages(documents(), workspaces(), feedback(), sharing(), views(), editing())


def reset() -> None:
    """Forget cached instances (tests that swap the context)."""
    from chalicelib.services import context

    documents.cache_clear()
    workspaces.cache_clear()
    sharing.cache_clear()
    uploads.cache_clear()
    feedback.cache_clear()
    webhooks.cache_clear()
    accounts.cache_clear()
    editing.cache_clear()
    views.cache_clear()
    oauth.cache_clear()
    people.cache_clear()
    activity.cache_clear()
    dashboard_pages.cache_clear()
    context.default_context.cache_clear()
