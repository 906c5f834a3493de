"""A 5-second run of bench/load.py: zero 5xx, every acknowledged version readable."""
from __future__ import annotations

import pytest

from bench import load
from tests.stack import LocalStack

pytestmark = pytest.mark.e2e


def test_load_smoke(tmp_path):
    stack = LocalStack(tmp_path / "data", env=load.STACK_ENV).start()
    try:
        keys = load.provision_keys(stack, 4)
        result = load.run(stack.base_url, keys, duration=5, max_ops=2000)
    finally:
        stack.stop()
    assert result["server_errors"] == 0, result["failures"]
    assert result["verification"]["problems"] == []
    assert result["verification"]["versions_checked"] > 10
    assert {"publish", "edit", "get", "list"} <= set(result["operations"])
    if result["share_routes"]:
        assert "share_view" in result["operations"]


def test_load_refuses_anything_but_loopback():
    with pytest.raises(SystemExit, match="loopback only"):
        load.run("http://example.com", ["dpk_x"], duration=1, max_ops=1)
