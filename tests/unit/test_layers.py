"""The layers, checked on the source: entrypoints → services → domain, services
use storage through the ports only, and chalicelib/wiring.py is the one
composition root (the only module outside the adapters that imports one)."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHALICELIB = ROOT / "chalicelib"


def _sources(*roots: Path) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        found.extend([root] if root.is_file() else sorted(root.rglob("*.py")))
    return found


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (function-level too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _offenders(paths: list[Path], banned: tuple[str, ...], allowed=lambda rel: False) -> list[str]:
    return [f"{_rel(p)} imports {name}" for p in paths if not allowed(_rel(p))
            for name in sorted(_imports(p)) if any(name == b or name.startswith(b + ".") for b in banned)]


def test_only_the_composition_root_imports_an_adapter():
    code = _sources(CHALICELIB, ROOT / "app.py", ROOT / "scripts")
    assert _offenders(code, ("chalicelib.adapters",),
                      lambda rel: rel == "chalicelib/wiring.py" or rel.startswith("chalicelib/adapters/")) == []


def test_no_botocore_outside_the_aws_adapter():
    code = _sources(CHALICELIB, ROOT / "app.py")
    assert _offenders(code, ("botocore", "boto3"), lambda rel: rel.startswith("chalicelib/adapters/aws/")) == []


@pytest.mark.parametrize("layer", ["services", "domain", "ports"])
def test_inner_layers_open_no_connection(layer):
    """Network code is an adapter's: the client metadata fetch and webhook deliveries go
    through the one fenced outbound client (adapters/outbound.py); found in the review,
    services/cimd.py held its own copy of the pinned HTTPS connection."""
    banned = ("socket", "ssl", "http.client", "urllib.request", "httpx", "requests")
    assert _offenders(_sources(CHALICELIB / layer), banned) == []


def test_one_pinned_connection():
    """The DNS-rebinding-safe connection exists once (it existed twice, in
    adapters/webhook_sender.py and services/cimd.py, each with its own TLS context)."""
    defining = [_rel(p) for p in _sources(CHALICELIB) if "HTTPSConnection)" in p.read_text()]
    assert defining == ["chalicelib/adapters/outbound.py"]


@pytest.mark.parametrize("layer", ["services", "domain", "ports"])
def test_inner_layers_never_import_outer_ones(layer):
    banned = ("chalicelib.adapters", "chalicelib.wiring", "chalicelib.entrypoints", "chalice", "botocore",
              "boto3", "sqlite3", "moto", "app")
    assert _offenders(_sources(CHALICELIB / layer), banned) == []


def test_domain_and_ports_stand_alone():
    """domain/ is pure rules; ports/ is the storage vocabulary: neither knows the services."""
    for layer in ("domain", "ports"):
        assert _offenders(_sources(CHALICELIB / layer), ("chalicelib.services",)) == []


# ------------------------------------------------------------------ import circles (issue 37 item 7)

def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{module: the chalicelib modules it imports} over every module of chalicelib/.

    Every import counts, at any depth: module level, inside a function and under
    TYPE_CHECKING. Only a module-level circle fails when Python loads it, and the
    module-level graph has none; but a function-level import does not remove a circle,
    it defers it to the first call (operations.py reached entrypoints/http.py that way)
    and the two modules still know each other, which is what layers are about. A
    TYPE_CHECKING import is the same knowledge (ports/errors.py <-> ports/records.py).
    `from package import submodule` is an edge to the submodule alone: the package's
    __init__ runs before any of its submodules whoever imports them, so that is no edge
    of the importer's; a name the __init__ itself defines is an edge to the package."""
    modules = {_module_name(p): p for p in _sources(CHALICELIB)}

    def resolve(name: str) -> Optional[str]:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            found.update(r for n in names if n.split(".")[0] == "chalicelib" and (r := resolve(n)) and r != module)
        graph[module] = found
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of each strongly connected group of modules (Tarjan): the shortest way
    back to itself from each module no circle found so far passes: ["a", "b", "a"]."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    circles: list[list[str]] = []
    for group in groups:
        covered: set[str] = set()
        for start in sorted(group - covered):
            if start in covered:
                continue
            paths = {start: [start]}
            queue = [start]
            while queue:  # breadth first, inside the group: the shortest way back to `start`
                v = queue.pop(0)
                if start in graph[v] and len(paths[v]) > 1:
                    circles.append(paths[v] + [start])
                    covered.update(paths[v])
                    break
                for w in sorted(graph[v] & group):
                    if w not in paths:
                        paths[w] = paths[v] + [w]
                        queue.append(w)
    return sorted(circles)


