"""Issue 33, findings 4 and 5: what many waits and large PUTs cost the `make run` server.

    .venv/bin/python -m bench.waits [--waits 1000] [--wait-seconds 25] [--puts 8] [--put-mib 36] [--threaded]

1. `--waits` concurrent `GET /api/v1/feedback?wait=N` from one key (loopback), while
   `/api/v1/health` is asked every 0.2 s: the answers by status, how long the waits and
   the refusals took, health's slowest answer, the server's most threads and CPU.
2. `--puts` parallel PUTs of `--put-mib` MiB each to upload URLs: the server's resident
   memory before and at its highest (sampled every 20 ms), per PUT in flight.

`--threaded`: the waits come from one thread each (as a quick attack script does) instead
of one asyncio loop, and /api/v1/health is also probed from a process of its own: what the
loaded client measures and what the server does part ways.

It starts its own stack (tests/stack.py) in a temporary folder, loopback only.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

from bench._common import print_header, print_table
from tests.stack import LocalStack


class Sampler:
    """The worker process's threads, RSS and CPU, every `every` seconds, in a thread."""

    def __init__(self, pid: int, every: float = 0.02):
        self.proc = psutil.Process(pid)
        self.every = every
        self.threads = 0
        self.rss = 0
        self.cpu_start = sum(self.proc.cpu_times()[:2])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.threads = max(self.threads, self.proc.num_threads())
                self.rss = max(self.rss, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(self.every)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu = sum(self.proc.cpu_times()[:2]) - self.cpu_start


def health_probe(base_url: str, stop: threading.Event, latencies: list[float]) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        while not stop.is_set():
            start = time.monotonic()
            try:
                client.get("/api/v1/health")
                latencies.append(time.monotonic() - start)
            except httpx.HTTPError:
                latencies.append(float("inf"))
            stop.wait(0.2)


async def _waits(base_url: str, key: str, count: int, wait_seconds: int) -> list[tuple[int, float]]:
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Api-Key": key}, limits=limits,
                                 timeout=wait_seconds + 120) as client:
        async def one() -> tuple[int, float]:
            start = time.monotonic()
            try:
                answer = await client.get("/api/v1/feedback", params={"wait": wait_seconds})
                status = answer.status_code
            except httpx.HTTPError:
                status = 0
            return status, time.monotonic() - start

        return await asyncio.gather(*(one() for _ in range(count)))


def _threaded_waits(base_url: str, key: str, count: int, wait_seconds: int) -> list[tuple[int, float]]:
    results: list[tuple[int, float]] = []

    def one() -> None:
        start = time.monotonic()
        try:
            status = httpx.get(base_url + "/api/v1/feedback", params={"wait": wait_seconds},
                               headers={"X-Api-Key": key}, timeout=wait_seconds + 120).status_code
        except httpx.HTTPError:
            status = 0
        results.append((status, time.monotonic() - start))

    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


PROBE = """
import sys, time, urllib.request
url, latencies = sys.argv[1], []
try:
    while True:
        start = time.monotonic()
        urllib.request.urlopen(url, timeout=30).read()
        latencies.append(time.monotonic() - start)
        time.sleep(0.2)
except KeyboardInterrupt:
    print(max(latencies) if latencies else 0.0, flush=True)
"""


def waits(stack: LocalStack, count: int, wait_seconds: int, threaded: bool = False) -> dict:
    import signal
    import subprocess
    import sys

    latencies: list[float] = []
    stop = threading.Event()
    probe = threading.Thread(target=health_probe, args=(stack.base_url, stop, latencies), daemon=True)
    outside = subprocess.Popen([sys.executable, "-c", PROBE, stack.base_url + "/api/v1/health"],
                               stdout=subprocess.PIPE, text=True)
    with Sampler(stack.worker_pid() or 0) as sampler:
        probe.start()
        start = time.monotonic()
        results = (_threaded_waits(stack.base_url, stack.api_key, count, wait_seconds) if threaded
                   else asyncio.run(_waits(stack.base_url, stack.api_key, count, wait_seconds)))
        elapsed = time.monotonic() - start
        stop.set()
        probe.join()
    outside.send_signal(signal.SIGINT)
    outside_max = float((outside.communicate(timeout=30)[0] or "0").strip() or 0)
    by_status: dict[int, list[float]] = {}
    for status, seconds in results:
        by_status.setdefault(status, []).append(seconds)
    return {"elapsed": elapsed, "by_status": by_status, "health_max": max(latencies, default=0.0),
            "health_median": statistics.median(latencies) if latencies else 0.0,
            "threads": sampler.threads, "cpu": sampler.cpu, "health_outside_max": outside_max}


def puts(stack: LocalStack, count: int, mib: int) -> dict:
    size = mib * 1024 * 1024
    body = b"x" * size
    key = stack.admin("create-workspace", "--name", "Uploads", "--plan", "pro")["api_key"]  # room for them all
    with stack.client(key) as client:
        tickets = []
        statuses = []
        for i in range(count):
            answer = client.post("/api/v1/uploads", json={"filename": f"f{i}.zip", "size_bytes": size})
            statuses.append(answer.status_code)
            if answer.status_code == 201 or answer.status_code == 200:
                tickets.append(answer.json()["upload_url"])
    proc = psutil.Process(stack.worker_pid() or 0)
    before = proc.memory_info().rss
    put_status: list[int] = []

    def one(url: str) -> None:
        try:
            put_status.append(httpx.put(url, content=body, timeout=300).status_code)
        except httpx.HTTPError:
            put_status.append(0)

    with Sampler(proc.pid) as sampler:
        threads = [threading.Thread(target=one, args=(url,)) for url in tickets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    with stack.client(key) as client:
        usage = client.get("/api/v1/me").json()["workspace"].get("usage", {})
    return {"created": statuses, "put": put_status, "rss_before": before, "rss_max": sampler.rss,
            "per_put": (sampler.rss - before) / max(1, len(tickets)), "usage": usage}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--waits", type=int, default=1000)
    parser.add_argument("--wait-seconds", type=int, default=25)
    parser.add_argument("--puts", type=int, default=8)
    parser.add_argument("--put-mib", type=int, default=36)
    parser.add_argument("--threaded", action="store_true", help="one client thread per wait")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stack = LocalStack(Path(tmp) / "data").start()
        try:
            print_header(f"{args.waits} concurrent waits of {args.wait_seconds} s, one key")
            if args.waits:
                w = waits(stack, args.waits, args.wait_seconds, args.threaded)
                rows = [[status, len(times), f"{min(times):.2f}", f"{statistics.median(times):.2f}",
                         f"{max(times):.2f}"] for status, times in sorted(w["by_status"].items())]
                print_table(["status", "answers", "fastest s", "median s", "slowest s"], rows)
                print(f"\nall answered in {w['elapsed']:.1f} s; health (from this client) median "
                      f"{w['health_median'] * 1000:.0f} ms, slowest {w['health_max'] * 1000:.0f} ms; from a process "
                      f"of its own slowest {w['health_outside_max'] * 1000:.0f} ms; server threads at most "
                      f"{w['threads']}, CPU {w['cpu']:.1f} s")
            if args.puts:
                print_header(f"{args.puts} parallel PUTs of {args.put_mib} MiB")
                p = puts(stack, args.puts, args.put_mib)
                print(f"creations {p['created']}; PUTs {p['put']}")
                print(f"server RSS {p['rss_before'] / 2**20:.0f} MiB before, {p['rss_max'] / 2**20:.0f} MiB at most: "
                      f"{p['per_put'] / 2**20:.1f} MiB per PUT in flight; usage {p['usage']}")
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
