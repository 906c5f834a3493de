"""ports.repositories.lazy_repositories: each repository is built on its first read, once,
and a value set on the bundle (dataclasses.replace, a test's fake) wins (issue 38: the share
function's first view builds only what it reads)."""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.ports.repositories import Repositories, lazy_repositories

FIELDS = [f.name for f in dataclasses.fields(Repositories) if f.name != "kind"]


def counting_factories(built: list[str]) -> dict:
    def factory(name: str):
        def build():
            built.append(name)
            return object()
        return build
    return {name: factory(name) for name in FIELDS}


def test_a_repository_is_built_on_its_first_read_and_kept():
    built: list[str] = []
    repos = lazy_repositories("sqlite", counting_factories(built))
    assert built == [] and repos.kind == "sqlite"
    first = repos.documents
    assert repos.documents is first
    assert built == ["documents"]


def test_a_value_set_on_the_bundle_wins_and_replace_keeps_the_rest():
    built: list[str] = []
    repos = lazy_repositories("aws", counting_factories(built))
    fake = object()
    repos.blobs = fake
    assert repos.blobs is fake and built == []
    copy = dataclasses.replace(repos, documents=fake)
    assert copy.documents is fake and copy.blobs is fake and copy.kind == "aws"
    assert sorted(built) == sorted(set(FIELDS) - {"blobs", "documents"})  # replace read every other field


def test_every_field_needs_a_factory():
    with pytest.raises(ValueError, match="views"):
        lazy_repositories("sqlite", {n: object for n in FIELDS if n != "views"})


@pytest.mark.parametrize("kind", ["sqlite", "aws"])
def test_both_adapters_name_a_factory_for_every_repository(kind, tmp_path, monkeypatch):
    """Every field of the bundle builds (no adapter forgets one), each a distinct object."""
    if kind == "aws":
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        from chalicelib.adapters.aws import repositories

        repos = repositories()
    else:
        from chalicelib.adapters.sqlite import repositories as sqlite_repositories

        repos = sqlite_repositories(tmp_path, shared=False)
    parts = {name: getattr(repos, name) for name in FIELDS}
    assert None not in parts.values()
    assert type(parts["documents"]).__name__ == "DocumentRepository"


def test_records_re_exports_exactly_the_back_office_records():
    """ports/records.py loads a back-office record on first use by name: the names it lets
    through are the module's, no more, no fewer (a record added there is reachable here)."""
    import chalicelib.ports.back_office_records as back_office
    import chalicelib.ports.records as records

    assert records.BACK_OFFICE == set(back_office.__all__)
    assert set(back_office.__all__) <= set(records.__all__)
    for name in back_office.__all__:
        assert getattr(records, name) is getattr(back_office, name)
    with pytest.raises(AttributeError):
        records.NoSuchRecord  # noqa: B018
