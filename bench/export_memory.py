"""Peak memory of a workspace export (contract 7g, docs/exports.md): the zip is streamed,
so the build holds one entry's piece and one chunk, never the workspace.

    .venv/bin/python -m bench.export_memory [--mib 50]

Fills a Pro workspace on the embedded store (a fresh temporary data folder) with about
`--mib` MiB of content: pages of 3.5 MiB of incompressible text (the worst case for the
zip: nothing shrinks) in several versions, and a bundle of binary files. Then, in a fresh
process, builds the export and reports the process's peak RSS (ru_maxrss) against its RSS
just before the build, the zip's size and the time taken. `--aws` runs the build on moto
(DynamoDB + S3 in-process: S3's multipart upload of 8 MiB parts).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

PAGE_BYTES = 3_500_000
FILE_BYTES = 2 * 1024 * 1024


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fill(mib: int) -> dict:
    from chalicelib import wiring
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    ctx = wiring.default_context()
    ctx.run_export = lambda export_id: None
    workspace, key = wiring.workspaces().create_workspace("Bench", "pro")
    assert key is not None
    ctx.workspaces.set_fields(workspace.id, {"secret_scanning": "off"})  # random text looks like keys
    who = credentials_from_key(key.api_key)
    documents = wiring.documents()
    target = mib * 1024 * 1024
    stored = 0
    document_id = None
    number = 0
    # A bundle of binary files first (its files count once).
    files = [{"path": f"data/{i}.bin", "content": base64.b64encode(os.urandom(FILE_BYTES)).decode(),
              "encoding": "base64"} for i in range(2)]
    documents.publish(who, PublishRequest(title="Bundle", html="<p>files</p>", files=files))
    stored += 2 * FILE_BYTES
    while stored < target:
        text = base64.b64encode(os.urandom(PAGE_BYTES * 3 // 4)).decode()
        html = "<p>" + " ".join(text[i:i + 76] for i in range(0, len(text), 76)) + "</p>"
        if number % 3 == 0:
            document_id = None  # a new document every third page; the others are its versions
        answer = documents.publish(who, PublishRequest(title=f"Page {number}", html=html, document_id=document_id))
        document_id = answer.response.document_id
        stored += len(html)
        number += 1
    return {"api_key": key.api_key, "content_bytes": stored, "pages": number}


def build(api_key: str) -> dict:
    from chalicelib import wiring
    from chalicelib.services.auth import credentials_from_key

    ctx = wiring.default_context()
    ctx.run_export = lambda export_id: None
    service = wiring.exports()
    who = credentials_from_key(api_key)
    export_id = service.start(who).export_id
    before = rss_kib()
    began = time.perf_counter()
    finished = service.build(export_id)
    seconds = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"status": finished.status, "zip_bytes": finished.size_bytes, "seconds": round(seconds, 2),
            "rss_before_kib": before, "peak_rss_kib": peak, "peak_over_before_kib": peak - before}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--step", choices=("fill", "build"))
    parser.add_argument("--key")
    args = parser.parse_args()
    if args.step == "fill":
        print(json.dumps(fill(args.mib)))
        return
    if args.step == "build":
        print(json.dumps(build(args.key)))
        return
    env = {**os.environ, "DOCPUB_STORAGE": "sqlite", "DOCPUB_DATA_DIR": tempfile.mkdtemp(prefix="docpub-export-")}
    run = [sys.executable, "-m", "bench.export_memory"]
    filled = json.loads(subprocess.run(run + ["--step", "fill", "--mib", str(args.mib)], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    built = json.loads(subprocess.run(run + ["--step", "build", "--key", filled["api_key"]], env=env, check=True,
                                      capture_output=True, text=True).stdout)
    mib = 1024 * 1024
    print(f"workspace: {filled['content_bytes'] / mib:.1f} MiB of content ({filled['pages']} pages + 2 files)")
    print(f"export: {built['status']}, zip {built['zip_bytes'] / mib:.1f} MiB in {built['seconds']} s")
    print(f"RSS before the build {built['rss_before_kib'] / 1024:.1f} MiB, peak {built['peak_rss_kib'] / 1024:.1f} "
          f"MiB (+{built['peak_over_before_kib'] / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
