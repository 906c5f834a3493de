"""Live pages: what 200 viewers with a share page open for 10 minutes cost the origin.

    .venv/bin/python -m bench.live_pages [--viewers 200] [--minutes 10]

Each simulated viewer does what static/share/page.js does: load the page (the
wrapper, the version's content, the view beacon), then poll `/d/<id>/live` every
DOCPUB_LIVE_POLL_SECONDS (10) and fetch `/d/<id>/threads/<activity mark>` when the
mark moves. Meanwhile one viewer comments (minute 2), the agent publishes a new
version (minute 5) and replies (minute 7). Requests go to the real app (chalice's
test client, embedded store) either directly (the floor: no CDN, as under
`make run`) or through a simulated CloudFront edge that honours `s-maxage`,
`private`/`no-store` and keys on the path (what infra/resources.yaml's share cache
policy does), on a simulated clock. Printed: requests the origin receives.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import tempfile
from collections import Counter

from bench._common import print_header, print_table


class Edge:
    """One CDN edge: caches GET answers per path (+ unlock cookie) for s-maxage seconds."""

    def __init__(self, origin, clock):
        self.origin, self.clock, self.cache = origin, clock, {}
        self.origin_requests: Counter = Counter()

    def request(self, method, path, kind, headers=None, body=b""):
        now = self.clock()
        key = (path, (headers or {}).get("Cookie"))
        if method == "GET" and key in self.cache and self.cache[key][0] > now:
            return self.cache[key][1]
        self.origin_requests[kind] += 1
        response = self.origin(method, path, headers, body)
        control = response.headers.get("Cache-Control", "")
        match = re.search(r"s-maxage=(\d+)", control)
        if method == "GET" and match and "private" not in control and "no-store" not in control:
            self.cache[key] = (now + int(match.group(1)), response)
        return response


def simulate(client, key, use_cdn: bool, viewers: int, minutes: int, poll: int) -> Counter:
    now = [0.0]
    clock = lambda: now[0]  # noqa: E731
    origin_calls: Counter = Counter()

    def origin(method, path, headers, body):
        return client.http.request(method, path, headers=headers or {}, body=body)

    edge = Edge(origin, clock)

    def call(method, path, kind, headers=None, body=b""):
        if use_cdn:
            return edge.request(method, path, kind, headers, body)
        origin_calls[kind] += 1
        return origin(method, path, headers, body)

    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                         body=json.dumps({"title": "Plan", "html": "<p>We ship in March.</p>"}))
    doc = json.loads(r.body)
    share = "/d/" + doc["share_url"].rsplit("/", 1)[1]
    rng = random.Random(7)
    # Times in milliseconds (integers: every poll lands exactly on its tick).
    state = [{"at": rng.randrange(0, poll * 1000), "mark": None} for _ in range(viewers)]
    state.sort(key=lambda v: v["at"])
    poll_ms = poll * 1000
    events = {120_000: "comment", 300_000: "publish", 420_000: "reply"}
    feedback_id = None
    end = minutes * 60 * 1000
    timeline = sorted({t for v in state for t in range(v["at"], end, poll_ms)} | set(events))
    loaded = set()
    for t in timeline:
        now[0] = t / 1000
        if t in events:
            kind = events[t]
            if kind == "comment":
                r = call("POST", f"{share}/feedback", "comment (POST)",
                         {"Content-Type": "application/json"},
                         json.dumps({"message": "March is late", "anchor": {"quote": "March"}}).encode())
                feedback_id = json.loads(r.body)["feedback_id"]
                call("GET", f"{share}/threads/f{int(t)}", "threads")
            elif kind == "publish":
                client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                                 body=json.dumps({"title": "Plan", "html": "<p>We ship in February.</p>",
                                                  "document_id": doc["document_id"]}))
            elif kind == "reply":
                client.http.post(f"/api/v1/feedback/{feedback_id}/replies",
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"},
                                 body=json.dumps({"message": "Moved to February"}))
        for i, v in enumerate(state):
            if t < v["at"] or (t - v["at"]) % poll_ms:
                continue
            if i not in loaded:
                loaded.add(i)
                page = call("GET", share, "page")
                version_id = re.search(r'data-version-id="([^"]+)"', page.body.decode()).group(1)
                call("GET", f"{share}/v/{version_id}", "content")
                call("POST", f"{share}/view?v=1", "view beacon (POST)", {"Content-Type": "text/plain"})
            live = json.loads(call("GET", f"{share}/live", "live poll").body)
            mark = str(live["activity"])
            if mark != v["mark"]:
                v["mark"] = mark
                call("GET", f"{share}/threads/{mark}", "threads")
    return edge.origin_requests if use_cdn else origin_calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--minutes", type=int, default=10)
    args = parser.parse_args(argv)
    os.environ["DOCPUB_STORAGE"] = "sqlite"
    os.environ["DOCPUB_DATA_DIR"] = tempfile.mkdtemp(prefix="docpub-bench-live-")
    os.environ.setdefault("DOCPUB_SECRET_KEY", "bench-" + "k" * 40)
    from chalice.test import Client

    from app import app
    from chalicelib import config
    from chalicelib import wiring as registry

    poll = config.live_poll_seconds()
    results = {}
    for use_cdn in (False, True):
        registry.reset()
        with Client(app) as client:
            ws, created = registry.workspaces().create_workspace(f"Bench {use_cdn}", "pro")
            results[use_cdn] = simulate(client, created.api_key, use_cdn, args.viewers, args.minutes, poll)
    print_header(f"Live pages: {args.viewers} viewers, {args.minutes} minutes, poll every {poll} s")
    kinds = sorted(set(results[False]) | set(results[True]))
    rows = [[k, results[False][k], results[True][k]] for k in kinds]
    total_floor, total_cdn = sum(results[False].values()), sum(results[True].values())
    rows.append(["total", total_floor, total_cdn])
    rows.append(["per viewer", f"{total_floor / args.viewers:.1f}", f"{total_cdn / args.viewers:.2f}"])
    print_table(["origin requests", "no CDN (make run; the floor)", "through one CDN edge"], rows)
    polls = results[True]["live poll"]
    print(f"Live polls at the origin through the edge: {polls} (one per {poll} s edge refresh, whatever the "
          f"number of viewers; {results[False]['live poll']} without it: "
          f"{results[False]['live poll'] / max(polls, 1):.0f}x). Per viewer, only the view beacon reaches the "
          "origin (by design: one counted view per page load).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
