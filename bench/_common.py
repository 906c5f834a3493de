"""Shared bench plumbing: machine description, tables, AWS call counting,
Lambda-style events. Benches measure their floor in the same run and print
ratios against it."""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional


def fake_aws_env() -> None:
    """Credentials and region for moto; never real AWS."""
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
                       "DOCPUB_STORAGE": "aws"})  # these benches measure the DynamoDB + S3 adapter
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        os.environ.pop(name, None)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    return (f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.system()} {platform.release()}")


def print_header(title: str) -> None:
    print(f"\n## {title}\n")
    print(f"Machine: {machine()}\n")


def print_table(headers: list[str], rows: Iterable[Iterable]) -> None:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    print()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def mib(n: float) -> str:
    return f"{n / 1048576:.2f} MiB"


def ratio(value: float, floor: float) -> str:
    return f"{value / floor:.2f}x" if floor > 0 else "n/a"


def median_cpu(fn: Callable[[], object], repeat: int) -> float:
    """The median CPU time (this process, every thread) of `repeat` calls of `fn`."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def median_time(fn: Callable[[], object], repeat: int = 5, setup: Optional[Callable[[], object]] = None) -> float:
    """Median wall time of fn() over `repeat` runs (setup not timed)."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ------------------------------------------------------------------ AWS calls

@dataclass
class CallLog:
    calls: list[str] = field(default_factory=list)
    aws_seconds: float = 0.0  # time inside the emulated wire (moto), from before-send to its answer

    def __len__(self) -> int:
        return len(self.calls)

    def summary(self) -> str:
        return ", ".join(self.calls)


@contextmanager
def count_aws_calls():
    """Count every AWS API call (one HTTP round trip each, retries aside) made
    through the app's cached boto3 clients, with botocore `before-call` hooks.
    Also times the send phase (`before-send` first to last handler), which under
    in-process moto is the emulated service's own work."""
    from chalicelib.adapters.aws import clients as aws

    log = CallLog()
    clients = [aws.dynamodb(), aws.s3()]
    started: list[float] = []

    def before_call(model, **_kwargs):
        log.calls.append(f"{model.service_model.service_name}.{model.name}")

    def send_start(**_kwargs):
        started.append(time.perf_counter())

    def send_end(**_kwargs):
        if started:
            log.aws_seconds += time.perf_counter() - started.pop()

    for client in clients:
        events = client.meta.events
        events.register("before-call", before_call, unique_id="docpub-bench-count")
        events.register_first("before-send", send_start, unique_id="docpub-bench-send-start")
        events.register_last("before-send", send_end, unique_id="docpub-bench-send-end")
    try:
        yield log
    finally:
        for client in clients:
            events = client.meta.events
            events.unregister("before-call", unique_id="docpub-bench-count")
            events.unregister("before-send", unique_id="docpub-bench-send-start")
            events.unregister("before-send", unique_id="docpub-bench-send-end")


# ------------------------------------------------------------------ Lambda events

def lambda_event(app, method: str, path: str, headers: Optional[dict] = None,
                 body: Optional[str] = None, query: Optional[dict] = None) -> dict:
    """An API Gateway (REST, proxy) event as Lambda delivers it: body is a str."""
    from chalice.local import RouteMatcher

    match = RouteMatcher(list(app.routes)).match_route(path)
    return {
        "resource": match.route, "path": path, "httpMethod": method,
        "headers": {k.lower(): v for k, v in (headers or {}).items()},
        "multiValueHeaders": {k.lower(): [v] for k, v in (headers or {}).items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": match.captured or None,
        "stageVariables": None,
        "requestContext": {"httpMethod": method, "resourcePath": match.route, "path": path,
                           "requestId": "bench", "identity": {"sourceIp": "127.0.0.1"}},
        "body": body, "isBase64Encoded": False,
    }


class LambdaContext:
    aws_request_id = "bench-request"
    function_name = "docpub-bench"
    memory_limit_in_mb = 1024

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def invoke(app, event: dict) -> dict:
    return app(event, LambdaContext())


def body_json(response: dict):
    import base64
    import gzip

    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        raw = base64.b64decode(body)
        if (response.get("headers") or {}).get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        body = raw.decode("utf-8")
    return json.loads(body) if body else None


# ------------------------------------------------------------------ an emulator in its own process

_SERVER_SCRIPT = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"http://{host}:{port}", flush=True)
sys.stdin.read()  # until the parent closes our stdin
server.stop()
"""


@contextmanager
def moto_server():
    """moto's server in a child process (its CPU time and memory stay out of
    ours); yields the endpoint URL. The child ends when we close its stdin."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", _SERVER_SCRIPT], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        endpoint = child.stdout.readline().strip()
        if not endpoint.startswith("http"):
            raise RuntimeError("moto server did not start")
        yield endpoint
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def use_endpoint(endpoint: str) -> None:
    """Point the app's clients at `endpoint` and sign S3 bodies as Lambda does.

    Over HTTPS with a checksum header (the app sends ChecksumSHA256) botocore
    sends UNSIGNED-PAYLOAD; over plain http it would SHA-256 the whole body for
    the signature, a cost Lambda never pays. Disable that here, explicitly."""
    from botocore.config import Config

    from chalicelib.adapters.aws import clients as aws

    os.environ["AWS_ENDPOINT_URL"] = endpoint
    original = aws._botocore_config  # per service (retry profiles)
    aws._botocore_config = lambda service: original(service).merge(Config(s3={"payload_signing_enabled": False}))
    aws.reset_clients()
