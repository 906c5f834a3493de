"""Publish and edit of a 4 MiB document through the Lambda handler: CPU time
and peak memory (tracemalloc) against the floor, `json.loads` of the same
request body plus one copy of the document's bytes, measured in the same run.

    .venv/bin/python -m bench.large_documents [--repeat N]

moto runs as a server in a child process, so its CPU time and memory are not
counted: what is measured is what the Lambda function itself spends
(parsing, validation, hashing, botocore serialisation, socket I/O).
Targets (issue 10): at most 3x the floor's time; at most 4x the document's
size in extra memory.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
import tracemalloc

from bench._common import (
    fake_aws_env, invoke, lambda_event, mib, moto_server, ms, print_header, print_table, ratio, use_endpoint,
)
from bench.documents import document

TIME_TARGET = 3.0
MEMORY_TARGET = 4.0


def floor(body: str) -> bytes:
    """The least any publish can do: parse the request, hold the document's bytes."""
    return json.loads(body)["html"].encode("utf-8")


def cpu(fn) -> float:
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def peak(fn) -> int:
    """Extra memory at the peak of fn() (above what was allocated before)."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn()
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return top - before


fixed: dict[str, float] = {}


def measure(kind: str, repeat: int) -> list[list]:
    from app import app
    from chalicelib.adapters.aws.schema import ensure_storage
    from chalicelib import wiring
    from chalicelib.services.workspaces import WorkspaceService

    wiring.reset()
    ensure_storage()
    _, key = WorkspaceService(wiring.default_context()).create_workspace(f"Bench {kind}", "pro")
    headers = {"X-Api-Key": key.api_key, "Content-Type": "application/json"}
    html = document(kind)
    size = len(html.encode("utf-8"))
    body = json.dumps({"title": "Large", "html": html}, ensure_ascii=False)
    small_body = json.dumps({"title": "Small", "html": document(kind, 16384)}, ensure_ascii=False)
    del html

    def ok(response):
        assert response["statusCode"] == 200, response["body"][:300]
        return response

    def publish_event():
        return lambda_event(app, "POST", "/api/v1/publish", headers, body)

    doc_id = json.loads(ok(invoke(app, publish_event()))["body"])["document_id"]  # warm: clients, imports
    counter = [0]

    def edit_event():
        # Each edit changes the latest version: alternate two markers.
        counter[0] += 1
        old, new = ("Section 7</h2>", "Section 7 (b)</h2>") if counter[0] % 2 else ("Section 7 (b)</h2>", "Section 7</h2>")
        payload = json.dumps({"edits": [{"old_string": old, "new_string": new}]})
        return lambda_event(app, "POST", f"/api/v1/documents/{doc_id}/edit", headers, payload)

    rows = []
    floor_cpu = statistics.median(cpu(lambda: floor(body)) for _ in range(repeat))
    floor_mem = statistics.median(peak(lambda: floor(body)) for _ in range(3))
    # What each operation costs whatever the size (routing, auth, validation,
    # 3 or 4 AWS calls through botocore): the same requests on a 16 KiB document.
    small_id = json.loads(ok(invoke(app, lambda_event(app, "POST", "/api/v1/publish", headers, small_body)))
                          ["body"])["document_id"]
    small_counter = [0]

    def small_edit_event():
        small_counter[0] += 1
        old, new = ("Section 7</h2>", "Section 7 (b)</h2>") if small_counter[0] % 2 else \
            ("Section 7 (b)</h2>", "Section 7</h2>")
        payload = json.dumps({"edits": [{"old_string": old, "new_string": new}]})
        return lambda_event(app, "POST", f"/api/v1/documents/{small_id}/edit", headers, payload)

    fixed_publish = statistics.median(
        cpu(lambda e=lambda_event(app, "POST", "/api/v1/publish", headers, small_body): ok(invoke(app, e)))
        for _ in range(repeat))
    fixed_edit = statistics.median(cpu(lambda e=small_edit_event(): ok(invoke(app, e))) for _ in range(repeat))
    fixed[f"publish {kind}"], fixed[f"edit {kind}"] = fixed_publish, fixed_edit
    for name, make_event, small in (("publish", publish_event, fixed_publish),
                                    ("edit (1 edit)", edit_event, fixed_edit)):
        times = []
        for _ in range(repeat):
            event = make_event()
            times.append(cpu(lambda: ok(invoke(app, event))))
        mems = []
        for _ in range(3):
            event = make_event()
            mems.append(peak(lambda: ok(invoke(app, event))))
        t, m = statistics.median(times), statistics.median(mems)
        rows.append([f"{name}, {kind}", ms(floor_cpu), ms(t), ratio(t, floor_cpu),
                     "met" if t / floor_cpu <= TIME_TARGET else "MISSED",
                     f"{ms(t - small)} = {ratio(t - small, floor_cpu)}",
                     mib(floor_mem), mib(m), f"{m / size:.2f}x doc ({ratio(m, floor_mem)} floor)",
                     "met" if m / size <= MEMORY_TARGET else "MISSED"])
    wiring.reset()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    fake_aws_env()
    os.environ["DOCPUB_WRITE_RATE_LIMIT"] = "100000"
    with moto_server() as endpoint:
        use_endpoint(endpoint)
        rows = []
        for kind in ("ascii", "ja"):
            rows.extend(measure(kind, args.repeat))
    print_header("Large documents: 4 MiB publish and edit through the handler (moto server in a child process)")
    print_table(["operation", "floor CPU", "handler CPU", "ratio", "<= 3x", "minus fixed cost",
                 "floor peak", "handler peak", "peak / size", "<= 4x size"], rows)
    print("floor = json.loads(request body) + html.encode('utf-8'); CPU = process_time (user+sys);\n"
          "fixed cost = CPU of the same operation on a 16 KiB document ("
          + ", ".join(f"{k}: {ms(v)}" for k, v in fixed.items()) + ");\n"
          "peak = tracemalloc peak above the pre-call baseline (the event body itself is not counted).")


if __name__ == "__main__":
    main()