def test_no_import_circle_in_chalicelib():
    """Layers point one way: no two modules of chalicelib/ need each other, through any
    number of others (issue 37 found three circles, through function-level imports)."""
    circles = import_circles(import_graph())
    assert circles == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"c"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c", "a"], ["d", "c", "d"]]


def test_operations_declare_and_import_no_entrypoint():
    """chalicelib/operations.py declares; the entrypoints (REST, MCP) read it and
    supply the HTTP parsing and answers."""
    assert _offenders([CHALICELIB / "operations.py"], ("chalicelib.entrypoints", "chalicelib.openapi", "chalice")) == []


def test_the_embedded_adapter_speaks_no_dynamodb():
    for path in _sources(CHALICELIB / "adapters" / "sqlite"):
        text = path.read_text()
        assert "ConditionalCheckFailed" not in text, _rel(path)
        # (the importer reads the old DynamoDB snapshot format, whose items say s3_key)
        assert "s3_key" not in text or path.name == "importer.py", _rel(path)


def test_every_aws_repository_raises_the_ports_errors_only():
    """Each public method of every object the AWS bundle hands out is guarded: a
    botocore error nothing handled leaves the adapter as the port's Unavailable."""
    from botocore.exceptions import ClientError, EndpointConnectionError

    from chalicelib.adapters.aws import repositories
    from chalicelib.adapters.aws.cdn import CloudFrontInvalidator
    from chalicelib.adapters.aws.errors import GUARDED, storage_errors
    from chalicelib.ports.errors import Unavailable

    import dataclasses

    bundle = repositories()
    parts = [getattr(bundle, f.name) for f in dataclasses.fields(bundle) if f.name != "kind"]
    assert None not in parts
    for part in [*parts, CloudFrontInvalidator("E1")]:
        assert getattr(type(part), GUARDED, False), f"{type(part).__name__} is not @storage_errors"

    @storage_errors
    class Failing:
        def throttled(self):
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "Query")

        def unreachable(self):
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")

    with pytest.raises(Unavailable) as caught:
        Failing().throttled()
    assert caught.value.code == "ThrottlingException"
    with pytest.raises(Unavailable) as caught:
        Failing().unreachable()
    assert caught.value.code == "EndpointConnectionError"


# The records the ports speak so far (chalicelib/ports/records.py; docs/architecture.md "Records").
TYPED = ("Feedback", "Reply", "Event", "Webhook", "WebhookSecret", "WebhookDelivery", "User", "DashboardSession",
         "Member", "AccountToken", "ActivityEntry", "PendingInvalidation", "RateLog")
# DocumentRepository's records (documents, versions, share links, idempotency answers).
TYPED += ("Document", "DocumentListing", "Version", "ShareLink", "StoredIdempotency")
TYPED += ("Workspace", "ApiKey", "KeyWriteLog")
TYPED += ("OAuthClient", "AuthorizationCode", "OAuthGrant", "AccessToken", "RefreshToken")  # ports/oauth.py
DYNAMODB_WORDS = ("PK", "SK", "GSI", "s3_key", "ConditionalCheckFailed", "LastEvaluatedKey", "TransactWriteItems")


def test_records_and_ports_speak_storage_language():
    """No DynamoDB word in a port or a record: neither in the source of chalicelib/ports
    (field names, signatures, docstrings) nor among the fields of a record type."""
    import dataclasses
    import re

    import chalicelib.ports.records as records

    pattern = re.compile(r"\b(" + "|".join(DYNAMODB_WORDS) + r")\w*")
    found = [f"{_rel(p)}:{n}: {m.group(0)}" for p in _sources(CHALICELIB / "ports")
             for n, line in enumerate(p.read_text().splitlines(), 1) for m in pattern.finditer(line)]
    assert found == []
    typed = records.record_types()
    assert set(TYPED) <= {t.__name__ for t in typed}
    fields = [f"{t.__name__}.{f.name}" for t in typed for f in dataclasses.fields(t)
              if pattern.search(f.name) or f.name.upper() in ("PK", "SK")]
    assert fields == []


