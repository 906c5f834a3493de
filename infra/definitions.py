"""The deployed stack's own definitions, read from infra/resources.yaml: one
source of truth for the table that DynamoDB Local gets in `make test-aws` and
the bench (chalicelib/adapters/aws/schema.py is the copy `make run` uses; a
test in tests/test_infra.py keeps the two equal)."""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

RESOURCES = Path(__file__).resolve().parent / "resources.yaml"


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub, !If...) as their long form."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _tag)


@functools.lru_cache(maxsize=1)
def template() -> dict:
    return yaml.load(RESOURCES.read_text(), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass


def resources() -> dict:
    return template()["Resources"]


def parameters() -> dict:
    return template().get("Parameters", {})


def _table() -> dict:
    tables = [r for r in resources().values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert len(tables) == 1
    return tables[0]["Properties"]


def table_create_params(name: str) -> dict:
    """CreateTable parameters for the stack's table, named `name`."""
    props = _table()
    params = {"TableName": name, "BillingMode": props["BillingMode"],
              "AttributeDefinitions": props["AttributeDefinitions"], "KeySchema": props["KeySchema"]}
    if props.get("GlobalSecondaryIndexes"):
        params["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return params


def ttl_specification() -> dict:
    spec = _table()["TimeToLiveSpecification"]
    return {"Enabled": bool(spec["Enabled"]), "AttributeName": spec["AttributeName"]}
