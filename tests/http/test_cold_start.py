"""Cold start (issue 10): a REST request never loads the heavy modules that
only the MCP, share-page and dashboard routes need (bench/cold_start.py
measures the time)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.cold_start import HEAVY, ME_EVENT

PROJECT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
import app
loaded_at_import = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))

class Context:
    aws_request_id = "cold-test"

event = json.loads(EVENT)
statuses = []
# Requests that run the whole REST path (routing, middleware, auth, parsing,
# error rendering) without reaching AWS: no key on a read, then on a write with
# malformed JSON (the key is judged first, so both are 401).
statuses.append(app.app(event, Context())["statusCode"])
publish = dict(event, resource="/api/v1/publish", path="/api/v1/publish", httpMethod="POST",
               headers={"content-type": "application/json"}, body="{not json")
publish["requestContext"] = dict(event["requestContext"], httpMethod="POST", resourcePath="/api/v1/publish")
statuses.append(app.app(publish, Context())["statusCode"])
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
print(json.dumps({"import": loaded_at_import, "after": loaded, "statuses": statuses}))
"""


def test_rest_routes_load_no_heavy_module():
    event = dict(ME_EVENT, headers={}, multiValueHeaders={})
    script = SCRIPT.replace("HEAVY", repr(HEAVY)).replace("EVENT", repr(json.dumps(event)))
    env = {"PATH": "/usr/bin:/bin", "AWS_LAMBDA_FUNCTION_NAME": "docpub-cold-test",  # as in Lambda: DynamoDB + S3
           "DOCPUB_SECRET_KEY": "cold-start-test-secret-" + "x" * 20,  # deployed, the app refuses to start without
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing"}
    out = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["statuses"] == [401, 401]
    assert result["import"] == [], f"imported by app.py: {result['import']}"
    assert result["after"] == [], f"loaded by a REST request: {result['after']}"


def test_heavy_list_names_real_modules():
    """The check above is only worth something if these names are importable here."""
    import importlib.util

    for name in ("mcp", "jinja2", "argon2", "starlette", "anyio"):
        assert importlib.util.find_spec(name) is not None, name