SQL_WORDS = ("rowid", "row", "rows", "column", "columns", "sql", "sqlite", "table")


def test_record_fields_speak_no_sql():
    """No SQLite word among a record's fields either (an adapter's columns stay in the adapter)."""
    import dataclasses
    import re

    import chalicelib.ports.records as records

    pattern = re.compile(r"(^|_)(" + "|".join(SQL_WORDS) + r")(_|$)")
    typed = records.record_types()
    assert [f"{t.__name__}.{f.name}" for t in typed for f in dataclasses.fields(t) if pattern.search(f.name)] == []


# Ports whose every method takes and returns records (no `Record` dict, no dict of fields).
TYPED_PORTS = ("WorkspaceRepository", "ApiKeyRepository")
TYPED_PORTS += ("DocumentRepository",)
# A mapping by id of records is typed (DocumentRepository.get_many: dict[str, Document]).
_RECORDS_BY_ID = re.compile(r"dict\[str, (?!Any\b|Record\b)[A-Z]\w*\]")
TYPED_PORTS += ("OAuthRepository",)  # chalicelib/ports/oauth.py (imported by repositories.py)


def test_typed_ports_take_and_return_no_dicts():
    import inspect
    import re

    import chalicelib.ports.repositories as repositories

    untyped = []
    for name in TYPED_PORTS:
        for method, function in vars(getattr(repositories, name)).items():
            if not inspect.isfunction(function) or method.startswith("_"):
                continue
            for arg, annotation in function.__annotations__.items():
                if re.search(r"\b(Record|dict|Dict|Any)\b", _RECORDS_BY_ID.sub("", str(annotation))):
                    untyped.append(f"{name}.{method} {arg}: {annotation}")
    assert untyped == []
    key_member = repositories.DocumentRepository.get_with_key.__annotations__["return"]
    assert str(key_member).startswith("tuple[Optional[ApiKey],")


def test_typed_records_are_frozen():
    import dataclasses

    import chalicelib.ports.records as records

    for name in TYPED:
        cls = getattr(records, name)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name


# SQL's statements and clauses: none in a port's source (record fields: test_record_fields_speak_no_sql).
SQL_STATEMENT_WORDS = ("SELECT", "INSERT", "WHERE", "PRAGMA", "ROWID")


def test_ports_speak_no_sql():
    pattern = re.compile(r"\b(" + "|".join(SQL_STATEMENT_WORDS) + r")\b")
    found = [f"{_rel(p)}:{n}: {m.group(0)}" for p in _sources(CHALICELIB / "ports")
             for n, line in enumerate(p.read_text().splitlines(), 1) for m in pattern.finditer(line)]
    assert found == []


def test_no_port_speaks_plain_dicts():
    """Every port (each Protocol in chalicelib/ports) takes and returns records: no `Record`,
    no `Any`, no bare dict; a dict is only ever records (or figures) by id, `dict[str, …]`
    (or an outbound request's headers, `Mapping[str, str]`).
    The OAuth port was the last to speak `Record` (issue 25 item 2)."""
    import importlib
    import inspect

    checked, untyped = 0, []
    for path in _sources(CHALICELIB / "ports"):
        module = importlib.import_module("chalicelib.ports." + path.stem if path.stem != "__init__"
                                         else "chalicelib.ports")
        for name, port in vars(module).items():
            if not (inspect.isclass(port) and getattr(port, "_is_protocol", False) and port.__module__ == module.__name__):
                continue
            for method, function in vars(port).items():
                if not inspect.isfunction(function) or method.startswith("_"):
                    continue
                checked += 1
                for arg, annotation in function.__annotations__.items():
                    text = str(annotation)
                    if re.search(r"\b(Record|Any|Dict)\b|\b(dict|Mapping)\b(?!\[str, )", text):
                        untyped.append(f"{name}.{method} {arg}: {text}")
    assert checked >= 116 and untyped == []
