"""Start the real local stack (`scripts.local_stack`) on a free port, for e2e tests."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalStack:
    def __init__(self, data_dir: Path, port: int | None = None, env: dict | None = None,
                 autoreload: bool = False):
        self.autoreload = autoreload
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.extra_env = env or {}
        self.process: subprocess.Popen | None = None
        self.log_path = self.data_dir.parent / f"stack-{self.port}.log"

    def start(self, timeout: float = 60) -> "LocalStack":
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"DOCPUB_DATA_DIR": str(self.data_dir), "PORT": str(self.port),
                    "DOCPUB_BASE_URL": self.base_url, **self.extra_env})
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scripts.local_stack", "--port", str(self.port)]
            + ([] if self.autoreload else ["--no-autoreload"]),
            cwd=PROJECT_DIR, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"local stack exited early:\n{self.log_path.read_text()[-4000:]}")
            try:
                if httpx.get(self.base_url + "/api/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"local stack did not start:\n{self.log_path.read_text()[-4000:]}")

    @property
    def api_key(self) -> str:
        return (self.data_dir / "dev-api-key").read_text().strip()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if getattr(self, "_log", None):
            self._log.close()

    def admin(self, *args: str) -> dict:
        import json

        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"DOCPUB_DATA_DIR": str(self.data_dir), "PORT": str(self.port)})
        out = subprocess.run([sys.executable, "-m", "scripts.admin", *args], cwd=PROJECT_DIR, env=env,
                             capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout.strip().splitlines()[-1])

    def client(self, key: str | None = None, **kwargs) -> httpx.Client:
        headers = {"X-Api-Key": key or self.api_key}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60, **kwargs)
