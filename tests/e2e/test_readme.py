"""The README's shell examples run as written (issue 17: docs that run).

Every ```sh / ```bash block of README.md runs, in order, in ONE bash session (so
variables set by one block are seen by the next, as in a reader's terminal),
against a fresh local stack. The only substitution is the port: the blocks use
`${PORT:-8000}` and `${DOCPUB_DATA_DIR:-.local}`, and the session sets PORT and
DOCPUB_DATA_DIR to the stack's. A block is skipped only when its first line is
the visible marker `# [not run by the README test: <reason>]` (deployment needs
AWS, benchmarks take minutes, …). Each block must succeed: no command may fail,
and no answer may be an error body.

The session runs in a scratch folder that links the checkout's files (so files
the examples write, like report.html, stay out of the checkout), with `pip`
installing into a throwaway virtualenv.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import httpx

import pytest

from tests.stack import LocalStack

PROJECT_DIR = Path(__file__).resolve().parents[2]
README = PROJECT_DIR / "README.md"
BLOCK = re.compile(r"^```(?:sh|bash|shell)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
SKIP = re.compile(r"\A# \[not run by the README test: [^\]]+\]")
FAILED = "readme-runner: command failed"
# Answers the README shows as comments, checked in the output of the block that prints them
# (issue 37: a zip sent as a new version renamed the document, so the download was "site.zip").
EXPECTED_OUTPUT = {"-o weekly-report.zip": 'filename="weekly-report.zip"',
                   # issue 36: a credential in the content is refused, with its place
                   '"title": "Deploy log"': "an AWS access key on line 1, column 18 (AKIA…6PLV)"}


def shell_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of every shell block, in order."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_readme_has_runnable_blocks_and_skips_only_with_the_marker():
    blocks = shell_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 10
    runnable = [code for _, code in blocks if not SKIP.match(code)]
    assert len(runnable) >= len(blocks) // 2
    for line, code in blocks:
        if code.lstrip().startswith("#") and "not run" in code.splitlines()[0]:
            assert SKIP.match(code), f"README.md:{line}: malformed skip marker"


def test_no_block_hard_codes_the_port_or_the_data_folder():
    for line, code in shell_blocks(README.read_text(encoding="utf-8")):
        bare = code.replace("${PORT:-8000}", "").replace("${DOCPUB_DATA_DIR:-.local}", "")
        assert "8000" not in bare, f"README.md:{line}: use ${{PORT:-8000}}"
        assert ".local/" not in bare, f"README.md:{line}: use ${{DOCPUB_DATA_DIR:-.local}}/"


def _scratch_checkout(tmp_path: Path) -> Path:
    """A folder that looks like the checkout: links to its files, and a .venv that `make`
    considers installed (so `make -s admin` never reinstalls anything)."""
    work = tmp_path / "checkout"
    work.mkdir()
    for entry in PROJECT_DIR.iterdir():
        if entry.name not in (".venv", ".local", ".git", "build", ".pytest_cache"):
            (work / entry.name).symlink_to(entry)
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    real_bin = Path(sys.executable).parent
    for tool in real_bin.iterdir():
        if tool.name not in ("python", "python3", "python3.11") and not tool.name.startswith("."):
            (bin_dir / tool.name).symlink_to(tool)
    for name in ("python", "python3"):
        wrapper = bin_dir / name
        wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
        wrapper.chmod(0o755)
    (bin_dir / ".installed").touch()
    return work


def _throwaway_pip(tmp_path: Path) -> Path:
    """A bin folder whose `pip` installs into a fresh virtualenv (dependencies shared with
    this one through a .pth file), and where that virtualenv's commands are found."""
    venv = tmp_path / "reader-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = venv / "bin" / "pip"
    pip.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pip --python {shlex.quote(str(python))} "
                   "\"$@\"\n")
    pip.chmod(0o755)
    return venv / "bin"


# The README's long poll (`…/feedback?document_id=$DOC&since=$SINCE&wait=25`) answers when new
# feedback arrives, else after 25 s. As in use, a viewer comments while it waits: once the
# stack has answered the `since` read that precedes it, a viewer posts feedback on that document.
SINCE_READ = re.compile(r'"GET /api/v1/feedback\?document_id=([0-9a-f-]{36}) HTTP/1\.1" 200')


def _viewer_comments_during_the_long_poll(stack: LocalStack, done: threading.Event, answers: list) -> None:
    while not done.wait(0.05):
        found = SINCE_READ.search(stack.log_path.read_text(errors="replace"))
        if found:
            break
    else:
        return
    with httpx.Client(base_url=stack.base_url, timeout=30) as http:
        document = http.get(f"/api/v1/documents/{found.group(1)}", headers={"X-Api-Key": stack.api_key}).json()
        share = document["share_url"].rsplit("/d/", 1)[1]
        answer = http.post(f"/d/{share}/feedback", json={"message": "February works for us.", "name": "Ana"})
        answers.append((answer.status_code, answer.text))


@pytest.mark.e2e
def test_every_readme_shell_block_runs_in_order_against_a_fresh_stack(tmp_path):
    blocks = shell_blocks(README.read_text(encoding="utf-8"))
    stack = LocalStack(tmp_path / "data").start()
    try:
        work = _scratch_checkout(tmp_path)
        reader_bin = _throwaway_pip(tmp_path)
        home = tmp_path / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DOCPUB_", "AWS_", "PYTHON", "VIRTUAL_ENV")) and not k.lower().endswith("_proxy")}
        env.update({"PORT": str(stack.port), "DOCPUB_DATA_DIR": str(stack.data_dir), "HOME": str(home),
                    "XDG_CONFIG_HOME": str(home / "config"), "PATH": f"{reader_bin}:{env.get('PATH', '')}",
                    "BROWSER": "true", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        # a plain interactive-like bash (no pipefail: `… | head` is fine), every failed command reported
        driver = [f"trap 'echo \"{FAILED} (status $?): $BASH_COMMAND\" >&2' ERR"]
        ran = []
        for index, (line, code) in enumerate(blocks):
            if SKIP.match(code):
                continue
            path = tmp_path / f"block-{index}.sh"
            path.write_text(code)
            driver.append(f"source {shlex.quote(str(path))} > {path}.out 2> {path}.err < /dev/null")
            ran.append((index, line, path))
        done, viewer_answers = threading.Event(), []
        viewer = threading.Thread(target=_viewer_comments_during_the_long_poll, args=(stack, done, viewer_answers),
                                  daemon=True)
        viewer.start()
        started = time.monotonic()
        try:
            result = subprocess.run(["bash", "-c", "\n".join(driver)], cwd=work, env=env, capture_output=True,
                                    text=True, timeout=900)
        finally:
            done.set()
            viewer.join()
        print(f"README blocks ran in {time.monotonic() - started:.1f} s; the viewer's comment: {viewer_answers}")
        assert all(status == 201 for status, _ in viewer_answers), viewer_answers
        assert result.returncode == 0 or ran, result.stderr
        for index, line, path in ran:
            out = Path(f"{path}.out").read_text() if Path(f"{path}.out").exists() else ""
            err = Path(f"{path}.err").read_text() if Path(f"{path}.err").exists() else ""
            where = f"README.md:{line} (block {index})\n--- block\n{path.read_text()}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
            assert FAILED not in err, where
            assert '"error":{"code"' not in out.replace(" ", ""), where  # an error answer
            assert "Traceback" not in err and "docpub: error" not in err, where
            for marker, expected in EXPECTED_OUTPUT.items():
                if marker in path.read_text():
                    assert expected in out, f"{where}\n--- expected in stdout: {expected}"
    finally:
        stack.stop()
