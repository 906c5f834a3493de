"""Cold start (issue 10): a REST request never loads the heavy modules that
only the MCP, share-page and dashboard routes need; (issue 38) the share
function (chalicelib/entrypoints/edge.py) loads nothing of the dashboard, MCP,
OAuth, the REST operations or pydantic, at import or serving a share page
(bench/cold_start.py measures the time)."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cold_start import HEAVY, ME_EVENT

PROJECT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
import app
loaded_at_import = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
models_at_import = sorted(m for m in ("pydantic", "chalicelib.models") if m in sys.modules)

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
print(json.dumps({"import": loaded_at_import, "after": loaded, "statuses": statuses,
                  "models_at_import": models_at_import}))
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
    # Issue 38: the REST table names its models; they are built when a request reads them.
    assert result["models_at_import"] == [], "import app built the pydantic models"
    assert result["after"] == [], f"loaded by a REST request: {result['after']}"


def test_heavy_list_names_real_modules():
    """The check above is only worth something if these names are importable here."""
    import importlib.util

    for name in ("mcp", "jinja2", "argon2", "starlette", "anyio"):
        assert importlib.util.find_spec(name) is not None, name


# What the share function's routes (/d/*) never need: the other surfaces' entry points and
# services, the operations registry (it pulls every model), and the libraries behind them.
NOT_FOR_SHARE_PAGES = (
    "app", "chalicelib.entrypoints.dashboard", "chalicelib.entrypoints.mcp", "chalicelib.entrypoints.mcp_tools",
    "chalicelib.entrypoints.oauth", "chalicelib.entrypoints.rest", "chalicelib.entrypoints.pages",
    "chalicelib.services.oauth", "chalicelib.services.cimd", "chalicelib.services.dashboard_pages",
    "chalicelib.services.accounts", "chalicelib.operations", "chalicelib.openapi", "chalicelib.mcp_instructions",
    "chalicelib.models", "pydantic", "mcp", "starlette", "anyio", "httpx", "markdown_it", "pygments", "rapidfuzz",
    "re2",
    # The back office's records: loaded on first use (ports/records.py).
    "chalicelib.ports.back_office_records",
)
# The back office's repositories, in either adapter: a lazily built Repositories bundle builds a
# repository (and imports its module) on first read only.
BACK_OFFICE_ADAPTERS = ("oauth", "webhooks", "people", "exports", "accounts", "signing_keys", "leases", "cdn")

PUBLISH_SCRIPT = """
import json, os
from chalicelib import wiring
if os.environ["DOCPUB_STORAGE"] == "aws":
    from chalicelib.adapters.aws.schema import ensure_storage
    ensure_storage()
from chalicelib.models import PublishRequest
from chalicelib.services.auth import credentials_from_key

_, key = wiring.workspaces().create_workspace("Cold", "free")
doc = wiring.documents().publish(credentials_from_key(key.api_key),
                                 PublishRequest(title="Cold", html="<h1>Notes</h1><p>a small page</p>")).response
print(json.dumps({"share_id": doc.share_url.rsplit("/", 1)[-1], "version_id": doc.version_id}))
"""

SHARE_SCRIPT = """
import json, sys
from chalicelib.entrypoints import edge

def loaded():
    return sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in NOT_FOR_SHARE_PAGES))

def get(path):
    event = {"version": "2.0", "rawPath": path, "rawQueryString": "",
             "headers": {"user-agent": "Mozilla/5.0", "accept-encoding": "gzip"},
             "requestContext": {"requestId": "cold", "http": {"method": "GET", "path": path,
                                                              "sourceIp": "203.0.113.9"}},
             "isBase64Encoded": False}
    return edge.handle(event, None)["statusCode"]

at_import = loaded()
statuses = [get("/d/SHARE"), get("/d/SHARE/v/VERSION"), get("/d/NoSuchShareLinkAtAll00")]
print(json.dumps({"import": at_import, "after": loaded(), "statuses": statuses}))
"""


@pytest.fixture
def storage_env(request, tmp_path):
    """The share function's environment on the embedded store, or on DynamoDB + S3 (moto's
    server, in this process: the child must not import moto)."""
    env = {"PATH": "/usr/bin:/bin", "DOCPUB_STORAGE": request.param, "DOCPUB_DATA_DIR": str(tmp_path),
           "DOCPUB_SECRET_KEY": "cold-start-test-secret-" + "x" * 20}
    if request.param == "sqlite":
        yield env
        return
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env.update({"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                "DOCPUB_TABLE": "docpub-cold", "DOCPUB_BUCKET": "docpub-cold"})
    yield env
    server.stop()


@pytest.mark.parametrize("storage_env", ["sqlite", "aws"], indirect=True)
def test_the_share_function_loads_nothing_of_the_other_surfaces(storage_env):
    """Issue 38: the share function imported the whole app (every REST route, the dashboard,
    MCP, OAuth, all the pydantic models) on its first request; now its own app has the
    share routes only: a viewer's page, its content and a 404 load none of them, nor a
    back-office record or repository (the first request built every repository before)."""
    env = storage_env
    not_for_share_pages = NOT_FOR_SHARE_PAGES + tuple(
        f"chalicelib.adapters.{env['DOCPUB_STORAGE']}.{module}" for module in BACK_OFFICE_ADAPTERS)

    def run(script: str) -> dict:
        out = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    doc = run(PUBLISH_SCRIPT)
    result = run(SHARE_SCRIPT.replace("NOT_FOR_SHARE_PAGES", repr(not_for_share_pages))
                 .replace("SHARE", doc["share_id"]).replace("VERSION", doc["version_id"]))
    assert result["statuses"] == [200, 200, 404]
    assert result["import"] == [], f"imported by the share function: {result['import']}"
    assert result["after"] == [], f"loaded by share page requests: {result['after']}"
