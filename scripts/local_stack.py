"""`make run`: the whole service on one port, on the embedded store, no AWS account.

- Storage is SQLite plus fsync'd files in $DOCPUB_DATA_DIR (default `.local`):
  `docpub.sqlite3` and `blobs/`. Every acknowledged write is on disk before
  the answer. DOCPUB_STORAGE=aws runs the same stack on DynamoDB + S3 instead
  (credentials and AWS_ENDPOINT_URL from the environment).
- A data folder in the old snapshot format (`dynamodb-items.json` + `s3/`) is
  imported into SQLite once, on start; the old files are renamed, not deleted.
- This process is a small supervisor: it runs the server worker
  (scripts.serve_local), restarts it when the source changes (app.py,
  chalicelib/, .chalice/; never the data folder, tests, build or .venv), and
  stops it on Ctrl-C. Neither process outlives its parent (scripts.processes).
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripts.processes import die_with_parent, parent_gone, quiet_aws_logging

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEV_WORKSPACE_ID = "ws_dev"
# The dev workspace's owner account: it signs in by one-time link (no password to know).
DEV_OWNER_EMAIL = "owner@dev.docpub.localhost"

# What autoreload watches, relative to the project folder. Anything else (the
# data folder, tests/, build/, .venv, docs) never restarts the server.
WATCHED = ("app.py", ".chalice", "chalicelib")
# Written by tools, never source: `chalice package` (make package, and so
# `make test`) caches its build in .chalice/deployments.
UNWATCHED = (os.path.join(".chalice", "deployments"), os.path.join(".chalice", "venv"))
POLL_SECONDS = 0.5
STOP_GRACE_SECONDS = 1.0


def prepare_environment(data_dir: Path) -> str:
    """Storage selection and data folder for this process and its children."""
    storage = os.environ.get("DOCPUB_STORAGE") or "sqlite"
    os.environ["DOCPUB_STORAGE"] = storage
    os.environ["DOCPUB_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_REGION", os.environ["AWS_DEFAULT_REGION"])
    return storage


def admin_command(arguments: str, port: int, data_dir: Path) -> str:
    """The `make admin` command to run in another terminal against this stack: with the
    port and data folder this one uses when they are not the defaults (else a login link
    would name port 8000, and the command would open another database)."""
    prefix = "" if port == 8000 else f"PORT={port} "
    if data_dir != Path(".local").resolve():
        prefix += f"DOCPUB_DATA_DIR={data_dir} "
    return f'{prefix}make -s admin ARGS="{arguments}"'


def resolve_data_dir() -> Path:
    data_dir = Path(os.environ.get("DOCPUB_DATA_DIR") or ".local").resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    return data_dir


def open_embedded_storage(data_dir: Path) -> dict | None:
    """Create or migrate the SQLite database before any server process opens it;
    a folder saved by the old emulator-based `make run` (`dynamodb-items.json` +
    `s3/`) is imported once, its files renamed `*.imported`, never deleted.
    Returns the import's counts, or None when there was nothing to import."""
    if os.environ.get("DOCPUB_STORAGE") != "sqlite":
        return None
    from chalicelib.wiring import prepare_embedded_storage

    result = prepare_embedded_storage(data_dir)
    if result is not None:
        print(f"Imported the old snapshot in {data_dir} into {data_dir / 'docpub.sqlite3'} "
              f"(old files renamed *.imported): {result}", file=sys.stderr, flush=True)
    return result


def ensure_emulated_aws_storage() -> None:
    """DOCPUB_STORAGE=aws against an emulator (AWS_ENDPOINT_URL set): create the
    table and bucket if missing. Against real AWS (no endpoint) the stack's
    CloudFormation owns them: never create anything there."""
    if os.environ.get("DOCPUB_STORAGE") == "aws" and os.environ.get("AWS_ENDPOINT_URL"):
        from chalicelib.wiring import ensure_aws_storage

        ensure_aws_storage()


def ensure_dev_workspace(data_dir: Path) -> tuple[str, bool]:
    """The dev workspace's key: DOCPUB_DEV_API_KEY, else the saved one, else a new one."""
    from chalicelib.services import auth
    from chalicelib.wiring import workspaces

    service = workspaces()
    key_file = data_dir / "dev-api-key"
    wanted = os.environ.get("DOCPUB_DEV_API_KEY") or (
        key_file.read_text().strip() if key_file.exists() else "")
    if service.ctx.workspaces.get(DEV_WORKSPACE_ID) is None:
        service.create_workspace("Dev workspace", "free", workspace_id=DEV_WORKSPACE_ID, with_key=False)
    if wanted:
        credentials = auth.credentials_from_key(wanted)
        item = service.ctx.keys.get(credentials.key_id)
        if item is not None and item.revoked_at is None and item.workspace_id == DEV_WORKSPACE_ID:
            _write_private(key_file, wanted)
            return wanted, False
    # Make room under the free plan's one-key cap, then create the key.
    for key in service.list_keys(DEV_WORKSPACE_ID):
        if not key["revoked"]:
            service.revoke_key(key["key_id"])
    created = service.create_key(DEV_WORKSPACE_ID, "dev", api_key=wanted or None, operator=True)
    _write_private(key_file, created.api_key)
    return created.api_key, not wanted


