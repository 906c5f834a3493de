"""Load test: concurrent clients against a local stack this script starts itself.

    python -m bench.load                      # 20 clients for 60 s (the documented run)
    python -m bench.load --duration 5 --clients 4
    python -m bench.load --json out.json      # also write the numbers as JSON

Loopback only: it starts `scripts.local_stack` on a free 127.0.0.1 port (`make run`:
embedded store + chalice local) and refuses any other address. Bounded in time
(--duration) and in count (--max-ops). Each client has its own API key of one
Pro workspace (so the plan cap does not apply) and runs a weighted mix:

- publish a new document; publish a new version of one of its own documents;
- edit one of its own documents; edit a *shared* document that every client
  edits at once (contention: optimistic concurrency must never lose an update);
- get a document (half of them with HTML); list documents;
- view a share link and post viewer feedback, when those routes exist.

Afterwards every acknowledged version is read back (GET ?include_html&version_id)
and compared with what the client sent: own documents byte for byte, shared
documents by the marker each edit inserted; the latest HTML of each shared
document must contain every acknowledged marker (no lost update). Exit status 1
on any 5xx, transport error or verification failure.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx

PROJECT_DIR = Path(__file__).resolve().parent.parent
SHARED_DOCUMENTS = 3
END = "<!--end-->"


def _routes() -> set[tuple[str, str]]:
    sys.path.insert(0, str(PROJECT_DIR))
    from app import app

    return {(m, p) for p, methods in app.routes.items() for m, e in methods.items()
            if e.view_name != "method_not_allowed"}


def _find(routes, method: str, suffix: str) -> str | None:
    for m, p in routes:
        parts = p.split("/")
        if m == method and p.startswith("/d/") and "/".join(parts[3:]) == suffix and len(parts) == 3 + bool(suffix):
            return p
    return None


@dataclass
class Acked:
    document_id: str
    version_id: str
    exact: str | None = None  # the whole HTML (own documents)
    marker: str | None = None  # a marker the HTML must contain (shared documents)


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    failures: list[str] = field(default_factory=list)
    acked: list[Acked] = field(default_factory=list)
    shared_markers: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)
    ops: int = 0

    def record(self, op: str, seconds: float, status: int, detail: str = "") -> None:
        with self.lock:
            self.ops += 1
            self.latencies[op].append(seconds)
            self.statuses[op][status] += 1
            if status >= 500 or status == 0:
                self.failures.append(f"{op}: {status} {detail[:300]}")


class Client:
    def __init__(self, index: int, base_url: str, key: str, shared: list[dict], stats: Stats,
                 share_view: str | None, feedback: str | None, seed: int):
        self.index = index
        self.http = httpx.Client(base_url=base_url, headers={"X-Api-Key": key}, timeout=60)
        self.shared = shared
        self.stats = stats
        self.share_view_route = share_view
        self.feedback_route = feedback
        self.rng = random.Random(seed)
        self.own: dict[str, dict] = {}  # document_id -> {"html", "share_id"}
        self.counter = 0

    def call(self, op: str, method: str, path: str, **kwargs) -> httpx.Response | None:
        start = time.perf_counter()
        try:
            r = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.stats.record(op, time.perf_counter() - start, 0, repr(exc))
            return None
        self.stats.record(op, time.perf_counter() - start, r.status_code, r.text)
        return r

    def html(self, title: str) -> str:
        body = "".join(f"<p>client {self.index} paragraph {i} {'ü漢' if i % 3 == 0 else ''}</p>"
                       for i in range(self.rng.randint(5, 60)))
        return f"<!doctype html><title>{title}</title><main>{body}{END}</main>"

    def step(self) -> None:
        self.counter += 1
        n = self.counter
        ops = [("publish_new", 10), ("publish_version", 12), ("edit_own", 18), ("edit_shared", 12),
               ("get", 22), ("list", 14)]
        if self.share_view_route:
            ops.append(("share_view", 8))
        if self.feedback_route:
            ops.append(("feedback", 4))
        if not self.own:
            op = "publish_new"
        else:
            op = self.rng.choices([o for o, _ in ops], [w for _, w in ops])[0]
        getattr(self, op)(n)

    def publish_new(self, n: int) -> None:
        html = self.html(f"c{self.index} doc {n}")
        r = self.call("publish", "POST", "/api/v1/publish", json={"title": f"c{self.index} doc {n}", "html": html})
        if r is not None and r.status_code == 200:
            body = r.json()
            self.own[body["document_id"]] = {"html": html, "share_id": body["share_url"].rsplit("/", 1)[1]}
            self.stats.acked.append(Acked(body["document_id"], body["version_id"], exact=html))

    def publish_version(self, n: int) -> None:
        document_id = self.rng.choice(list(self.own))
        html = self.html(f"c{self.index} v{n}")
        r = self.call("publish", "POST", "/api/v1/publish",
                      json={"title": f"c{self.index} doc", "html": html, "document_id": document_id})
        if r is not None and r.status_code == 200:
            self.own[document_id]["html"] = html
            self.stats.acked.append(Acked(document_id, r.json()["version_id"], exact=html))

    def edit_own(self, n: int) -> None:
        document_id = self.rng.choice(list(self.own))
        insert = f"<p>edit c{self.index} n{n}</p>"
        r = self.call("edit", "POST", f"/api/v1/documents/{document_id}/edit",
                      json={"edits": [{"old_string": END, "new_string": insert + END}]})
        if r is not None and r.status_code == 200:
            html = self.own[document_id]["html"].replace(END, insert + END)
            self.own[document_id]["html"] = html
            self.stats.acked.append(Acked(document_id, r.json()["version_id"], exact=html))

    def edit_shared(self, n: int) -> None:
        document_id = self.rng.choice(self.shared)["document_id"]
        marker = f"<p>shared c{self.index} n{n}</p>"
        r = self.call("edit", "POST", f"/api/v1/documents/{document_id}/edit",
                      json={"edits": [{"old_string": END, "new_string": marker + END}]})
        if r is not None and r.status_code == 200:
            with self.stats.lock:
                self.stats.shared_markers[document_id].append(marker)
            self.stats.acked.append(Acked(document_id, r.json()["version_id"], marker=marker))

    def get(self, n: int) -> None:
        document_id = self.rng.choice(list(self.own) + [d["document_id"] for d in self.shared])
        params = {"include_html": "true"} if n % 2 else {}
        self.call("get", "GET", f"/api/v1/documents/{document_id}", params=params)

    def list(self, n: int) -> None:
        self.call("list", "GET", "/api/v1/documents", params={"limit": self.rng.choice([5, 20, 100])})

    def any_share_id(self) -> str:
        return self.rng.choice([d["share_id"] for d in self.own.values()] + [d["share_id"] for d in self.shared])

    def share_view(self, n: int) -> None:
        path = fill(self.share_view_route, self.any_share_id())
        self.call("share_view", "GET", path, headers={"X-Api-Key": ""})

    def feedback(self, n: int) -> None:
        path = fill(self.feedback_route, self.any_share_id())
        self.call("feedback", "POST", path, json={"message": f"feedback {self.index}/{n}"}, headers={"X-Api-Key": ""})


def fill(template: str, value: str) -> str:
    """A route template with its one {parameter} replaced."""
    return template[:template.index("{")] + value + template[template.index("}") + 1:]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def run(base_url: str, keys: list[str], duration: float, max_ops: int, seed: int = 7) -> dict:
    host = urlparse(base_url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"refusing to load {host}: loopback only")
    routes = _routes()
    share_view = _find(routes, "GET", "")
    feedback = _find(routes, "POST", "feedback")
    stats = Stats()
    shared = []
    with httpx.Client(base_url=base_url, headers={"X-Api-Key": keys[0]}, timeout=60) as http:
        for i in range(SHARED_DOCUMENTS):
            r = http.post("/api/v1/publish", json={"title": f"shared {i}", "html": f"<main>shared {i}{END}</main>"})
            r.raise_for_status()
            shared.append({"document_id": r.json()["document_id"],
                           "share_id": r.json()["share_url"].rsplit("/", 1)[1]})
    clients = [Client(i, base_url, keys[i % len(keys)], shared, stats, share_view, feedback, seed + i)
               for i in range(len(keys))]
    deadline = time.monotonic() + duration
    started = time.monotonic()

    def work(client: Client) -> None:
        while time.monotonic() < deadline and stats.ops < max_ops:
            client.step()

    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(work, clients))
    elapsed = time.monotonic() - started

    verified = verify(base_url, keys[0], stats)
    for c in clients:
        c.http.close()
    return report(stats, elapsed, len(clients), verified, share_view is not None, feedback is not None)


def verify(base_url: str, key: str, stats: Stats) -> dict:
    """Read back every acknowledged version; check shared documents lost no edit."""
    problems: list[str] = []
    lock = threading.Lock()
    local = threading.local()

    def http() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base_url, headers={"X-Api-Key": key}, timeout=60)
        return local.client

    def check(acked: Acked) -> None:
        r = http().get(f"/api/v1/documents/{acked.document_id}",
                       params={"include_html": "true", "version_id": acked.version_id})
        ok = r.status_code == 200 and (
            (acked.exact is not None and r.json()["html"] == acked.exact)
            or (acked.marker is not None and acked.marker in r.json()["html"]))
        if not ok:
            with lock:
                problems.append(f"{acked.document_id}/{acked.version_id}: {r.status_code} {r.text[:200]}")

    with ThreadPoolExecutor(20) as pool:
        list(pool.map(check, stats.acked))
        with httpx.Client(base_url=base_url, headers={"X-Api-Key": key}, timeout=60) as client:
            for document_id, markers in stats.shared_markers.items():
                r = client.get(f"/api/v1/documents/{document_id}", params={"include_html": "true"})
                if r.status_code != 200:
                    problems.append(f"shared {document_id}: {r.status_code} {r.text[:300]}")
                    continue
                detail = r.json()
                missing = [m for m in markers if m not in detail["html"]]
                if missing:
                    problems.append(f"shared {document_id}: {len(missing)} acknowledged edits lost")
                if detail["version_count"] != len(markers) + 1:
                    problems.append(f"shared {document_id}: {detail['version_count']} versions for "
                                    f"{len(markers)} acknowledged edits")
    return {"versions_checked": len(stats.acked), "shared_edits_checked": sum(map(len, stats.shared_markers.values())),
            "problems": problems}


def report(stats: Stats, elapsed: float, clients: int, verified: dict, share: bool, feedback: bool) -> dict:
    operations = {}
    for op, values in sorted(stats.latencies.items()):
        operations[op] = {
            "count": len(values), "per_second": round(len(values) / elapsed, 1),
            "p50_ms": round(percentile(values, 50) * 1000, 1), "p95_ms": round(percentile(values, 95) * 1000, 1),
            "p99_ms": round(percentile(values, 99) * 1000, 1), "max_ms": round(max(values) * 1000, 1),
            "mean_ms": round(statistics.fmean(values) * 1000, 1),
            "statuses": dict(sorted(stats.statuses[op].items())),
        }
    server_errors = sum(n for op in stats.statuses.values() for s, n in op.items() if s >= 500 or s == 0)
    return {"clients": clients, "seconds": round(elapsed, 1), "requests": stats.ops,
            "throughput_per_second": round(stats.ops / elapsed, 1), "server_errors": server_errors,
            "operations": operations, "verification": verified, "share_routes": share, "feedback_route": feedback,
            "failures": stats.failures[:20]}


def markdown(result: dict) -> str:
    lines = [f"{result['clients']} clients, {result['seconds']} s, {result['requests']} requests, "
             f"{result['throughput_per_second']} requests/s, {result['server_errors']} server errors; "
             f"{result['verification']['versions_checked']} acknowledged versions read back, "
             f"{len(result['verification']['problems'])} problems.", "",
             "| operation | count | req/s | p50 ms | p95 ms | p99 ms | max ms | statuses |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for op, s in result["operations"].items():
        statuses = ", ".join(f"{k}×{v}" for k, v in s["statuses"].items())
        lines.append(f"| {op} | {s['count']} | {s['per_second']} | {s['p50_ms']} | {s['p95_ms']} | "
                     f"{s['p99_ms']} | {s['max_ms']} | {statuses} |")
    return "\n".join(lines)


def provision(clients: int) -> None:
    """(Run inside the stack's environment.) A Pro workspace with one key per client."""
    from scripts.admin import use_local_storage

    use_local_storage()  # the stack's own database, opened directly (safe while it runs)
    from chalicelib.wiring import workspaces

    service = workspaces()
    ws, key = service.create_workspace("load test", "pro")
    keys = [key.api_key] + [service.create_key(ws.id, f"client {i}").api_key for i in range(1, clients)]
    print(json.dumps({"workspace_id": ws.id, "keys": keys}))


def provision_keys(stack, clients: int) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"DOCPUB_DATA_DIR": str(stack.data_dir), "PORT": str(stack.port)})
    out = subprocess.run([sys.executable, "-m", "bench.load", "--provision", str(clients)], cwd=PROJECT_DIR,
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["keys"]


# Limits no load test should hit: the point is to measure, not to be refused.
STACK_ENV = {"DOCPUB_WRITE_RATE_LIMIT": "1000000", "DOCPUB_VIEWER_RATE_LIMIT": "1000000"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--max-ops", type=int, default=200_000, help="stop after this many requests")
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--log", help="copy the stack's log here afterwards")
    parser.add_argument("--provision", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.provision:
        provision(args.provision)
        return 0
    sys.path.insert(0, str(PROJECT_DIR))
    from tests.stack import LocalStack

    with tempfile.TemporaryDirectory(prefix="docpub-load-") as tmp:
        stack = LocalStack(Path(tmp) / "data", env=STACK_ENV).start()
        try:
            keys = provision_keys(stack, args.clients)
            result = run(stack.base_url, keys, args.duration, args.max_ops, args.seed)
        finally:
            stack.stop()
            if args.log:
                shutil.copyfile(stack.log_path, args.log)
    print(markdown(result))
    if result["verification"]["problems"] or result["failures"]:
        print("\nFAILURES:", *result["failures"], *result["verification"]["problems"][:20], sep="\n")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    ok = result["server_errors"] == 0 and not result["verification"]["problems"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
