"""A 100-edit batch on a 4 MiB document: the edit engine alone and the whole
edit handler (moto in-process), each against a plain `str.replace` pass over
the same text with the same edits, measured in the same run.

    .venv/bin/python -m bench.edit_engine [--repeat N]

Target (issue 4): engine under 3x the str.replace pass.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from bench._common import (
    count_aws_calls, fake_aws_env, invoke, lambda_event, ms, print_header, print_table, ratio,
)
from bench.documents import document, edit_batch, str_replace_pass

ENGINE_TARGET = 3.0


def time_engine(kind: str, repeat: int) -> dict:
    from chalicelib.domain.edits import apply_edits, apply_edits_utf8

    html = document(kind)
    data = html.encode("utf-8")
    edits = edit_batch(html)
    assert apply_edits(html, edits).html == str_replace_pass(html, edits)
    assert apply_edits_utf8(data, edits).html == str_replace_pass(html, edits).encode("utf-8")
    floor, engine, stored = [], [], []
    for _ in range(repeat):  # interleaved, so load on the machine hits all alike
        start = time.process_time()
        str_replace_pass(html, edits)
        floor.append(time.process_time() - start)
        start = time.process_time()
        apply_edits(html, edits)
        engine.append(time.process_time() - start)
        start = time.process_time()
        apply_edits_utf8(data, edits)
        stored.append(time.process_time() - start)
    return {"kind": kind, "bytes": len(data), "edits": len(edits), "floor": statistics.median(floor),
            "engine": statistics.median(engine), "stored": statistics.median(stored)}


def time_handler(kind: str, repeat: int) -> dict:
    """Edit through the Lambda handler: publish the original (not timed), then
    time the edit request (key + document read, S3 get, engine, S3 put, transaction)."""
    import moto

    os.environ["DOCPUB_WRITE_RATE_LIMIT"] = "100000"
    with moto.mock_aws():
        from app import app
        from chalicelib.adapters.aws.schema import ensure_storage
        from chalicelib import wiring
        from chalicelib.services.workspaces import WorkspaceService

        wiring.reset()
        ensure_storage()
        _, key = WorkspaceService(wiring.default_context()).create_workspace("Bench", "pro")
        headers = {"X-Api-Key": key.api_key, "Content-Type": "application/json"}
        html = document(kind)
        edits = edit_batch(html)
        publish_body = json.dumps({"title": "Bench", "html": html}, ensure_ascii=False)
        edit_body = json.dumps({"edits": [e.as_json() for e in edits]}, ensure_ascii=False)
        first = invoke(app, lambda_event(app, "POST", "/api/v1/publish", headers, publish_body))
        doc_id = json.loads(first["body"])["document_id"]
        republish = json.dumps({"title": "Bench", "html": html, "document_id": doc_id}, ensure_ascii=False)
        floor, total, aws = [], [], []
        for _ in range(repeat):
            invoke(app, lambda_event(app, "POST", "/api/v1/publish", headers, republish))
            event = lambda_event(app, "POST", f"/api/v1/documents/{doc_id}/edit", headers, edit_body)
            start = time.perf_counter()
            str_replace_pass(html, edits)
            floor.append(time.perf_counter() - start)
            with count_aws_calls() as log:
                start = time.perf_counter()
                response = invoke(app, event)
                total.append(time.perf_counter() - start)
            aws.append(log.aws_seconds)
            assert response["statusCode"] == 200, response["body"][:500]
            calls = len(log)
        wiring.reset()
    return {"kind": kind, "floor": statistics.median(floor), "total": statistics.median(total),
            "aws": statistics.median(aws), "calls": calls}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    fake_aws_env()

    print_header("Edit engine: 100 edits on a 4 MiB document vs a plain str.replace pass")
    rows = []
    for kind in ("ascii", "ja"):
        r = time_engine(kind, args.repeat)
        verdict = "met" if r["engine"] / r["floor"] < ENGINE_TARGET else "MISSED"
        rows.append([f"engine apply_edits (str), {kind} ({r['bytes']:,} B, {r['edits']} edits)", ms(r["floor"]),
                     ms(r["engine"]), ratio(r["engine"], r["floor"]), f"< {ENGINE_TARGET:.0f}x {verdict}"])
        verdict = "met" if r["stored"] / r["floor"] < ENGINE_TARGET else "MISSED"
        rows.append([f"engine apply_edits_utf8 (stored bytes, as the service runs it), {kind}", ms(r["floor"]),
                     ms(r["stored"]), ratio(r["stored"], r["floor"]), f"< {ENGINE_TARGET:.0f}x {verdict}"])
    for kind in ("ascii", "ja"):
        r = time_handler(kind, max(3, args.repeat // 2))
        rows.append([f"edit handler, {kind} (moto in-process, {r['calls']} AWS calls)", ms(r["floor"]),
                     ms(r["total"]), ratio(r["total"], r["floor"]), "reported"])
        own = r["total"] - r["aws"]
        rows.append([f"edit handler minus moto's own work ({ms(r['aws'])}), {kind}", ms(r["floor"]),
                     ms(own), ratio(own, r["floor"]), "reported"])
    print_table(["measured", "floor: str.replace pass", "time (median)", "ratio", "target"], rows)
    print("Engine rows: CPU time (process_time). Handler rows: wall time of the whole Lambda invocation\n"
          "(parse, auth, S3 get, engine, S3 put, transaction) with moto in the same process; the\n"
          "'minus moto' row subtracts the emulator's own work, timed with botocore before-send hooks.")


if __name__ == "__main__":
    main()
