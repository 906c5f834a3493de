"""Cold start: importing each function's handler in a fresh process, and its
first request, against importing boto3 + chalice + pydantic alone (the floor),
all in the same run, interleaved, median of N rounds.

    .venv/bin/python -m bench.cold_start [--rounds N]

Each scenario runs in a new interpreter and times only its own statements
(CPU time, process_time; wall time alongside), so interpreter start-up is
left out of both sides. Project code is byte-compiled first, as site-packages
already is (see docs/performance.md for what a Lambda zip ships). First
requests reach a moto server running in another process, so the emulator's
own start-up is not counted.

Targets (issue 38), against the literal floor measured in the same run:
- `import app` (the API function) at most 0.9x;
- the share function's import (`chalicelib.entrypoints.edge`, which builds its
  own app of the /d/* routes) at most 0.5x;
and (issue 10) heavy modules (mcp, jinja2, argon2, starlette, anyio, ...)
never loaded on REST routes.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._common import fake_aws_env, moto_server, ms, print_header, print_table, ratio, use_endpoint

PROJECT = Path(__file__).resolve().parent.parent
FLOOR = "floor: import boto3, chalice, pydantic"
IMPORT_APP = "import app"
IMPORT_SHARE = "share function: import chalicelib.entrypoints.edge"
# Ratios to FLOOR (issue 38).
TARGETS = {IMPORT_APP: 0.9, IMPORT_SHARE: 0.5}

# Modules that must never load for a REST request (tests/http/test_cold_start.py).
HEAVY = ("mcp", "jinja2", "markupsafe", "argon2", "_argon2_cffi_bindings", "starlette", "anyio", "httpx",
         "httpx2", "sse_starlette", "uvicorn", "moto", "itsdangerous")

_TIMER = """
import time, sys, json
_c, _w = time.process_time(), time.perf_counter()
{body}
_out = {{"cpu": time.process_time() - _c, "wall": time.perf_counter() - _w}}
_out["heavy"] = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
_out["modules"] = len(sys.modules)
print(json.dumps(_out))
"""

ME_EVENT = {
    "resource": "/api/v1/me", "path": "/api/v1/me", "httpMethod": "GET",
    "headers": {"x-api-key": "KEY"}, "multiValueHeaders": {"x-api-key": ["KEY"]},
    "queryStringParameters": None, "multiValueQueryStringParameters": None, "pathParameters": None,
    "stageVariables": None, "body": None, "isBase64Encoded": False,
    "requestContext": {"httpMethod": "GET", "resourcePath": "/api/v1/me", "path": "/api/v1/me",
                       "requestId": "cold", "identity": {"sourceIp": "127.0.0.1"}},
}

SCENARIOS = {
    FLOOR: "import boto3, chalice, pydantic",
    "floor, pydantic in use: + from pydantic import BaseModel, Field":
        "import boto3, chalice, pydantic\nfrom pydantic import BaseModel, Field",
    IMPORT_APP: "import app",
    IMPORT_SHARE: "import chalicelib.entrypoints.edge",
    "share function, first view: import + GET /d/<share> (function URL event)": (
        "import os, json\nfrom chalicelib.entrypoints import edge\n"
        "r = edge.handle(json.loads(os.environ['BENCH_SHARE_EVENT']), None)\n"
        "assert r['statusCode'] == 200, r\n"),
    "first request: import app + GET /api/v1/me": (
        "import os, json\nimport app\n"
        "class C: aws_request_id = 'cold'\n"
        "event = json.loads(os.environ['BENCH_ME_EVENT'])\n"
        "r = app.app(event, C())\n"
        "assert r['statusCode'] == 200, r\n"),
    "first request floor: pydantic in use + boto3 client + the same 2 GetItem": (
        "import os, boto3, chalice, pydantic\nfrom pydantic import BaseModel, Field\n"
        "c = boto3.client('dynamodb', region_name='us-east-1')\n"
        "c.get_item(TableName='docpub', Key={'PK': {'S': os.environ['BENCH_KEY_PK']}, 'SK': {'S': 'KEY'}},"
        " ConsistentRead=True)\n"
        "c.get_item(TableName='docpub', Key={'PK': {'S': os.environ['BENCH_WS_PK']}, 'SK': {'S': 'WS'}},"
        " ConsistentRead=True)\n"),
}


def share_event(share_id: str) -> dict:
    """A viewer's GET of a share page, as CloudFront hands it to the share function's URL."""
    path = f"/d/{share_id}"
    return {"version": "2.0", "rawPath": path, "rawQueryString": "",
            "headers": {"user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0", "accept-encoding": "gzip"},
            "requestContext": {"requestId": "cold", "http": {"method": "GET", "path": path,
                                                             "sourceIp": "203.0.113.9"}},
            "isBase64Encoded": False}


def run_child(body: str, cwd: Path, env: dict) -> dict:
    script = _TIMER.format(body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def source_only_copy() -> Path:
    """app.py + chalicelib without bytecode: what runs when no .pyc ships."""
    tmp = Path(tempfile.mkdtemp(prefix="docpub-cold-"))
    shutil.copy2(PROJECT / "app.py", tmp / "app.py")
    shutil.copytree(PROJECT / "chalicelib", tmp / "chalicelib", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    fake_aws_env()
    compileall.compile_file(str(PROJECT / "app.py"), quiet=1)
    compileall.compile_dir(str(PROJECT / "chalicelib"), quiet=1)
    no_pyc = source_only_copy()
    scenarios = dict(SCENARIOS)
    scenarios["import app, project code without .pyc"] = "import app"

    with moto_server() as endpoint:
        use_endpoint(endpoint)
        from chalicelib.adapters.aws.schema import ensure_storage
        from chalicelib.services import auth
        from chalicelib import wiring
        from chalicelib.models import PublishRequest
        from chalicelib.services.workspaces import WorkspaceService

        ensure_storage()
        ws, key = WorkspaceService(wiring.default_context()).create_workspace("Cold", "free")
        doc = wiring.documents().publish(auth.credentials_from_key(key.api_key),
                                         PublishRequest(title="Cold", html="<p>a small page</p>")).response
        event = json.loads(json.dumps(ME_EVENT).replace("KEY", key.api_key))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update({"AWS_ENDPOINT_URL": endpoint, "BENCH_ME_EVENT": json.dumps(event),
                    "BENCH_SHARE_EVENT": json.dumps(share_event(doc.share_url.rsplit("/", 1)[-1])),
                    "BENCH_KEY_PK": f"KEY#{auth.credentials_from_key(key.api_key).key_id}",
                    "BENCH_WS_PK": f"WS#{ws.id}"})
        results: dict[str, list[dict]] = {name: [] for name in scenarios}
        for _ in range(args.rounds):  # interleaved: machine load hits every scenario alike
            for name, body in scenarios.items():
                cwd = no_pyc if name.endswith("without .pyc") else PROJECT
                results[name].append(run_child(body, cwd, env))
    shutil.rmtree(no_pyc, ignore_errors=True)

    def median(name: str, field: str) -> float:
        return statistics.median(r[field] for r in results[name])

    floor = median(FLOOR, "cpu")
    floor_used = median("floor, pydantic in use: + from pydantic import BaseModel, Field", "cpu")
    request_floor = median("first request floor: pydantic in use + boto3 client + the same 2 GetItem", "cpu")
    print_header(f"Cold start: fresh interpreter per scenario, median of {args.rounds} interleaved rounds")
    rows = []
    for name in scenarios:
        cpu = median(name, "cpu")
        heavy = sorted({m for r in results[name] for m in r["heavy"]})
        target = ""
        if name in TARGETS:
            met = cpu / floor <= TARGETS[name]
            target = f"<= {TARGETS[name]}x the floor: {'met' if met else 'MISSED'}"
        if name.startswith("first request: "):
            target = f"{ratio(cpu, request_floor)} of the first-request floor"
        rows.append([name, ms(cpu), ms(median(name, "wall")), ratio(cpu, floor), ratio(cpu, floor_used),
                     int(statistics.median(r["modules"] for r in results[name])), ", ".join(heavy) or "none",
                     target])
    print_table(["scenario", "CPU (median)", "wall (median)", "vs floor", "vs floor, pydantic in use",
                 "modules", "heavy modules loaded", "target"], rows)
    print(f"heavy = {', '.join(HEAVY)}")
    print(f"floor = {FLOOR}; the share function's first view needs jinja2 (its page is a template).")


if __name__ == "__main__":
    main()
