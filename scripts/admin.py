"""Operator CLI: `make -s admin ARGS="…"`. Prints one JSON line per command.

Against the local stack it uses the running `make run` (same DOCPUB_DATA_DIR);
if none is running it opens the saved data itself and saves it back. Against a
deployed stage, set AWS credentials plus DOCPUB_TABLE and DOCPUB_BUCKET (the
stack outputs) and pass --aws.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="admin", description=__doc__)
    parser.add_argument("--aws", action="store_true", help="use real AWS (DOCPUB_TABLE/DOCPUB_BUCKET)")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create-workspace")
    create.add_argument("--name", required=True)
    create.add_argument("--plan", choices=["free", "pro"], default="free")
    plan = sub.add_parser("set-plan")
    plan.add_argument("workspace_id")
    plan.add_argument("plan", choices=["free", "pro"])
    key = sub.add_parser("create-key")
    key.add_argument("workspace_id")
    key.add_argument("--name", default="default")
    revoke = sub.add_parser("revoke-key")
    revoke.add_argument("key_id")
    show = sub.add_parser("show-workspace")
    show.add_argument("workspace_id")
    sub.add_parser("sweep-orphans", help="delete S3 objects no version refers to (older than 1 h)")
    return parser


def run(args) -> dict:
    from chalicelib.errors import DocpubError
    from chalicelib.services.registry import workspaces

    service = workspaces()
    try:
        if args.command == "create-workspace":
            ws, key = service.create_workspace(args.name, args.plan)
            return {"workspace_id": ws.id, "api_key": key.api_key, "key_id": key.key_id,
                    "workspace": ws.model_dump()}
        if args.command == "set-plan":
            return service.set_plan(args.workspace_id, args.plan).model_dump()
        if args.command == "create-key":
            key = service.create_key(args.workspace_id, args.name)
            return {"key_id": key.key_id, "api_key": key.api_key, "workspace_id": key.workspace_id}
        if args.command == "revoke-key":
            service.revoke_key(args.key_id)
            return {"key_id": args.key_id, "revoked": True}
        if args.command == "show-workspace":
            return service.get_workspace(args.workspace_id).model_dump()
        if args.command == "sweep-orphans":
            from chalicelib.services.maintenance import sweep_orphans

            return sweep_orphans()
    except DocpubError as exc:
        return {"error": exc.body()["error"]}
    raise SystemExit(f"unknown command {args.command}")


@contextlib.contextmanager
def local_storage():
    """Point boto3 at the running local stack, or boot the saved data ourselves."""
    from scripts import local_stack

    data_dir = Path(os.environ.get("DOCPUB_DATA_DIR") or ".local").resolve()
    endpoint_file = data_dir / "emulator-endpoint"
    local_stack.prepare_environment(str(data_dir))
    if endpoint_file.exists() and _reachable(endpoint_file.read_text().strip()):
        os.environ["AWS_ENDPOINT_URL"] = endpoint_file.read_text().strip()
        yield
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    server, snapshotter = local_stack.boot_storage(data_dir)
    try:
        yield
        snapshotter.save()
    finally:
        server.stop()


def _reachable(url: str) -> bool:
    import urllib.request

    try:
        urllib.request.urlopen(url + "/moto-api/", timeout=1)  # noqa: S310 - loopback only
        return True
    except Exception:
        return False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.aws:
        os.environ["DOCPUB_STORAGE"] = "aws"
    context = contextlib.nullcontext() if args.aws else local_storage()
    with context:
        result = run(args)
    print(json.dumps(result, ensure_ascii=False))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
