"""`make run`'s processes: they die together, stop on Ctrl-C, accept bursts, and
reload on source changes only (never on tests/ or the data folder)."""
from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.stack import PROJECT_DIR, LocalStack, gone, port_is_free

pytestmark = pytest.mark.e2e


def _wait_all_gone(procs: list[psutil.Process], port: int, timeout: float) -> float:
    """Seconds until every process has exited and the port can be bound again."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(gone(p) for p in procs) and port_is_free(port):
            return time.monotonic() - start
        time.sleep(0.02)
    alive = [p.pid for p in procs if not gone(p)]
    raise AssertionError(f"after {timeout} s still alive: {alive}; port free: {port_is_free(port)}")


def _kill_top(stack: LocalStack, sig: int) -> list[psutil.Process]:
    procs = stack.processes()
    assert len(procs) >= 2, procs  # the top process and the server worker at least
    os.kill(stack.process.pid, sig)
    stack.process.wait(timeout=10)  # reap the top process; the others are not our children
    return procs


def test_sigkill_of_make_run_leaves_no_process_on_the_port(tmp_path):
    stack = LocalStack(tmp_path / "data", via_make=True).start()
    try:
        names = [" ".join(p.cmdline()) for p in stack.processes()]
        assert names[0].startswith("make") and any("scripts.serve_local" in n for n in names), names
        procs = _kill_top(stack, signal.SIGKILL)
        _wait_all_gone(procs[1:], stack.port, timeout=3)
        # and the next `make run` gets the port
        again = LocalStack(tmp_path / "data", port=stack.port, via_make=True).start()
        again.stop()
    finally:
        stack.stop()


def test_sigkill_of_the_supervisor_takes_the_worker_down(tmp_path):
    stack = LocalStack(tmp_path / "data").start()
    try:
        procs = _kill_top(stack, signal.SIGKILL)
        _wait_all_gone(procs[1:], stack.port, timeout=3)
    finally:
        stack.stop()


def test_ctrl_c_stops_every_process_within_two_seconds(tmp_path):
    stack = LocalStack(tmp_path / "data", via_make=True, autoreload=True).start()
    try:
        with stack.client() as http:  # a kept-alive connection must not hold the stop up
            assert http.get("/api/v1/me").status_code == 200
            procs = stack.processes()
            os.killpg(stack.process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
            took = _wait_all_gone(procs, stack.port, timeout=2)
        assert took < 2
    finally:
        stack.stop()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_supervisor_alone_stops_the_worker(tmp_path, sig):
    stack = LocalStack(tmp_path / "data").start()
    try:
        procs = _kill_top(stack, sig)
        assert stack.process.returncode == 0
        _wait_all_gone(procs, stack.port, timeout=2)
    finally:
        stack.stop()


def test_64_simultaneous_connections_are_all_accepted_at_once(stack):
    """chalice local's listen backlog was 5: a burst's extra SYNs were dropped and
    retried after 1 s, 3 s, 7 s... (or reset). Every connection must be accepted
    by the kernel at once and answered."""
    count = 64
    barrier = threading.Barrier(count)
    connect_seconds: list[float] = []
    statuses: list[bytes] = []
    errors: list[str] = []

    def one() -> None:
        try:
            barrier.wait(timeout=30)
            start = time.monotonic()
            sock = socket.create_connection(("127.0.0.1", stack.port), timeout=30)
            connect_seconds.append(time.monotonic() - start)
            with sock:
                sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n")
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
            statuses.append(data.split(b"\r\n", 1)[0])
        except Exception as exc:  # a reset or a timeout is the failure under test
            errors.append(repr(exc))

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert statuses == [b"HTTP/1.1 200 OK"] * count
    # A dropped SYN is retried after 1 s at the earliest; an accepted one takes microseconds.
    assert max(connect_seconds) < 0.9, sorted(connect_seconds)[-5:]


def _source_copy(tmp_path) -> Path:
    """A copy of what the server runs (app.py, .chalice/, chalicelib/, scripts/): this
    test edits source, and must not restart a `make run` serving from the checkout."""
    import shutil

    copy = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in (".chalice", "chalicelib", "scripts"):
        shutil.copytree(PROJECT_DIR / name, copy / name, ignore=ignore)
    shutil.copy2(PROJECT_DIR / "app.py", copy / "app.py")
    return copy


def test_autoreload_watches_source_only(tmp_path):
    """`make test` in the same checkout writes under tests/, build/, the data folder
    and __pycache__: none of that restarts the server. A source save does, and the
    data outlives the worker."""
    project = _source_copy(tmp_path)
    stack = LocalStack(tmp_path / "data", autoreload=True, project_dir=project).start()
    scratch = [project / "tests" / "test_scratch.py", project / "build" / "scratch.txt",
               project / ".pytest_cache" / "scratch", project / "chalicelib" / "__pycache__" / "scratch.pyc",
               project / "chalicelib" / ".scratch.swp", stack.data_dir / "scratch.txt"]
    try:
        with stack.client() as http:
            doc = http.post("/api/v1/publish", json={"title": "reload", "html": "<p>r</p>"}).json()
        worker = stack.worker_pid()
        assert worker is not None
        for round_ in range(3):
            for path in scratch:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"round {round_}\n")
            time.sleep(0.7)  # more than one poll of the watcher
        assert stack.worker_pid() == worker, "a write outside the source restarted the server"
        assert stack.log_path.read_text().count("Serving on") == 1

        app_py = project / "app.py"
        app_py.write_text(app_py.read_text() + "\n# an edit\n")  # what an editor's save does
        deadline = time.monotonic() + 30
        while stack.worker_pid() in (worker, None) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert stack.worker_pid() not in (worker, None), "a source change did not restart the server"
        deadline = time.monotonic() + 30
        while True:
            try:
                got = httpx.get(f"{stack.base_url}/api/v1/documents/{doc['document_id']}",
                                headers={"X-Api-Key": stack.api_key}, timeout=5)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert got.status_code == 200 and got.json()["title"] == "reload"
        assert "Source changed: restarting the server." in stack.log_path.read_text()
    finally:
        stack.stop()


def test_a_port_in_use_ends_make_run_with_the_error_instead_of_waiting(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        stack = LocalStack(tmp_path / "data", port=taken.getsockname()[1], autoreload=True)
        with pytest.raises(RuntimeError, match="exited early"):
            stack.start(timeout=60)
        assert stack.process.wait(timeout=10) != 0
        assert "Address already in use" in stack.log_path.read_text()
        stack.stop()
