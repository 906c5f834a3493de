"""Bundle depth (issue 26): what the share link's per-depth file routes cost at cold start.

    .venv/bin/python -m bench.share_depth [--rounds N]

Share links serve a bundle's files from `/d/<share>/v/<version>/<p1>/…/<pN>`, one route
per depth (API Gateway and chalice local have no portable catch-all route), so the
deepest path a bundle may hold (domain/bundles.MAX_DEPTH) decides how many routes the
app registers, how many API Gateway resources the packaged template holds, and how
large the API's OpenAPI definition in that template is (chalice's CFN swagger, as
`make package` embeds it; CloudFormation refuses a template over 1 MB). Each round
imports app.py in a fresh interpreter with MAX_DEPTH set to 8, 16 and 32 (interleaved;
CPU time of the import alone, project code byte-compiled first); the ratio is against
depth 8 in the same run.
"""
from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench._common import ms, print_header, print_table, ratio

DEPTHS = (8, 16, 32)
ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, os, time
os.environ.setdefault("DOCPUB_STORAGE", "sqlite")
start = time.process_time()
import chalicelib.domain.bundles as bundles
bundles.MAX_DEPTH = {depth}
import app
elapsed = time.process_time() - start
paths = set(app.app.routes)
resources = set()
for path in paths:
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        resources.add("/".join(parts[:i]))
from chalice.deploy.swagger import CFNSwaggerGenerator
swagger = len(json.dumps(CFNSwaggerGenerator().generate_swagger(app.app), indent=2))
print(json.dumps({{"seconds": elapsed, "routes": len(paths), "resources": len(resources), "swagger": swagger}}))
"""


def probe(depth: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(depth=depth)], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "chalicelib"), quiet=1)
    compileall.compile_file(str(ROOT / "app.py"), quiet=1)
    seen: dict[int, list[dict]] = {depth: [] for depth in DEPTHS}
    for depth in DEPTHS:
        probe(depth)  # warm the file cache
    for _ in range(args.rounds):
        for depth in DEPTHS:
            seen[depth].append(probe(depth))
    floor = statistics.median(r["seconds"] for r in seen[DEPTHS[0]])
    rows = []
    for depth in DEPTHS:
        median = statistics.median(r["seconds"] for r in seen[depth])
        rows.append([str(depth), str(seen[depth][0]["routes"]), str(seen[depth][0]["resources"]),
                     f"{seen[depth][0]['swagger'] / 1000:,.0f} KB", ms(median), ratio(median, floor)])
    print_header("Share-link file routes per bundle depth: cold-start import of app.py (issue 26)")
    print_table(["MAX_DEPTH", "app routes", "API Gateway resources", "OpenAPI in the template",
                 "import app (CPU, median)", "vs depth 8"], rows)


if __name__ == "__main__":
    main()