def dev_login_link() -> str:
    """The dev workspace has an owner; a new one-time dashboard sign-in link for them."""
    from chalicelib.wiring import accounts, people

    people().ensure_owner_account(DEV_WORKSPACE_ID, DEV_OWNER_EMAIL)
    return accounts().login_link(DEV_WORKSPACE_ID)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


def default_urls(host: str, port: int, base_url: str | None = None) -> dict[str, str]:
    """DOCPUB_BASE_URL and DOCPUB_CONTENT_URL when the environment does not set them.

    Loopback or every interface (HOST=0.0.0.0): the base URL is http://127.0.0.1:PORT.
    One address (HOST=192.168.1.20): that address, the only one the server answers on.
    Document content gets a second site, http://localhost:PORT, so the browser keeps it
    apart from the dashboard and API as a deployment does (issue 15), but only while the
    base URL is loopback: for anyone on another machine, localhost is their own machine,
    so then content is served sandboxed from the base URL (DOCPUB_CONTENT_URL empty)."""
    from urllib.parse import urlparse

    if not base_url:
        where = "127.0.0.1" if is_loopback(host) or is_wildcard(host) else host
        if ":" in where and not where.startswith("["):
            where = f"[{where}]"
        base_url = f"http://{where}:{port}"
    loopback_base = is_loopback(urlparse(base_url).hostname or "")
    return {"DOCPUB_BASE_URL": base_url,
            "DOCPUB_CONTENT_URL": f"http://localhost:{port}" if loopback_base else ""}


def exposure_notes(host: str, port: int, base_url: str) -> list[str]:
    """What `make run HOST=…` changes, said when it starts (README: "Another address")."""
    if is_loopback(host):
        return []
    notes = [f"Listening on {host}:{port}: other machines can reach this server."]
    from urllib.parse import urlparse

    if is_loopback(urlparse(base_url).hostname or ""):
        notes.append(f"Share links and the MCP URL say {base_url}, which only this machine can open: "
                     "set DOCPUB_BASE_URL to the address others use (e.g. http://192.168.1.20:"
                     f"{port}).")
    if not base_url.startswith("https://"):
        notes.append("Over plain http, dashboard cookies are not marked Secure: beyond a trusted "
                     "network, put a TLS proxy in front and set DOCPUB_BASE_URL=https://….")
    return notes


def _write_private(path: Path, text: str) -> None:
    """Owner-only file, replaced atomically (a reader never sees it half written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _local_secret(data_dir: Path) -> str:
    import secrets

    path = data_dir / "secret-key"
    if not path.exists():
        _write_private(path, secrets.token_urlsafe(32))
    return path.read_text().strip()


def source_state(root: Path = PROJECT_DIR) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every watched source file: app.py, chalicelib/, .chalice/
    (not .chalice/deployments or .chalice/venv, which tools write).

    Skips __pycache__, hidden files and editor temporaries, so neither Python's
    own bytecode writes nor an editor's swap file restart the server."""
    state: dict[str, tuple[int, int]] = {}
    for name in WATCHED:
        top = root / name
        if top.is_file():
            stat = top.stat()
            state[name] = (stat.st_mtime_ns, stat.st_size)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")
                       and os.path.relpath(os.path.join(folder, d), root) not in UNWATCHED]
            for file in files:
                if file.startswith(".") or file.endswith(("~", ".pyc", ".pyo", ".swp", ".tmp")):
                    continue
                path = os.path.join(folder, file)
                try:
                    stat = os.stat(path)
                except FileNotFoundError:
                    continue
                state[path] = (stat.st_mtime_ns, stat.st_size)
    return state


