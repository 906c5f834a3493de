"""Small test helpers."""
from __future__ import annotations

import json


class FakeClock:
    """An injectable clock: tests move time instead of sleeping."""

    def __init__(self, start: float = 1_795_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def auth(key: str) -> dict:
    return {"X-Api-Key": key, "Content-Type": "application/json"}


def post_json(client, path: str, body, key: str | None = None, headers: dict | None = None):
    h = {"Content-Type": "application/json"}
    if key:
        h["X-Api-Key"] = key
    h.update(headers or {})
    return client.http.post(path, headers=h, body=json.dumps(body))


def run_together(targets):
    """Start every callable at the same instant (a barrier); return (results, failures)
    where failures are the exceptions' class names."""
    import threading

    barrier = threading.Barrier(len(targets))
    results, failures = [], []

    def run(target):
        barrier.wait()
        try:
            results.append(target())
        except Exception as exc:  # noqa: BLE001 - the caller asserts on what failed
            failures.append(type(exc).__name__)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, failures
