"""The AWS package for tests/e2e/test_infra.py, built in the background.

Building it (`python -m infra.package --stage prod`, what `make package` runs) takes
30-60 s on a fresh checkout: pip downloads every Lambda wheel, builds the ones PyPI
has no Lambda wheel for, and byte-compiles the zip. It is mostly waiting on pip and
subprocesses, so it starts as soon as collection finds a test that needs it and runs
beside the tests before test_infra.py (the browser tests, on the other core) instead
of in front of test_infra.py's first test. The `build` fixture waits for it and
fails with its output if it failed. Run alone, test_infra.py waits for it at once.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INFRA_TESTS = Path(__file__).with_name("test_infra.py")


class BackgroundBuild:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="docpub-infra-"))
        self.out = self.folder / "build"
        self.log_path = self.folder / "package.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "infra.package", "--stage", "prod", "--out", str(self.out)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def wait(self) -> Path:
        """The build folder (sam.json, deployment.zip) once the build has finished."""
        code = self.process.wait()
        if code != 0:
            pytest.fail(f"python -m infra.package failed ({code}):\n{self.log_path.read_text()[-8000:]}",
                        pytrace=False)
        return self.out

    def discard(self) -> None:
        if self.process.poll() is None:  # the session ended before test_infra.py ran (-x, Ctrl-C)
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


BUILD = pytest.StashKey[BackgroundBuild]()


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(item.path == INFRA_TESTS and "build" in getattr(item, "fixturenames", ()) for item in session.items):
        session.config.stash[BUILD] = BackgroundBuild()


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(BUILD, None)
    if build is not None:
        build.discard()
