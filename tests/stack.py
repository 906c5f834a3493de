"""Start the real local stack (`make run`'s `scripts.local_stack`) on a free port, for e2e tests.

By default it runs on the embedded store (SQLite + files in `data_dir`), as
`make run` does. `env={"DOCPUB_STORAGE": "aws", "AWS_ENDPOINT_URL": ...}` runs
the same stack on DynamoDB + S3 (moto's server in tests).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(procs: list[psutil.Process], timeout: float) -> bool:
    """True once every process has exited (a zombie counts: it holds no port)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(gone(p) for p in procs):
            return True
        time.sleep(0.01)
    return False


def clean_env() -> dict:
    """The test process's environment minus AWS settings (never reach real AWS)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DOCPUB_"))}


class LocalStack:
    def __init__(self, data_dir: Path, port: int | None = None, env: dict | None = None,
                 autoreload: bool = False, via_make: bool = False, project_dir: Path = PROJECT_DIR):
        self.project_dir = Path(project_dir)  # another copy of the source (tests that edit it)
        self.autoreload = autoreload
        self.via_make = via_make
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.extra_env = env or {}
        self.process: subprocess.Popen | None = None
        self.log_path = self.data_dir.parent / f"stack-{self.port}.log"

    def command(self) -> list[str]:
        if self.via_make:
            # `-o`: never (re)install into the shared virtualenv from a test.
            return ["make", "-s", "-o", ".venv/bin/.installed", "run", f"PORT={self.port}"]
        return ([sys.executable, "-m", "scripts.local_stack", "--port", str(self.port)]
                + ([] if self.autoreload else ["--no-autoreload"]))

    def start(self, timeout: float = 60) -> "LocalStack":
        env = clean_env()
        # Every browser test signs up from 127.0.0.1 on the shared stack: more than the default 10
        # sign-ups per address per hour (test_sign_up_limit_per_address holds the limit itself).
        env.update({"DOCPUB_DATA_DIR": str(self.data_dir), "PORT": str(self.port),
                    "DOCPUB_BASE_URL": self.base_url, "DOCPUB_SIGN_UP_PER_HOUR": "1000", **self.extra_env})
        self._log = open(self.log_path, "ab")
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(self.command(), cwd=self.project_dir, env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self.ready_seconds = self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 60) -> float:
        """Seconds from start() until the health check and the dev key answer."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"local stack exited early:\n{self.log_path.read_text()[-4000:]}")
            try:
                if (httpx.get(self.base_url + "/api/v1/health", timeout=1).status_code == 200
                        and (self.data_dir / "dev-api-key").exists()):
                    return time.monotonic() - self.started_at
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"local stack did not start:\n{self.log_path.read_text()[-4000:]}")

    @property
    def api_key(self) -> str:
        return (self.data_dir / "dev-api-key").read_text().strip()

    # ------------------------------------------------------------ processes
    def processes(self) -> list[psutil.Process]:
        """The top process and every descendant (make, supervisor, worker)."""
        try:
            top = psutil.Process(self.process.pid)
            return [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def worker_pid(self) -> int | None:
        for proc in self.processes():
            try:
                if "scripts.serve_local" in proc.cmdline():
                    return proc.pid
            except psutil.NoSuchProcess:
                continue
        return None

    def kill_tree(self) -> list[psutil.Process]:
        """SIGKILL every process of the stack at once (as a power loss or OOM does)."""
        procs = self.processes()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # the whole group at once
        except ProcessLookupError:
            pass
        for proc in procs:  # and anything that left the group
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        self.process.wait()
        wait_gone(procs, timeout=10)
        self._close_log()
        return procs

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            procs = self.processes()
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            wait_gone(procs, timeout=10)
        self._close_log()

    def _close_log(self) -> None:
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None

    # ------------------------------------------------------------ clients
    def admin(self, *args: str) -> dict:
        env = clean_env()
        env.update({"DOCPUB_DATA_DIR": str(self.data_dir), "PORT": str(self.port), **self.extra_env})
        out = subprocess.run([sys.executable, "-m", "scripts.admin", *args], cwd=self.project_dir, env=env,
                             capture_output=True, text=True, timeout=60)
        lines = out.stdout.strip().splitlines()
        if not lines:
            raise RuntimeError(f"admin printed nothing (exit {out.returncode}):\n{out.stderr[-4000:]}")
        return json.loads(lines[-1])

    def add_member(self, workspace_id: str, email: str, role: str = "viewer") -> None:
        """Make `email` a member of the workspace (an account that signs in by link), in the
        stack's own store, as an invitation accepted would."""
        code = ("import sys\n"
                "from chalicelib import wiring\n"
                "from chalicelib.ports.records import Member, User\n"
                "ctx = wiring.default_context()\n"
                "ws, email, role = sys.argv[1:4]\n"
                "if ctx.users.get(email) is None:\n"
                "    ctx.users.create(User(email=email, password_hash='-', workspace_id=ws, created_ms=1,"
                " email_verified_ms=1))\n"
                "if ctx.people.get_member(ws, email) is None:\n"
                "    ctx.people.add_member(Member(workspace_id=ws, email=email, role=role, created_ms=1))\n")
        env = clean_env()
        env.update({"DOCPUB_DATA_DIR": str(self.data_dir), "PORT": str(self.port), **self.extra_env})
        out = subprocess.run([sys.executable, "-c", code, workspace_id, email, role], cwd=self.project_dir, env=env,
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"add_member failed:\n{out.stderr[-4000:]}")

    def add_grant(self, workspace_id: str, client_name: str, user: str) -> None:
        """A connected app (an OAuth grant approved by `user`) in the stack's own store, as
        an approved authorization would leave it (the Connected apps page lists it)."""
        code = ("import sys, uuid\n"
                "from chalicelib import wiring\n"
                "from chalicelib.ports.records import AccessToken, OAuthGrant, RefreshToken\n"
                "ctx = wiring.default_context()\n"
                "ws, name, user = sys.argv[1:4]\n"
                "now = ctx.now_ms()\n"
                "gid, cid = str(uuid.uuid4()), 'https://app.example/' + uuid.uuid4().hex\n"
                "scopes = ('docs:read', 'docs:write', 'feedback')\n"
                "ctx.oauth.create_grant(OAuthGrant(grant_id=gid, workspace_id=ws, client_id=cid, scopes=scopes,"
                " resource='mcp', created_ms=now, user=user, client_name=name, last_used_ms=now),"
                " AccessToken(token_hash=uuid.uuid4().hex, grant_id=gid, workspace_id=ws, client_id=cid,"
                " scopes=scopes, audience='mcp', expires_ms=now + 3600000),"
                " RefreshToken(token_hash=uuid.uuid4().hex, grant_id=gid, client_id=cid, expires_ms=now + 86400000,"
                " created_ms=now), None)\n")
        env = clean_env()
        env.update({"DOCPUB_DATA_DIR": str(self.data_dir), "PORT": str(self.port), **self.extra_env})
        out = subprocess.run([sys.executable, "-c", code, workspace_id, client_name, user], cwd=self.project_dir,
                             env=env, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"add_grant failed:\n{out.stderr[-4000:]}")

    def client(self, key: str | None = None, **kwargs) -> httpx.Client:
        headers = {"X-Api-Key": key or self.api_key}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60, **kwargs)
