"""Share views: handler time per view of an unprotected document, with and
without the cache headers honoured (a conditional GET with the content's
ETag answers 304 without reading S3), and the AWS calls each view makes.

    .venv/bin/python -m bench.share_views [--repeat N]

Skips (and says so) when the app has no `/d/` routes. moto runs as a server
in a child process: CPU is the handler's own (process_time), wall includes
the round trips to the emulator on loopback.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from urllib.parse import urlparse

from bench._common import (
    count_aws_calls, fake_aws_env, invoke, lambda_event, moto_server, ms, print_header, print_table, ratio,
    use_endpoint,
)
from bench.aws_calls import has_share_routes
from bench.documents import document

SIZES = {"100 KiB": 100 * 1024, "4 MiB": 4 * 1024 * 1024 - 4096}


def content_path(app, share_path: str, version_id: str) -> str | None:
    path = f"{share_path}/v/{version_id}"
    return path if any(p == "/d/{share_id}/v/{version_id}" for p in app.routes) else None


def measure(app, headers: dict, label: str, size: int, repeat: int) -> list[list]:
    html = document("ascii", size)
    body = json.dumps({"title": f"Share {label}", "html": html})
    published = invoke(app, lambda_event(app, "POST", "/api/v1/publish", headers, body))
    assert published["statusCode"] == 200, published["body"][:300]
    answer = json.loads(published["body"])
    share_path = urlparse(answer["share_url"]).path
    views = {"wrapper page /d/<id>": (share_path, {})}
    content = content_path(app, share_path, answer["version_id"])
    etag = None
    if content:
        views["content, gzip"] = (content, {"accept-encoding": "gzip"})
        views["content, identity"] = (content, {})
        first = invoke(app, lambda_event(app, "GET", content, {"accept-encoding": "gzip"}))
        etag = first["headers"].get("ETag")
        if etag:
            views["content, If-None-Match (304)"] = (content, {"accept-encoding": "gzip", "if-none-match": etag})

    rows, timings = [], {}
    for name, (path, view_headers) in views.items():
        cpu, wall = [], []
        for _ in range(repeat):
            event = lambda_event(app, "GET", path, view_headers)
            with count_aws_calls() as log:
                c, w = time.process_time(), time.perf_counter()
                response = invoke(app, event)
                cpu.append(time.process_time() - c)
                wall.append(time.perf_counter() - w)
        timings[name] = (statistics.median(cpu), statistics.median(wall))
        status = response["statusCode"]
        size_out = len(response.get("body") or "")
        rows.append([label, name, status, len(log), ", ".join(log.calls), ms(timings[name][0]),
                     ms(timings[name][1]), f"{size_out:,} B", response["headers"].get("Cache-Control", "")])
    full = timings.get("content, gzip")
    cached = timings.get("content, If-None-Match (304)")
    if full and cached:
        rows.append([label, "304 vs full gzip view", "", "", "", ratio(cached[0], full[0]),
                     ratio(cached[1], full[1]), "", ""])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    fake_aws_env()
    from app import app

    print_header("Share views: handler time per view (moto server in a child process)")
    if not has_share_routes(app):
        print("skipped: this build has no /d/ share routes yet\n")
        return
    os.environ["DOCPUB_WRITE_RATE_LIMIT"] = "100000"
    with moto_server() as endpoint:
        use_endpoint(endpoint)
        from chalicelib.adapters.aws.schema import ensure_storage
        from chalicelib import wiring
        from chalicelib.services.workspaces import WorkspaceService

        ensure_storage()
        _, key = WorkspaceService(wiring.default_context()).create_workspace("Share bench", "pro")
        headers = {"X-Api-Key": key.api_key, "Content-Type": "application/json"}
        rows = []
        for label, size in SIZES.items():
            rows.extend(measure(app, headers, label, size, args.repeat))
    print_table(["document", "view", "status", "AWS calls", "calls made", "CPU (median)", "wall (median)",
                 "Lambda body", "Cache-Control"], rows)
    print("The 304 row is a revalidation (a CDN or browser holding the content sends If-None-Match);\n"
          "every cache does this at most once a minute per URL (docs/sharing.md, edge coherence).")


if __name__ == "__main__":
    main()
