"""Operator CLI: `make -s admin ARGS="…"`. Prints one JSON line per command.

Locally it opens `make run`'s database directly ($DOCPUB_DATA_DIR, default
`.local`): SQLite in WAL mode, so it is safe while the server runs, and every
change is committed before the command prints. Against a deployed stage, set AWS
credentials plus DOCPUB_TABLE and DOCPUB_BUCKET (the stack outputs) and pass --aws.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


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
    sub.add_parser("sweep-orphans", help="delete S3 objects no version refers to (older than 1 h); "
                                         "retry pending CDN invalidations")
    recount = sub.add_parser("recount-files", help="count bundle files in each workspace's storage usage again "
                                                   "(backfill for files stored before the quota counted them; "
                                                   "idempotent); no id: every workspace with files")
    recount.add_argument("workspace_ids", nargs="*")
    sub.add_parser("index-invitations", help="upgrade step: let invitations made before the welcome page listed "
                                             "them by email show there (DynamoDB: adds their INVITEE# index "
                                             "entry; reads the whole table once; idempotent)")
    sub.add_parser("cdn-pending", help="CDN invalidations of withdrawn links not yet accepted (oldest first)")
    sub.add_parser("cdn-retry", help="send pending CDN invalidations again")
    sub.add_parser("static-sync", help="write the static copy of every public link (with DOCPUB_STATIC_PAGES=on; "
                                       "deployed, invoke the maintenance function instead: docs/deploy.md)")
    login = sub.add_parser("login-link", help="a one-time dashboard sign-in link for the workspace's owner "
                                              "(the dev workspace gets its owner account first)")
    login.add_argument("workspace_id")
    outbox = sub.add_parser("outbox", help="the latest messages in the mail outbox (DOCPUB_MAIL=outbox) "
                                          "with their links, newest first")
    outbox.add_argument("--limit", type=int, default=10)
    sub.add_parser("rotate-signing-key", help="sign new versions with a new key; the old one is retired (kept in "
                                              "the JWKS with its not_after: what it signed still verifies). "
                                              "Deployed (KMS): see docs/provenance.md")
    return parser


def run(args) -> dict:
    from chalicelib import wiring
    from chalicelib.errors import DocpubError

    service = wiring.workspaces()
    try:
        if args.command == "create-workspace":
            ws, key = service.create_workspace(args.name, args.plan)
            return {"workspace_id": ws.id, "api_key": key.api_key, "key_id": key.key_id,
                    "workspace": ws.model_dump()}
        if args.command == "set-plan":
            return service.set_plan(args.workspace_id, args.plan).model_dump()
        if args.command == "create-key":
            key = service.create_key(args.workspace_id, args.name, operator=True)
            return {"key_id": key.key_id, "api_key": key.api_key, "workspace_id": key.workspace_id}
        if args.command == "revoke-key":
            service.revoke_key(args.key_id)
            return {"key_id": args.key_id, "revoked": True}
        if args.command == "show-workspace":
            return service.get_workspace(args.workspace_id).model_dump()
        if args.command == "sweep-orphans":
            from chalicelib.services.maintenance import sweep_orphans

            return sweep_orphans(wiring.default_context())
        if args.command == "recount-files":
            from chalicelib.services.maintenance import recount_files

            return recount_files(wiring.default_context(), args.workspace_ids)
        if args.command == "index-invitations":
            from chalicelib.services.maintenance import index_invitations

            return index_invitations(wiring.default_context())
        if args.command == "cdn-pending":
            from chalicelib.services import cdn

            from dataclasses import asdict

            return {"pending": [asdict(p) for p in cdn.pending(wiring.default_context())]}
        if args.command == "login-link":
            from chalicelib.wiring import accounts

            if args.workspace_id == "ws_dev":
                from scripts.local_stack import DEV_OWNER_EMAIL
                from chalicelib.wiring import people

                people().ensure_owner_account("ws_dev", DEV_OWNER_EMAIL)
            return {"login_url": accounts().login_link(args.workspace_id)}
        if args.command == "outbox":
            return wiring.read_outbox(args.limit)
        if args.command == "rotate-signing-key":
            from chalicelib.services import provenance

            try:
                return provenance.rotate(wiring.default_context())
            except RuntimeError as exc:  # deployed: a KMS key is rotated by deploying a new one
                return {"error": {"code": "not_supported", "message": str(exc)}}
        if args.command == "static-sync":
            from chalicelib.services import static_pages

            return static_pages.sync_all(wiring.default_context())
        if args.command == "cdn-retry":
            from chalicelib.services import cdn

            return cdn.retry_pending(wiring.default_context())
    except DocpubError as exc:
        return {"error": exc.body()["error"]}
    raise SystemExit(f"unknown command {args.command}")


def use_local_storage() -> None:
    """`make run`'s store (embedded unless DOCPUB_STORAGE says otherwise); an old snapshot folder is imported first (once)."""
    from scripts import local_stack

    data_dir = local_stack.resolve_data_dir()
    local_stack.prepare_environment(data_dir)  # DOCPUB_STORAGE: sqlite unless set
    local_stack.open_embedded_storage(data_dir)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from scripts.processes import quiet_aws_logging

    quiet_aws_logging()
    if args.aws:
        os.environ["DOCPUB_STORAGE"] = "aws"
    else:
        use_local_storage()
    result = run(args)
    print(json.dumps(result, ensure_ascii=False))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
