"""Real engines for the AWS adapter: DynamoDB Local (the engine AWS ships for
development, a Java jar) and s3rver (an S3 emulator on node), on loopback, on
free ports chosen at start. `make test-aws` runs the storage contract suite and
the AWS end-to-end slice on them (docs/scaling.md, "What `make test-aws` proves").

`.ci/run` installs them with `scripts/engines.sh` into `.engines/` (git-ignored):
Debian `default-jre-headless`, npm `amplify-dynamodb-simulator` (carries the
DynamoDB Local jar and its sqlite4java libraries) and npm `s3rver`.

Pitfalls handled here (../shared/ENGINEERING-NOTES.md, "DynamoDB Local"): it runs
with `-inMemory -sharedDb` (otherwise data is per access key and region), from a
temporary working directory (it writes a metadata file there), without telemetry;
it listens on every interface, so the tests only ever talk to 127.0.0.1. s3rver
accepts only the credentials S3RVER/S3RVER, which DynamoDB Local does not check.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

PROJECT_DIR = Path(__file__).resolve().parent.parent
ENGINES_DIR = Path(os.environ.get("DOCPUB_ENGINES_DIR") or PROJECT_DIR / ".engines")
DYNAMODB_DIR = ENGINES_DIR / "node_modules" / "amplify-dynamodb-simulator" / "emulator"
S3RVER_BIN = ENGINES_DIR / "node_modules" / "s3rver" / "bin" / "s3rver.js"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER"}


def missing() -> Optional[str]:
    """Why the engines cannot run here (None: they can)."""
    if not shutil.which("java"):
        return "no java (apt-get install default-jre-headless)"
    if not shutil.which("node"):
        return "no node"
    if not (DYNAMODB_DIR / "DynamoDBLocal.jar").exists() or not S3RVER_BIN.exists():
        return f"engines not installed in {ENGINES_DIR} (scripts/engines.sh)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout} s")


@dataclass
class Engines:
    dynamodb_port: int = 0
    s3_port: int = 0
    workdir: Optional[Path] = None
    procs: list = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to use the engines (boto3 honours the per-service endpoints)."""
        return {"AWS_ENDPOINT_URL_DYNAMODB": f"http://127.0.0.1:{self.dynamodb_port}",
                "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{self.s3_port}",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", **CREDENTIALS}

    def start(self) -> "Engines":
        self.workdir = Path(tempfile.mkdtemp(prefix="docpub-engines-"))
        # Ports are picked just before the start: a collision fails the start loudly.
        self.dynamodb_port, self.s3_port = _free_port(), _free_port()
        log = open(self.workdir / "engines.log", "wb")  # noqa: SIM115 - closed with the processes
        self.procs.append(subprocess.Popen(
            ["java", f"-Djava.library.path={DYNAMODB_DIR / 'DynamoDBLocal_lib'}", "-Xmx512m",
             "-jar", str(DYNAMODB_DIR / "DynamoDBLocal.jar"), "-inMemory", "-sharedDb", "-disableTelemetry",
             "-port", str(self.dynamodb_port)],
            cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        (self.workdir / "s3").mkdir()
        self.procs.append(subprocess.Popen(
            ["node", str(S3RVER_BIN), "-d", str(self.workdir / "s3"), "-a", "127.0.0.1",
             "-p", str(self.s3_port), "--silent"],
            cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        try:
            _wait_listening(self.dynamodb_port, self.procs[0], "DynamoDB Local")
            _wait_listening(self.s3_port, self.procs[1], "s3rver")
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


PATIENCE = {"DOCPUB_EMULATOR_READ_TIMEOUT": "30"}


def patient_clients() -> None:
    """DynamoDB Local on a loaded 2-core machine can take seconds for what the
    service answers in milliseconds: a 30 s read timeout on the engines (the
    deployed profile's 3 s would turn a slow JVM into OutcomeUnknown answers that
    real DynamoDB never causes). Processes started with `PATIENCE` in their
    environment get the same."""
    from chalicelib.adapters.aws import clients

    os.environ.update(PATIENCE)
    clients._botocore_config.cache_clear()
    clients.reset_clients()


def create_storage(table: str, bucket: str) -> None:
    """The table (from the deployed stack's own definition in infra/resources.yaml)
    and the bucket, on whatever endpoints the clients point at."""
    from chalicelib.adapters.aws import clients as aws
    from infra.definitions import table_create_params, ttl_specification

    dynamodb = aws.dynamodb()
    try:
        dynamodb.create_table(**table_create_params(table))
    except dynamodb.exceptions.ResourceInUseException:
        pass  # a first call that timed out on a cold JVM and was retried: it did create the table
    dynamodb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100})
    aws.dynamodb().update_time_to_live(TableName=table, TimeToLiveSpecification=ttl_specification())
    aws.s3().create_bucket(Bucket=bucket)


def stack_env(engines: "Engines", table: str = "docpub-e2e", bucket: str = "docpub-e2e") -> dict[str, str]:
    """Create a table and bucket for a local stack (`make run`'s server) and the
    environment that runs it on the engines with DOCPUB_STORAGE=aws."""
    create_storage(table, bucket)
    return {**engines.env, **PATIENCE, "DOCPUB_STORAGE": "aws", "DOCPUB_TABLE": table, "DOCPUB_BUCKET": bucket}


def drop_storage(table: str, bucket: str) -> None:
    from chalicelib.adapters.aws import clients as aws

    aws.dynamodb().delete_table(TableName=table)
    s3 = aws.s3()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    s3.delete_bucket(Bucket=bucket)
