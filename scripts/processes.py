"""Process hygiene for `make run`: a child never outlives its parent.

`make run` is three processes: make, the supervisor (scripts.local_stack) and
the server worker (scripts.serve_local). Whatever kills the one above (SIGKILL,
an OOM kill, a closed terminal), the one below must go too, or it keeps the
port and the next `make run` fails with "Address already in use".

Two mechanisms, both cheap:
- Linux: prctl(PR_SET_PDEATHSIG) asks the kernel to signal us when our parent
  exits (a parent *thread*, strictly: the supervisor spawns from its main thread);
- everywhere: a check of os.getppid() against the parent we started under
  (covers other platforms, and the race where the parent died before prctl).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send `sig` when the parent exits. False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def parent_gone(parent_pid: int) -> bool:
    return os.getppid() != parent_pid


def die_with_parent(sig: int, parent_pid: int | None = None, poll_seconds: float = 0.5) -> None:
    """Exit (via `sig` to ourselves) as soon as the parent `parent_pid` is gone.

    Sets the kernel's parent-death signal, then checks once (the parent may have
    died before prctl) and keeps checking in a daemon thread."""
    parent = parent_pid if parent_pid is not None else os.getppid()
    set_parent_death_signal(sig)
    if parent_gone(parent):
        os.kill(os.getpid(), sig)
        return

    def watch() -> None:
        # Leave signals to the main thread: one delivered here would wait for the
        # main thread's next wake-up (up to the server's 0.5 s poll) to be handled.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        event = threading.Event()
        while not event.wait(poll_seconds):
            if parent_gone(parent):
                os.kill(os.getpid(), sig)
                return

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def quiet_aws_logging() -> None:
    """botocore logs "Found credentials in environment variables" at INFO: noise on a console."""
    import logging

    for name in ("botocore", "boto3", "urllib3", "s3transfer"):
        logging.getLogger(name).setLevel(logging.WARNING)
