"""Issue 33 findings 4 and 5 on the real `make run` stack (loopback).

- 1,000 concurrent waits from one key. Old code: every one of them waited (1,003 server
  threads, health 6.5 s on the attacker's machine). Now 10 wait, the rest are 429 with
  Retry-After: 1 at once, and /api/v1/health answers within 1 s throughout.
- Parallel PUTs to upload URLs. Old code: chalice local read each body whole (about
  36 MB of server memory per 36 MiB PUT in flight). Now the server streams them to disk.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import httpx
import psutil
import pytest

pytestmark = pytest.mark.e2e

WAITS = 1000
WAIT_SECONDS = 10


async def _waits(base_url: str, key: str) -> list[tuple[int, float, str | None, float]]:
    limits = httpx.Limits(max_connections=WAITS, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Api-Key": key}, limits=limits,
                                 timeout=60) as client:
        async def one() -> tuple[int, float, str | None, float]:
            start = time.monotonic()
            answer = await client.get("/api/v1/feedback", params={"wait": WAIT_SECONDS})
            end = time.monotonic()
            return answer.status_code, end - start, answer.headers.get("Retry-After"), end

        return await asyncio.gather(*(one() for _ in range(WAITS)))


def test_a_thousand_waits_of_one_key_leave_health_answering(stack):
    key = stack.admin("create-workspace", "--name", "Waiters", "--plan", "free")["api_key"]
    latencies: list[float] = []
    threads = [0]
    stop = threading.Event()
    worker = psutil.Process(stack.worker_pid())

    def probe() -> None:
        with httpx.Client(base_url=stack.base_url, timeout=10) as client:
            while not stop.is_set():
                began = time.monotonic()
                assert client.get("/api/v1/health").status_code == 200
                latencies.append(time.monotonic() - began)
                threads[0] = max(threads[0], worker.num_threads())
                stop.wait(0.1)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        answers = asyncio.run(_waits(stack.base_url, key))
    finally:
        stop.set()
        prober.join()
    waited = [a for a in answers if a[0] == 200]
    print(f"health slowest {max(latencies) * 1000:.0f} ms over {len(latencies)} probes; "
          f"{len(waited)} waited; slowest refusal {max(a[1] for a in answers if a[0] == 429):.2f} s; "
          f"server threads at most {threads[0]}")
    refused = [a for a in answers if a[0] == 429]
    assert len(waited) + len(refused) == WAITS, sorted({a[0] for a in answers})
    assert waited and all(seconds >= WAIT_SECONDS for _, seconds, _, _ in waited)
    # At most 10 at once: each wait's last WAIT_SECONDS before its answer lie inside the
    # time it held a slot, so no more than 10 of those spans may overlap.
    spans = sorted([(end - WAIT_SECONDS, 1) for _, _, _, end in waited] + [(end, -1) for _, _, _, end in waited])
    running = [0]
    for _, step in spans:
        running.append(running[-1] + step)
    assert max(running) <= 10
    assert all(retry == "1" for _, _, retry, _ in refused)
    # Refused at once, not after waiting: well before a wait could end. The set-up of a
    # thousand sockets on a shared 2-core machine is included (2.5-4.3 s measured, 10.9 s
    # once with other test runs beside it), so the bound is 80 % of a wait, not half.
    assert sorted(seconds for _, seconds, _, _ in refused)[len(refused) // 2] < WAIT_SECONDS * 0.8
    assert len(latencies) >= 10 and max(latencies) < 1.0, latencies
    from scripts.serve_local import MAX_CONNECTIONS

    assert threads[0] <= MAX_CONNECTIONS + 20  # the connections' threads, bounded, and a few of the server's
    # The slots came back: the workspace can wait again.
    answer = httpx.get(stack.base_url + "/api/v1/feedback", params={"wait": 1}, headers={"X-Api-Key": key},
                       timeout=30)
    assert answer.status_code == 200


PUTS = 4
PUT_MIB = 20


def _peak_rss(pid: int, stop: threading.Event, peak: list[int]) -> None:
    proc = psutil.Process(pid)
    while not stop.is_set():
        peak[0] = max(peak[0], proc.memory_info().rss)
        time.sleep(0.01)


def test_puts_are_streamed_and_a_refused_one_leaves_nothing(stack):
    key = stack.admin("create-workspace", "--name", "Uploads", "--plan", "pro")["api_key"]
    size = PUT_MIB * 1024 * 1024
    page = b"<title>Streamed</title><p>" + b"x" * (3 * 1024 * 1024) + b"</p>"
    with stack.client(key) as client:
        tickets = [client.post("/api/v1/uploads", json={"filename": f"s{i}.zip", "size_bytes": size}).json()
                   for i in range(PUTS)]
        small = client.post("/api/v1/uploads", json={"filename": "page.html", "size_bytes": len(page)}).json()
    pid = stack.worker_pid()
    proc = psutil.Process(pid)
    before = proc.memory_info().rss
    peak, stop = [before], threading.Event()
    sampler = threading.Thread(target=_peak_rss, args=(pid, stop, peak), daemon=True)
    sampler.start()
    body = b"z" * size
    try:
        with concurrent.futures.ThreadPoolExecutor(PUTS) as pool:
            statuses = list(pool.map(lambda t: httpx.put(t["upload_url"], content=body, timeout=120).status_code,
                                     tickets))
    finally:
        stop.set()
        sampler.join()
    assert statuses == [204] * PUTS
    grown = (peak[0] - before) / 2**20
    print(f"server RSS {before / 2**20:.0f} MiB before, +{grown:.1f} MiB at most for {PUTS} x {PUT_MIB} MiB")
    assert grown < PUT_MIB, grown  # old code: about PUTS x PUT_MIB
    # Another length than declared: 422, nothing stored, no temporary file left.
    refused = httpx.put(small["upload_url"], content=page[:-1], timeout=30)
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "validation_error"
    folder = stack.data_dir / "blobs" / "uploads"
    assert not [p.name for p in folder.rglob("*") if p.name.startswith(".tmp-")]
    assert not [p for p in folder.rglob(f"{small['upload_id']}.bin")]
    # The declared length goes through the streamed path and publishes.
    assert httpx.put(small["upload_url"], content=page, timeout=30).status_code == 204
    with stack.client(key) as client:
        published = client.post("/api/v1/publish", json={"upload_id": small["upload_id"]})
        assert published.status_code == 200, published.text
        usage = client.get("/api/v1/me").json()["workspace"]["usage"]
    assert usage["pending_upload_bytes"] == PUTS * size
