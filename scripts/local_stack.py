"""`make run`: the whole local stack on one port, with no AWS account.

- moto's server (S3 + DynamoDB) runs in this process on a free loopback port;
  boto3 reaches it through AWS_ENDPOINT_URL, so the app has no local-only path.
- the app runs under chalice local in a child process (autoreload included).
- state is restored from, and saved every second to, $DOCPUB_DATA_DIR, so it
  survives autoreloads, Ctrl-C and restarts; Ctrl-C stops everything.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEV_WORKSPACE_ID = "ws_dev"


def prepare_environment(data_dir: str) -> None:
    # moto accepts any credentials; never let a developer's real ones be used.
    os.environ["AWS_ACCESS_KEY_ID"] = "local"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "local"
    os.environ.pop("AWS_SESSION_TOKEN", None)
    os.environ.pop("AWS_PROFILE", None)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_REGION", os.environ["AWS_DEFAULT_REGION"])
    os.environ["DOCPUB_DATA_DIR"] = data_dir
    os.environ["DOCPUB_STORAGE"] = "aws"  # this stack serves DynamoDB/S3 from moto's server


def serialize_emulated_dynamodb() -> None:
    """One lock around every emulated DynamoDB request.

    moto's DynamoDB is not safe under concurrent requests: TransactWriteItems
    deep-copies each table it touches and, when any condition fails, puts that
    copy back, wiping whatever other requests committed in between (documents
    and acknowledged versions vanished under bench/load.py). Real DynamoDB
    isolates transactions; serialising the emulator restores that guarantee.
    """
    import threading

    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler, "_docpub_serialized", False):
        return
    lock = threading.RLock()
    call_action = DynamoHandler.call_action

    def serialized(self):
        with lock:
            return call_action(self)

    DynamoHandler.call_action = serialized
    DynamoHandler._docpub_serialized = True
    _skip_table_backup_when_conditions_hold()


def _skip_table_backup_when_conditions_hold() -> None:
    """moto backs up every table a transaction touches (a deep copy: O(table
    size), ~80 ms at 3,000 items) to roll back a failed condition. Under the
    lock above, a transaction whose conditions all hold cannot fail that way, so
    it runs without the copy; one that fails a condition takes moto's own path
    (same errors, same rollback)."""
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.comparisons import get_filter_expression

    original = models.DynamoDBBackend.transact_write_items

    class _NoTableCopy:
        @staticmethod
        def deepcopy(value, memo=None):
            return value if isinstance(value, models.Table) else copy.deepcopy(value, memo)

    def conditions_hold(backend, transact_items) -> bool:
        for action in transact_items:
            op_type, op = next(iter(action.items()))
            condition = op.get("ConditionExpression")
            if condition is None:
                continue
            table = backend.get_table(op["TableName"])
            if op_type == "Put":
                key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = op["Item"][table.range_key_attr]
            else:
                key = op["Key"]
            current = backend.get_item(op["TableName"], key)
            check = get_filter_expression(condition, op.get("ExpressionAttributeNames"),
                                          op.get("ExpressionAttributeValues"))
            if not check.expr(current):
                return False
        return True

    def transact_write_items(self, transact_items):
        try:
            fast = len(transact_items) <= 100 and conditions_hold(self, transact_items)
        except Exception:  # anything unusual: moto's own path decides
            fast = False
        if not fast:
            return original(self, transact_items)
        models.copy = _NoTableCopy
        try:
            return original(self, transact_items)
        finally:
            models.copy = copy

    models.DynamoDBBackend.transact_write_items = transact_write_items


def start_emulator():
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per emulated call is noise
    serialize_emulated_dynamodb()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    return server


def ensure_dev_workspace(data_dir: Path) -> tuple[str, bool]:
    """The dev workspace's key: DOCPUB_DEV_API_KEY, else the saved one, else a new one."""
    from chalicelib.services import auth
    from chalicelib.services.registry import workspaces

    service = workspaces()
    key_file = data_dir / "dev-api-key"
    wanted = os.environ.get("DOCPUB_DEV_API_KEY") or (
        key_file.read_text().strip() if key_file.exists() else "")
    if service.ctx.workspaces.get(DEV_WORKSPACE_ID) is None:
        service.create_workspace("Dev workspace", "free", workspace_id=DEV_WORKSPACE_ID, with_key=False)
    if wanted:
        credentials = auth.credentials_from_key(wanted)
        item = service.ctx.keys.get(credentials.key_id)
        if item is not None and item.get("revoked_at") is None and item["workspace_id"] == DEV_WORKSPACE_ID:
            _write_key(key_file, wanted)
            return wanted, False
    # Make room under the free plan's one-key cap, then create the key.
    for key in service.list_keys(DEV_WORKSPACE_ID):
        if not key["revoked"]:
            service.revoke_key(key["key_id"])
    created = service.create_key(DEV_WORKSPACE_ID, "dev", api_key=wanted or None)
    _write_key(key_file, created.api_key)
    return created.api_key, not wanted


