"""`make run` on the embedded store: publish throughput, memory, idle CPU, restart.

    python -m bench.embedded                 # 10,000 documents (the documented run)
    python -m bench.embedded --count 2000    # a quick run

Starts `scripts.local_stack` (supervisor + server worker, SQLite + files) on a
free loopback port in a temporary data folder, then publishes `--count`
documents of 2 KB of HTML through HTTP with 8 client threads (keep-alive
connections, one Pro workspace, the write limit lifted). Prints, per 1,000
documents: the rate and the resident memory of the stack (sum over its process
tree); then idle CPU over 10 s and the restart time (SIGINT, start again, until
the health check answers) on the full data folder.

Floor, measured in the same run: a bare loop doing, per document, what a
durable publish cannot avoid: an fsync'd file write of the same bytes (temp
file, fsync, rename, fsync of the folder) plus an fsync'd SQLite commit
(WAL, synchronous=FULL) of a row. Throughput is reported as a ratio to it.

Targets: the last 1,000 at least 0.8x the rate of the first 1,000; at most
300 MiB resident at 10,000 documents; idle CPU under 1% of a core; restart
within 2 s.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil

from bench._common import print_header, print_table

PROJECT_DIR = Path(__file__).resolve().parent.parent
STACK_ENV = {"DOCPUB_WRITE_RATE_LIMIT": "100000000"}
HTML_BYTES = 2048
BLOCK = 1000


def html_of(i: int) -> str:
    head = f"<!doctype html><title>doc {i}</title><h1>Document {i}</h1><p>"
    filler = ("lorem ipsum dolor sit amet " * 100)[: HTML_BYTES - len(head) - len("</p>")]
    return head + filler + "</p>"


# ------------------------------------------------------------------ the stack's processes

def tree(top: psutil.Process) -> list[psutil.Process]:
    try:
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def rss_bytes(top: psutil.Process) -> int:
    total = 0
    for proc in tree(top):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def cpu_seconds(top: psutil.Process) -> float:
    total = 0.0
    for proc in tree(top):
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


# ------------------------------------------------------------------ floor

def floor_rate(folder: Path, seconds: float = 5.0, max_docs: int = 2000) -> float:
    """Documents per second of the bare durable work: fsync'd file + fsync'd SQLite commit."""
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "floor.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, key TEXT, size INTEGER)")
    blobs = folder / "blobs"
    blobs.mkdir(exist_ok=True)
    dir_fd = os.open(blobs, os.O_RDONLY)
    data = html_of(0).encode()
    done = 0
    start = time.perf_counter()
    try:
        while done < max_docs and time.perf_counter() - start < seconds:
            tmp = blobs / f".tmp-{done}"
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, blobs / f"{done}.html")
            os.fsync(dir_fd)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO docs (key, size) VALUES (?, ?)", (f"{done}.html", len(data)))
            conn.execute("COMMIT")
            done += 1
    finally:
        os.close(dir_fd)
        conn.close()
    return done / (time.perf_counter() - start)


# ------------------------------------------------------------------ publishing

def publish_all(base_url: str, keys: list[str], count: int, threads: int, on_block) -> list[str]:
    """Publish `count` documents with `threads` clients (client i uses keys[i % len(keys)]);
    on_block(n) after each 1,000."""
    lock = threading.Lock()
    state = {"next": 0, "done": 0}
    failures: list[str] = []

    def work(index: int) -> None:
        http = httpx.Client(base_url=base_url, headers={"X-Api-Key": keys[index % len(keys)]}, timeout=120)
        while True:
            with lock:
                if state["next"] >= count:
                    return
                i = state["next"]
                state["next"] += 1
            try:
                r = http.post("/api/v1/publish", json={"title": f"Document {i}", "html": html_of(i)})
                ok = r.status_code == 200
                if not ok:
                    failures.append(f"{r.status_code} {r.text[:200]}")
            except httpx.HTTPError as exc:
                failures.append(repr(exc))
            with lock:
                state["done"] += 1
                done = state["done"]
            if done % BLOCK == 0 or done == count:
                on_block(done)

    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(work, i) for i in range(threads)]:
            future.result()
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000, help="documents to publish (default 10,000)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--shared-key", action="store_true",
                        help="all client threads use one API key (default: one key each, as agents do)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(PROJECT_DIR))
    from tests.stack import LocalStack

    with tempfile.TemporaryDirectory(prefix="docpub-bench-") as tmp:
        floor = floor_rate(Path(tmp) / "floor")
        stack = LocalStack(Path(tmp) / "data", env=STACK_ENV).start()
        try:
            top = psutil.Process(stack.process.pid)
            owner = stack.admin("create-workspace", "--name", "Bench", "--plan", "pro")
            key = owner["api_key"]
            keys = [key]
            if not args.shared_key:
                with ThreadPoolExecutor(4) as pool:
                    keys += [made["api_key"] for made in pool.map(
                        lambda i: stack.admin("create-key", owner["workspace_id"], "--name", f"client {i}"),
                        range(1, args.threads))]
            rows = []
            marks = {"t": time.perf_counter(), "n": 0}
            rss_empty = rss_bytes(top)
            block_lock = threading.Lock()

            def on_block(done: int) -> None:
                with block_lock:
                    now = time.perf_counter()
                    rate = (done - marks["n"]) / (now - marks["t"])
                    marks.update(t=now, n=done)
                    rows.append((done, rate, rss_bytes(top)))
                    print(f"  {done:>6} documents: {rate:7.1f}/s, stack RSS {rss_bytes(top) / 1048576:6.1f} MiB",
                          file=sys.stderr, flush=True)

            started = time.perf_counter()
            failures = publish_all(stack.base_url, keys, args.count, args.threads, on_block)
            total_seconds = time.perf_counter() - started
            time.sleep(1.0)  # let the last answers settle before measuring idle
            cpu_before, wall_before = cpu_seconds(top), time.perf_counter()
            time.sleep(args.idle_seconds)
            idle_cpu = (cpu_seconds(top) - cpu_before) / (time.perf_counter() - wall_before)
            rss_final = rss_bytes(top)
            data_bytes = sum(p.stat().st_size for p in stack.data_dir.rglob("*") if p.is_file())

            stop_started = time.perf_counter()
            stack.stop()
            stop_seconds = time.perf_counter() - stop_started
            again = LocalStack(stack.data_dir, port=stack.port, env=STACK_ENV)
            restart_seconds = again.start().ready_seconds
            with again.client(key) as http:
                count = http.get("/api/v1/me").json()["workspace"]["document_count"]
            again.stop()
        finally:
            stack.stop()

    overall = args.count / total_seconds
    first, last = rows[0][1], rows[-1][1]
    print_header(f"Embedded store: publish {args.count:,} documents of {HTML_BYTES} B over HTTP, "
                 f"{args.threads} client threads, " + ("one shared API key" if args.shared_key else "one API key each"))
    print(f"Load average at the end (other work on this machine): "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print_table(["documents", "rate (docs/s)", "vs floor", "stack RSS (MiB)"],
                [[f"{n:,}", f"{rate:.1f}", f"{rate / floor:.2f}x", f"{rss / 1048576:.1f}"] for n, rate, rss in rows])
    checks = [
        ("floor: fsync'd file + fsync'd SQLite commit, bare loop", f"{floor:.1f} docs/s", ""),
        ("overall rate", f"{overall:.1f} docs/s ({overall / floor:.2f}x floor)", ""),
        ("last 1,000 vs first 1,000", f"{last / first:.2f}x", "PASS" if last >= 0.8 * first else "FAIL (>= 0.8x)"),
        (f"stack RSS empty -> at {args.count:,}", f"{rss_empty / 1048576:.1f} -> {rss_final / 1048576:.1f} MiB",
         "PASS" if rss_final <= 300 * 1048576 else "FAIL (<= 300 MiB)"),
        ("data folder", f"{data_bytes / 1048576:.1f} MiB", ""),
        (f"idle CPU over {args.idle_seconds:.0f} s (all processes)",
         f"{idle_cpu * 100:.2f}% of a core ({idle_cpu * args.idle_seconds * 1000:.0f} ms of CPU)",
         "PASS" if idle_cpu < 0.01 else "FAIL (< 1%)"),
        ("stop (SIGINT until every process exited)", f"{stop_seconds:.2f} s", ""),
        ("restart on the full data folder (until healthy)", f"{restart_seconds:.2f} s",
         "PASS" if restart_seconds <= 2 else "FAIL (<= 2 s)"),
        ("documents after restart", f"{count:,}", "PASS" if count == args.count else "FAIL"),
        ("failed requests", str(len(failures)), "PASS" if not failures else f"FAIL: {failures[:3]}"),
    ]
    print_table(["measure", "value", "target"], checks)
    return 0 if not failures and count == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
