"""docs/scaling.md's all-in table of a public link (issue 38, `bench/viral_link.py --all-in`):
the totals follow from the rows, the goals the bench checks are the ones the docs claim,
and docs/deploy.md prices the same figures."""
from __future__ import annotations

from pathlib import Path

from bench import viral_link

ROOT = Path(__file__).resolve().parents[2]


def _table() -> dict[str, list[float]]:
    text = (ROOT / "docs" / "scaling.md").read_text()
    section = text[text.index("### A public link, all-in (issue 38)"):]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| per million") and "---" not in line:
            cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
            rows[cells[0]] = [float(c) for c in cells[1:]]
        elif rows and not line.startswith("|"):
            break
    return rows


def test_the_totals_follow_from_the_rows_and_meet_the_goals():
    rows = _table()
    origin = [name for name in rows if name.startswith("origin:")]
    edge = ["CloudFront requests (3 per view)", "CloudFront data (28.0 KB per view)",
            "CloudFront Function (StaticRouteFunction, the page request)", "S3 GET, static copies on a miss",
            "CloudFront real-time logs (1 line per view)", "Kinesis PUT payload units (1 per view)"]
    for column in (0, 1):
        assert abs(sum(rows[name][column] for name in origin) - rows["origin"][column]) < 0.011
        total = sum(rows[name][column] for name in edge) + rows["origin"][column]
        assert abs(total - rows["all-in, $ per million views"][column]) < 0.011
    after_total, after_origin = rows["all-in, $ per million views"][1], rows["origin"][1]
    assert after_total <= viral_link.ALL_IN_GOAL and after_origin <= viral_link.ORIGIN_GOAL
    assert rows["origin requests per 1,000 views (after: counting invocations)"][1] <= viral_link.ORIGIN_REQUESTS_GOAL
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    before_total = rows["all-in, $ per million views"][0]
    assert f"| **All-in** | **≈ ${before_total:.2f}** | **≈ ${after_total:.2f}** |" in deploy
    assert f"${viral_link.CLOUDFRONT_FUNCTION_PER_MILLION:.2f} per million" in deploy
    # The real-time logs and the stream at the bench's prices, in both docs.
    for text in (" ".join(deploy.split()), " ".join((ROOT / "docs" / "scaling.md").read_text().split())):
        assert f"${viral_link.REALTIME_LOG_LINES_PER_MILLION} per million" in text
        assert f"${viral_link.KINESIS_PUT_UNITS_PER_MILLION} per million PUT payload units" in text
        assert f"${viral_link.KINESIS_SHARD_HOUR} per shard-hour" in text
        assert f"${viral_link.SHARD_MONTH:.2f} a month" in text
