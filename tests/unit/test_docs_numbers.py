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


def _viral_table() -> tuple[list[str], dict[str, list[str]]]:
    """(column headers, rows by name) of docs/scaling.md's viral-link table."""
    text = (ROOT / "docs" / "scaling.md").read_text()
    section = text[text.index("Measured (`make bench-aws`, `bench/viral_link.py`"):]
    header, rows = [], {}
    for line in section.splitlines():
        if line.startswith("| per 1,000"):
            header = [c.strip() for c in line.strip("|").split("|")][1:]
        elif line.startswith("| ") and header:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
        elif rows and not line.startswith("|"):
            break
    return header, rows


PRICE_ROW = "$ per million views (the beacon: API Gateway where used + Lambda + DynamoDB)"


@pytest.mark.parametrize("column", [0, 1, 2])
def test_the_viral_link_costs_follow_from_the_measured_units_and_the_price_table(column):
    header, rows = _viral_table()
    assert [name for name, _, _ in viral_link.FRONT_DOORS] == header  # the bench's rows, in order
    calls, reads, writes = (float(rows[name][column]) / 1000 for name in ("DynamoDB calls", "read units", "write units"))
    extra = float(rows["function URL event translation, ms per beacon"][column])
    with_api, without, _ = viral_link.cost_per_million(calls, reads, writes, extra)
    through_api_gateway = viral_link.FRONT_DOORS[column][2]
    assert rows[PRICE_ROW][column] == f"{with_api if through_api_gateway else without:.2f}"
    baseline = float(rows[PRICE_ROW][0])
    assert rows["cost vs write-through"][column] == f"{float(rows[PRICE_ROW][column]) / baseline:.2f}x"


def test_the_deployed_design_meets_the_cost_goal_as_documented():
    header, rows = _viral_table()
    deployed = float(rows[PRICE_ROW][header.index("aggregated, function URL (deployed)")])
    assert deployed < viral_link.COST_GOAL
    assert int(rows["hottest item, writes/s"][2]) <= viral_link.ITEM_WRITE_TARGET
    text = " ".join((ROOT / "docs" / "scaling.md").read_text().split())
    assert f"**The $2 per million goal is met: ${deployed:.2f}**" in text


def test_deploy_md_prices_the_beacon_as_scaling_md_measured_it():
    header, rows = _viral_table()
    measured = rows[PRICE_ROW][header.index("aggregated, function URL (deployed)")]
    before = rows[PRICE_ROW][header.index("aggregated, API Gateway (before the share function)")]
    deploy = " ".join((ROOT / "docs" / "deploy.md").read_text().split())
    assert f"${measured} per million as measured by" in deploy
    assert f"${before} when it went through API Gateway" in deploy
    assert f"| View beacon (function URL: Lambda + DynamoDB) | ${measured} | ${measured} |" in deploy


def test_the_price_table_is_the_one_the_bench_uses():
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert f"| API Gateway REST | ${viral_link.API_GATEWAY_PER_MILLION:.2f} per million requests |" in deploy
    assert (f"| Lambda (x86) | ${viral_link.LAMBDA_REQUEST_PER_MILLION:.2f} per million requests + "
            f"${viral_link.LAMBDA_GB_SECOND:.10f} per GB-second |") in deploy
    assert (f"${viral_link.WRITE_UNIT_PER_MILLION} per million write units, "
            f"${viral_link.READ_UNIT_PER_MILLION} per million read units") in deploy


def test_every_mention_of_the_share_reservation_gives_the_stacks_value():
    reserved = int(parameters()["ShareReservedConcurrency"]["Default"])
    mentions = 0
    for path in DOCS + [ROOT / "infra" / "README.md"]:
        text = " ".join(path.read_text().split())
        for match in re.finditer(r"`ShareReservedConcurrency`[^.;`]{0,12}?\((\d+)", text):
            mentions += 1
            assert int(match.group(1)) == reserved, (path.name, match.group(0))
    assert mentions >= 3


def test_the_readme_quotes_the_costs_deploy_md_computes():
    """README's one-line cost summary had drifted ($7.50 per million views against
    deploy.md's $13, before the share function made it $8.60)."""
    deploy = " ".join((ROOT / "docs" / "deploy.md").read_text().split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    views = re.search(r"\| \*\*Total\*\* \| \*\*≈ \$([\d.]+)\*\* \| \*\*≈ \$[\d.]+\*\* \|", deploy).group(1)
    fixed = re.search(r"plus the fixed ~\$([\d.]+)", deploy).group(1)
    header, rows = _viral_table()
    beacon = rows[PRICE_ROW][header.index("aggregated, function URL (deployed)")]
    assert f"${views} per million share views (the view beacon, measured: ${beacon} of it)" in readme
    assert f"plus ~${fixed}/month fixed" in readme
