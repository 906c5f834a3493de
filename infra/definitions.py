"""The deployed stack's own definitions, read from infra/resources.yaml: one
source of truth for the table that DynamoDB Local gets in `make test-aws` and
the bench (chalicelib/adapters/aws/schema.py is the copy `make run` uses; a
test in tests/e2e/test_infra.py keeps the two equal)."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

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


def _value(node, chosen: dict):
    """A condition operand: a parameter's value (`Ref`) or a literal."""
    if isinstance(node, dict) and set(node) == {"Ref"}:
        name = node["Ref"]
        return str(chosen.get(name, parameters()[name].get("Default", "")))
    return str(node)


def condition(name: str, chosen: Optional[dict] = None) -> bool:
    """Evaluate one of the template's Conditions with the parameters' defaults (or `chosen`)."""
    return _holds(template()["Conditions"][name], chosen or {})


def _holds(node, chosen: dict) -> bool:
    [(function, args)] = node.items()
    if function == "Fn::Equals":
        return _value(args[0], chosen) == _value(args[1], chosen)
    if function == "Fn::Not":
        return not _holds(args[0], chosen)
    if function == "Fn::And":
        return all(_holds(a, chosen) for a in args)
    if function == "Fn::Or":
        return any(_holds(a, chosen) for a in args)
    if function == "Condition":
        return _holds(template()["Conditions"][args], chosen)
    raise ValueError(f"unsupported condition function {function}")


def resolve(value, chosen: Optional[dict] = None):
    """`value` with every Fn::If decided as CloudFormation would with these parameters."""
    if isinstance(value, dict):
        if set(value) == {"Fn::If"}:
            name, when_true, when_false = value["Fn::If"]
            return resolve(when_true if condition(name, chosen) else when_false, chosen)
        return {k: resolve(v, chosen) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, chosen) for v in value]
    return value


def _table() -> dict:
    tables = [r for r in resources().values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert len(tables) == 1
    return tables[0]["Properties"]


def table_create_params(name: str, chosen: Optional[dict] = None) -> dict:
    """CreateTable parameters for the stack's table, named `name`, with the parameters'
    defaults (or `chosen`, e.g. {"IndexProjection": "all"}) deciding its Fn::If."""
    props = resolve(_table(), chosen)
    params = {"TableName": name, "BillingMode": props["BillingMode"],
              "AttributeDefinitions": props["AttributeDefinitions"], "KeySchema": props["KeySchema"]}
    if props.get("GlobalSecondaryIndexes"):
        params["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return params


def ttl_specification() -> dict:
    spec = _table()["TimeToLiveSpecification"]
    return {"Enabled": bool(spec["Enabled"]), "AttributeName": spec["AttributeName"]}
