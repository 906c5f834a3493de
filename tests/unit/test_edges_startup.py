"""Issue 33 finding 8: `DOCPUB_TRUST_CLOUDFRONT` with an empty origin secret trusted a
client-address header anyone can send. Contract 4 "Bounds, second pass": a setting that
trusts a forwarded client-address header without the origin secret stops the service at
start with a clear message (deployed: the function fails at init; `make run`: exits non-zero)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("secret", [None, "", "   "])
def test_trusting_the_viewer_address_without_the_origin_secret_is_refused(monkeypatch, secret):
    from chalicelib import config

    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    if secret is None:
        monkeypatch.delenv("DOCPUB_ORIGIN_SECRET", raising=False)
    else:
        monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", secret)
    with pytest.raises(config.ConfigurationError, match="DOCPUB_ORIGIN_SECRET"):
        config.check_startup()


def test_trust_with_the_secret_or_no_trust_starts(monkeypatch):
    from chalicelib import config

    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    monkeypatch.setenv("DOCPUB_ORIGIN_SECRET", "s" * 40)
    config.check_startup()
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "false")
    monkeypatch.delenv("DOCPUB_ORIGIN_SECRET")
    config.check_startup()


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DOCPUB_", "AWS_"))}
    return {**base, "PYTHONPATH": str(PROJECT_DIR), **extra}


def test_the_lambda_fails_at_init_with_the_message():
    run = subprocess.run([sys.executable, "-c", "import app"], cwd=PROJECT_DIR, capture_output=True, text=True,
                         timeout=120, env=_env(AWS_LAMBDA_FUNCTION_NAME="docpub-dev", DOCPUB_SECRET_KEY="k" * 40,
                                               DOCPUB_TRUST_CLOUDFRONT="true"))
    assert run.returncode != 0
    assert "DOCPUB_TRUST_CLOUDFRONT" in run.stderr and "DOCPUB_ORIGIN_SECRET" in run.stderr


def test_make_run_exits_non_zero_with_the_message(tmp_path):
    """scripts.local_stack (what `make run` runs) checks before it starts anything: one clear
    line on stderr, no traceback, exit 2."""
    run = subprocess.run([sys.executable, "-m", "scripts.local_stack", "--port", "9", "--no-autoreload"],
                         cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120,
                         env=_env(DOCPUB_DATA_DIR=str(tmp_path), DOCPUB_TRUST_CLOUDFRONT="true"))
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "DOCPUB_ORIGIN_SECRET" in run.stderr and "Traceback" not in run.stderr
    assert "Docpub is running" not in run.stdout


def test_the_banners_admin_command_names_this_stacks_port_and_data_folder(tmp_path, monkeypatch):
    """Reproduction: `PORT=40483 DOCPUB_DATA_DIR=/tmp/qa-data make run` printed `make -s admin
    ARGS="login-link ws_dev" makes another`; run as printed in another terminal it made a link to
    http://127.0.0.1:8000 (and opened ./.local's database, not this stack's)."""
    from pathlib import Path

    from scripts.local_stack import admin_command

    monkeypatch.chdir(tmp_path)
    assert admin_command("login-link ws_dev", 8000, (tmp_path / ".local").resolve()) == \
        'make -s admin ARGS="login-link ws_dev"'
    assert admin_command("login-link ws_dev", 40483, Path("/tmp/qa-data")) == \
        'PORT=40483 DOCPUB_DATA_DIR=/tmp/qa-data make -s admin ARGS="login-link ws_dev"'
