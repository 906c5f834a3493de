"""Test fixtures. moto is imported before the app so every boto3 client is mocked."""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_REGION", "us-east-1")
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)
# Unit tests run on SQLite in a temporary folder per test (the `storage` fixture);
# tests of the DynamoDB adapter are marked `aws` and run on moto in-process.
os.environ["DOCPUB_STORAGE"] = "sqlite"
os.environ["DOCPUB_DATA_DIR"] = tempfile.mkdtemp(prefix="docpub-tests-")  # never the repo's .local
# The embedded store keeps a disk reserve per data folder (full-disk deletes); small in tests.
os.environ.setdefault("DOCPUB_DISK_RESERVE_BYTES", "131072")

import moto  # noqa: E402  (must come before any boto3 client is created)
import pytest  # noqa: E402

from tests.helpers import FakeClock  # noqa: E402


# `make test-aws` sets DOCPUB_TEST_ENGINES=local: the `aws` fixture (and so the
# storage contract suite and the `aws_engine` tests) then runs on DynamoDB Local
# and s3rver (tests/engines.py) instead of moto.
ON_ENGINES = os.environ.get("DOCPUB_TEST_ENGINES") == "local"


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="real engines only: make test-aws")
    for item in items:
        if "aws_engine" in item.keywords and not ON_ENGINES:
            item.add_marker(skip)


class _EngineAccount:
    """The real engines for the session; a fresh table and bucket per test."""

    def __init__(self):
        from tests import engines

        why = engines.missing()
        if why:
            pytest.exit(f"make test-aws: {why}", returncode=3)
        self.engines = engines.Engines().start()
        os.environ.update(self.engines.env)
        engines.patient_clients()
        self.serial = 0
        self.current = None

    def reset(self):
        from chalicelib.adapters.aws import clients
        from tests import engines

        clients.reset_clients()
        self.drop()
        self.serial += 1
        table, bucket = f"docpub-{self.serial}", f"docpub-documents-{self.serial}"
        os.environ["DOCPUB_TABLE"], os.environ["DOCPUB_BUCKET"] = table, bucket
        engines.create_storage(table, bucket)
        self.current = (table, bucket)

    def drop(self):
        from tests import engines

        if self.current:
            try:
                engines.drop_storage(*self.current)
            finally:
                self.current = None

    def stop(self):
        self.engines.stop()


@pytest.fixture(scope="session")
def _aws():
    if ON_ENGINES:
        account = _EngineAccount()
        yield account
        account.stop()
        return
    from tests.moto_isolation import serialize_emulated_dynamodb

    serialize_emulated_dynamodb()  # moto's transactions are not isolated under threads
    mock = moto.mock_aws()
    mock.start()
    yield mock
    mock.stop()


@pytest.fixture
def aws(_aws):
    """A fresh, empty account per test: moto (session-wide mock, reset per test),
    or under `make test-aws` a new table and bucket on the real engines."""
    from chalicelib.adapters.aws.schema import ensure_storage
    from chalicelib import wiring

    _aws.reset()
    wiring.reset()
    if not ON_ENGINES:
        ensure_storage()
    yield
    wiring.reset()


@pytest.fixture
def sqlite_storage(tmp_path, monkeypatch):
    """Services on a fresh SQLite database + blob folder (a temporary folder per test)."""
    from chalicelib.adapters.sqlite import close_shared
    from chalicelib import wiring

    monkeypatch.setenv("DOCPUB_STORAGE", "sqlite")
    monkeypatch.setenv("DOCPUB_DATA_DIR", str(tmp_path / "docpub-data"))
    wiring.reset()
    yield "sqlite"
    wiring.reset()
    close_shared()


@pytest.fixture
def aws_storage(aws, monkeypatch):
    """Services on DynamoDB + S3 emulated by moto in-process."""
    from chalicelib import wiring

    monkeypatch.setenv("DOCPUB_STORAGE", "aws")
    wiring.reset()
    yield "aws"
    wiring.reset()


@pytest.fixture
def storage(request):
    """The adapter under the default fixtures: SQLite, or moto for tests marked `aws`."""
    kind = getattr(request, "param", None) or ("aws" if request.node.get_closest_marker("aws") else "sqlite")
    return request.getfixturevalue(f"{kind}_storage")


@pytest.fixture
def app_clock(storage, clock):
    """The app's default context (what chalice.test.Client requests use) on the fake clock."""
    from chalicelib.wiring import default_context

    default_context().clock = clock
    return clock


@pytest.fixture
def fast_argon2(monkeypatch):
    """Cheap argon2 parameters for tests that sign many people up or in."""
    from tests.dashboard_client import FAST_ARGON2

    for name, value in FAST_ARGON2.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def ctx(storage, clock):
    from chalicelib.wiring import new_context

    return new_context(clock=clock)


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
def key(storage):
    """A free workspace's API key, on the app's default context."""
    from chalicelib import wiring

    _, created = wiring.workspaces().create_workspace("Test", "free")
    return created.api_key


@pytest.fixture
def client(storage):
    from chalice.test import Client

    from app import app

    with Client(app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def stack(tmp_path_factory, request):
    """One real local stack (`make run`: embedded store + chalice local) shared by e2e
    tests; under `make test-aws` the same stack with DOCPUB_STORAGE=aws on the engines."""
    from tests.stack import LocalStack

    env = None
    if ON_ENGINES:
        from tests import engines

        env = engines.stack_env(request.getfixturevalue("_aws").engines)
    running = LocalStack(tmp_path_factory.mktemp("stack") / "data", env=env).start()
    yield running
    running.stop()


@pytest.fixture
def api(storage, clock, monkeypatch):
    """chalice.test.Client whose services use the injected FakeClock."""
    from chalice.test import Client

    from app import app
    from chalicelib import wiring
    from chalicelib.wiring import new_context

    context = new_context(clock=clock)
    wiring.reset()
    monkeypatch.setattr(wiring, "default_context", lambda: context)
    with Client(app) as test_client:
        yield test_client
    wiring.reset()