def _write_key(path: Path, key: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")


def boot_storage(data_dir: Path):
    """Start the emulator, create tables and bucket, restore the snapshot."""
    from chalicelib.adapters.aws.schema import ensure_storage
    from scripts.snapshot import Snapshotter

    server = start_emulator()
    ensure_storage()
    snapshotter = Snapshotter(str(data_dir))
    snapshotter.restore()
    return server, snapshotter


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--no-autoreload", action="store_true")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("DOCPUB_DATA_DIR") or ".local").resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    prepare_environment(str(data_dir))
    os.environ["PORT"] = str(args.port)
    os.environ.setdefault("DOCPUB_BASE_URL", f"http://127.0.0.1:{args.port}")
    # Document content on a second site (localhost vs 127.0.0.1), so the browser
    # separates it from the dashboard and API as a deployment would (issue 15).
    # Set DOCPUB_CONTENT_URL= (empty) to serve content from the base URL instead.
    os.environ.setdefault("DOCPUB_CONTENT_URL", f"http://localhost:{args.port}")
    if not os.environ.get("DOCPUB_SECRET_KEY"):
        os.environ["DOCPUB_SECRET_KEY"] = _local_secret(data_dir)

    server, snapshotter = boot_storage(data_dir)
    key, generated = ensure_dev_workspace(data_dir)
    snapshotter.save()
    (data_dir / "emulator-endpoint").write_text(os.environ["AWS_ENDPOINT_URL"] + "\n")

    command = [sys.executable, "-m", "scripts.serve_local", "--port", str(args.port)]
    if args.no_autoreload:
        command.append("--no-autoreload")
    child = subprocess.Popen(command, cwd=PROJECT_DIR, env=os.environ.copy(), start_new_session=True)
    base = os.environ["DOCPUB_BASE_URL"]
    print(f"Docpub is running on {base}  (data in {data_dir})", flush=True)
    print(f"  API: {base}/api/v1   MCP: {base}/mcp   Dashboard: {base}/dashboard", flush=True)
    if os.environ.get("DOCPUB_CONTENT_URL"):
        print(f"  Document content: {os.environ['DOCPUB_CONTENT_URL']} (a separate site)", flush=True)
    if generated:
        print(f"  Dev workspace API key (saved to {data_dir / 'dev-api-key'}): {key}", flush=True)
    else:
        print(f"  Dev workspace API key: see {data_dir / 'dev-api-key'}", flush=True)

    stopping = {"flag": False}

    def stop(_signum, _frame):
        stopping["flag"] = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    code = 0
    try:
        while not stopping["flag"]:
            time.sleep(0.5)
            try:
                snapshotter.save()
            except Exception as exc:  # keep serving; report and try again next tick
                print(f"snapshot failed: {exc}", file=sys.stderr, flush=True)
            if child.poll() is not None:
                code = child.returncode or 0
                break
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
        snapshotter.save()
        (data_dir / "emulator-endpoint").unlink(missing_ok=True)
        server.stop()
    return code


def _local_secret(data_dir: Path) -> str:
    import secrets

    path = data_dir / "secret-key"
    if not path.exists():
        _write_key(path, secrets.token_urlsafe(32))
    return path.read_text().strip()


if __name__ == "__main__":
    sys.exit(main())
