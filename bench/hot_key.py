"""40 concurrent edits through one API key, on DynamoDB Local (make bench-aws).

    .venv/bin/python -m bench.hot_key [--writers 40]

Every write through a key claims a slot of the key's write limit (60 in any
60 s) in the same transaction as the version. Two races, each through one key
under its limit: `writers` edits of as many documents (the key is the only
shared item) and `writers` edits of one document (the document is shared too).
Counts, at the engine's door (a botocore hook), the TransactWriteItems and
reads per acknowledged edit, and the answers: no 429 is the goal (every writer
is under the limit). Needs the engines (scripts/engines.sh) and Java.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import threading

from bench._common import print_header, print_table


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=40)
    args = parser.parse_args()
    from tests import engines

    why = engines.missing()
    if why:
        print(f"bench.hot_key: {why}", file=sys.stderr)
        return 2
    running = engines.Engines().start()
    try:
        os.environ.update(running.env)
        engines.patient_clients()
        os.environ.update({"DOCPUB_STORAGE": "aws", "DOCPUB_TABLE": "bench-hot-key",
                           "DOCPUB_BUCKET": "bench-hot-key"})
        engines.create_storage("bench-hot-key", "bench-hot-key")
        rows = run(args.writers)
    finally:
        running.stop()
    print_header(f"{args.writers} concurrent edits through one API key (limit 60/60 s), DynamoDB Local")
    print_table(["race", "acknowledged", "429", "409", "503", "TransactWriteItems / ack", "reads / ack"], rows)
    return 0 if all(r[2] == 0 for r in rows) else 1


def run(writers: int) -> list[list]:
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.entrypoints.http import as_error
    from chalicelib.models import EditOperation, EditRequest, PublishRequest
    from chalicelib.services.auth import credentials_from_key
    from chalicelib.wiring import new_context
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.workspaces import WorkspaceService
    from tests.helpers import FakeClock

    clock = FakeClock()
    ctx = new_context(clock=clock)
    calls: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def count(request, **_kwargs):
        target = request.headers.get("X-Amz-Target", b"")
        with lock:
            calls[(target.decode() if isinstance(target, bytes) else target).split(".")[-1]] += 1

    aws.dynamodb().meta.events.register("before-send.dynamodb", count)
    documents = DocumentService(ctx)
    rows = []
    for race in ("one key, many documents", "one key, one document"):
        _, key = WorkspaceService(ctx).create_workspace("Hot", "pro")
        who = credentials_from_key(key.api_key)
        count_docs = writers if race.endswith("many documents") else 1
        ids = [documents.publish(who, PublishRequest(title=f"D{i}", html="<main><!--end--></main>")).response
               .document_id for i in range(count_docs)]
        clock.advance(61)  # the setup's writes leave the window
        calls.clear()
        answers: collections.Counter = collections.Counter()
        causes: collections.Counter = collections.Counter()
        barrier = threading.Barrier(writers)

        def edit(i: int) -> None:
            barrier.wait()
            try:
                documents.edit(who, ids[i % len(ids)], EditRequest(edits=[EditOperation(
                    old_string="<!--end-->", new_string=f"<p>e{i}</p><!--end-->")]))
                answers[200] += 1
            except Exception as exc:  # noqa: BLE001 - counted as the API would answer it
                status = as_error(exc).status
                answers[status] += 1
                if status >= 500:
                    causes[f"{type(exc).__name__}: {exc}"] += 1

        threads = [threading.Thread(target=edit, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        acknowledged = answers[200]
        reads = calls["GetItem"] + calls["BatchGetItem"] + calls["Query"]
        rows.append([race, acknowledged, answers[429], answers[409], answers[503],
                     f"{calls['TransactWriteItems'] / max(1, acknowledged):.1f}",
                     f"{reads / max(1, acknowledged):.1f}"])
        clock.advance(61)
        for cause, n in causes.items():
            print(f"{race}: {n} x {cause}", file=sys.stderr)
    return rows


if __name__ == "__main__":
    sys.exit(main())