class Supervisor:
    """Runs the server worker; restarts it on a source change; stops it on a signal."""

    def __init__(self, command: list[str], autoreload: bool):
        self.command = command
        self.autoreload = autoreload
        self.worker: subprocess.Popen | None = None
        self.stopping = False
        self.parent = os.getppid()

    def start_worker(self) -> None:
        env = {**os.environ, "DOCPUB_SUPERVISOR_PID": str(os.getpid())}
        # Spawned from the main thread: the worker's parent-death signal is tied
        # to the thread that forked it. Same process group: Ctrl-C reaches it too.
        self.worker = subprocess.Popen(self.command, cwd=PROJECT_DIR, env=env)

    def stop_worker(self) -> None:
        worker = self.worker
        if worker is None or worker.poll() is not None:
            return
        worker.terminate()
        try:
            worker.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()

    def _on_signal(self, _signum, _frame) -> None:
        self.stopping = True

    def run(self) -> int:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        os.set_blocking(wake_read, False)
        signal.set_wakeup_fd(wake_write)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        code = 0
        state = source_state() if self.autoreload else {}
        if self.worker is None:
            self.start_worker()
        reported_exit = False
        reloaded = False
        try:
            while not self.stopping:
                ready, _, _ = select.select([wake_read], [], [], POLL_SECONDS)
                if ready:
                    try:
                        os.read(wake_read, 512)
                    except BlockingIOError:
                        pass
                if self.stopping or parent_gone(self.parent):
                    break
                exited = self.worker.poll()
                if exited is not None and (not self.autoreload or not reloaded):
                    # Without autoreload, or a first start that failed (port in use,
                    # broken source): nothing to wait for; its error is on the console.
                    code = exited
                    break
                if exited is not None and not reported_exit:
                    print(f"The server stopped (exit {exited}); it restarts on the next source change.",
                          file=sys.stderr, flush=True)
                    reported_exit = True
                if self.autoreload:
                    current = source_state()
                    if current != state:
                        time.sleep(0.1)  # let an editor or `git checkout` finish writing
                        state = source_state()
                        print("Source changed: restarting the server.", flush=True)
                        self.stop_worker()
                        self.start_worker()
                        reported_exit, reloaded = False, True
        finally:
            self.stop_worker()
            signal.set_wakeup_fd(-1)
        return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (make run HOST=0.0.0.0 for every interface)")
    parser.add_argument("--no-autoreload", action="store_true")
    args = parser.parse_args(argv)
    # Dies with `make run` (or whatever started it): SIGTERM, so the worker is stopped too.
    die_with_parent(signal.SIGTERM)
    quiet_aws_logging()
    data_dir = resolve_data_dir()
    storage = prepare_environment(data_dir)
    os.environ["PORT"] = str(args.port)
    for name, value in default_urls(args.host, args.port, os.environ.get("DOCPUB_BASE_URL")).items():
        os.environ.setdefault(name, value)
    if is_loopback(args.host):
        # Whoever reaches a loopback-only stack is at the machine that runs `make admin`: the
        # dashboard shows them the operator command that changes a plan (DOCPUB_OPERATOR_EMAILS).
        os.environ.setdefault("DOCPUB_OPERATOR_EMAILS", "*")
    if not os.environ.get("DOCPUB_SECRET_KEY"):
        os.environ["DOCPUB_SECRET_KEY"] = _local_secret(data_dir)
    from chalicelib import config

    try:
        config.check_startup()  # what the deployed function checks at init, before anything starts
    except config.ConfigurationError as exc:
        print(f"make run: {exc}", file=sys.stderr, flush=True)
        return 2

    (data_dir / "emulator-endpoint").unlink(missing_ok=True)  # left by the emulator-based make run
    open_embedded_storage(data_dir)
    ensure_emulated_aws_storage()
    command = [sys.executable, "-m", "scripts.serve_local", "--host", args.host, "--port", str(args.port)]
    supervisor = Supervisor(command, autoreload=not args.no_autoreload)
    supervisor.start_worker()  # it loads the app while this process sets up the dev workspace
    key, generated = ensure_dev_workspace(data_dir)

    base = os.environ["DOCPUB_BASE_URL"]
    where = f"data in {data_dir}" if storage == "sqlite" else "storage: AWS (DynamoDB + S3)"
    print(f"Docpub is running on {base}  ({where})", flush=True)
    for line in exposure_notes(args.host, args.port, base):
        print(f"  {line}", flush=True)
    print(f"  API: {base}/api/v1   MCP: {base}/mcp   Dashboard: {base}/dashboard", flush=True)
    if os.environ.get("DOCPUB_CONTENT_URL"):
        print(f"  Document content: {os.environ['DOCPUB_CONTENT_URL']} (a separate site)", flush=True)
    if generated:
        print(f"  Dev workspace API key (saved to {data_dir / 'dev-api-key'}): {key}", flush=True)
    else:
        print(f"  Dev workspace API key: see {data_dir / 'dev-api-key'}", flush=True)
    print(f"  Dev workspace owner ({DEV_OWNER_EMAIL}), one-time sign-in link (1 hour; "
          f"{admin_command(f'login-link {DEV_WORKSPACE_ID}', args.port, data_dir)} makes another):\n"
          f"    {dev_login_link()}", flush=True)
    return supervisor.run()


if __name__ == "__main__":
    exit_code = main()
    # Every write is committed already: skip the interpreter's teardown of the
    # loaded app (about a second), so Ctrl-C returns the prompt at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)
