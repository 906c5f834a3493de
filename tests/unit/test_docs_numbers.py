"""Numbers in the docs that drift when the code or the stack changes (issue 23):
the edge TTL of share answers, the viral-link figures and their prices. The
package sizes are checked in tests/e2e/test_infra.py (it builds the package)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import viral_link
from infra.definitions import parameters

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))


def test_every_mention_of_the_edge_ttl_gives_the_stacks_value():
    ttl = int(parameters()["ShareEdgeMaxTtl"]["Default"])
    mentions = 0
    for path in DOCS:
        text = " ".join(path.read_text().split())
        for match in re.finditer(r"`ShareEdgeMaxTtl`[^.;()]{0,40}?(\d+)\s*(s\b|seconds|hour|minute)", text):
            mentions += 1
            assert (int(match.group(1)), match.group(2)) in ((ttl, "s"), (ttl, "seconds")), (path.name, match.group(0))
    assert mentions >= 2


def _viral_rows() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "scaling.md").read_text()
    section = text[text.index("Measured (`bench/viral_link.py`"):]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| per 1,000"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
        elif rows and not line.startswith("|"):
            break
    return rows


@pytest.mark.parametrize("column", [0, 1])
def test_the_viral_link_costs_follow_from_the_measured_units_and_the_price_table(column):
    rows = _viral_rows()
    calls, reads, writes = (float(rows[name][column]) / 1000 for name in ("DynamoDB calls", "read units", "write units"))
    with_api, without, _ = viral_link.cost_per_million(calls, reads, writes)
    assert rows["$ per million views (API Gateway + Lambda + DynamoDB)"][column] == f"{with_api:.2f}"
    assert rows["$ per million views without API Gateway"][column] == f"{without:.2f}"


def test_deploy_md_prices_the_beacon_as_scaling_md_measured_it():
    measured = _viral_rows()["$ per million views (API Gateway + Lambda + DynamoDB)"][1]
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert f"${measured} per million as measured by" in " ".join(deploy.split())
    assert f"| View beacon (API Gateway + Lambda + DynamoDB) | ${measured} | ${measured} |" in deploy


def test_the_price_table_is_the_one_the_bench_uses():
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert f"| API Gateway REST | ${viral_link.API_GATEWAY_PER_MILLION:.2f} per million requests |" in deploy
    assert (f"| Lambda (x86) | ${viral_link.LAMBDA_REQUEST_PER_MILLION:.2f} per million requests + "
            f"${viral_link.LAMBDA_GB_SECOND:.10f} per GB-second |") in deploy
    assert (f"${viral_link.WRITE_UNIT_PER_MILLION} per million write units, "
            f"${viral_link.READ_UNIT_PER_MILLION} per million read units") in deploy
