"""Test fixtures. moto is imported before the app so every boto3 client is mocked."""
from __future__ import annotations

import os

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_REGION", "us-east-1")
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)
os.environ["DOCPUB_STORAGE"] = "aws"

import moto  # noqa: E402  (must come before any boto3 client is created)
import pytest  # noqa: E402

from tests.helpers import FakeClock  # noqa: E402


@pytest.fixture(scope="session")
def _aws():
    from scripts.local_stack import serialize_emulated_dynamodb

    serialize_emulated_dynamodb()  # moto's transactions are not isolated under threads
    mock = moto.mock_aws()
    mock.start()
    yield mock
    mock.stop()


@pytest.fixture
def aws(_aws):
    """A fresh, empty emulated account per test (session-wide mock, reset per test)."""
    from chalicelib.adapters.aws.schema import ensure_storage
    from chalicelib.services import registry

    _aws.reset()
    registry.reset()
    ensure_storage()
    yield
    registry.reset()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def ctx(aws, clock):
    from chalicelib.services.context import Context

    return Context(clock=clock)


@pytest.fixture
def services(ctx):
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.workspaces import WorkspaceService

    class Services:
        documents = DocumentService(ctx)
        workspaces = WorkspaceService(ctx)

    return Services()


@pytest.fixture
def workspace(services):
    """A free workspace and its key."""
    ws, key = services.workspaces.create_workspace("Acme", "free")
    return ws, key.api_key


@pytest.fixture
def client(aws):
    from chalice.test import Client

    from app import app

    with Client(app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """One real local stack (moto server + chalice local) shared by e2e tests."""
    from tests.stack import LocalStack

    running = LocalStack(tmp_path_factory.mktemp("stack") / "data").start()
    yield running
    running.stop()


@pytest.fixture
def api(aws, clock, monkeypatch):
    """chalice.test.Client whose services use the injected FakeClock."""
    from chalice.test import Client

    from app import app
    from chalicelib.services import registry
    from chalicelib.services.context import Context

    context = Context(clock=clock)
    registry.reset()
    monkeypatch.setattr(registry, "default_context", lambda: context)
    with Client(app) as test_client:
        yield test_client
    registry.reset()
