"""Where the client finds the service address and API key.

Precedence (first found wins, separately for the URL and the key):
1. explicit arguments (``--url`` / ``--api-key``, or ``Client(url=..., api_key=...)``),
2. environment variables ``DOCPUB_URL`` / ``DOCPUB_API_KEY``,
3. the config file written by ``docpub login``: ``$DOCPUB_CONFIG``, else
   ``$XDG_CONFIG_HOME/docpub/config.json``, else ``~/.config/docpub/config.json``.
   It is created with mode 0600 (its folder 0700) because it holds the key.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from docpub.errors import UsageError

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    explicit = os.environ.get("DOCPUB_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "docpub" / "config.json"


def read_config(path: Optional[Path] = None) -> dict:
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read the config file {path}: {exc.strerror}", code="config_error") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise UsageError(f"the config file {path} is not valid JSON; run `docpub login` again",
                         code="config_error") from None
    return data if isinstance(data, dict) else {}


def write_config(url: str, api_key: str, path: Optional[Path] = None) -> Path:
    """Write the URL and key to the config file, readable by its owner only (0600)."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # O_CREAT's mode does not apply to an existing file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"url": url, "api_key": api_key}, handle, indent=2)
            handle.write("\n")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return path


def remove_config(path: Optional[Path] = None) -> bool:
    path = path or config_path()
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


@dataclass(frozen=True)
class Settings:
    url: str
    api_key: Optional[str]
    url_source: str
    key_source: Optional[str]


def resolve(url: Optional[str] = None, api_key: Optional[str] = None) -> Settings:
    file_data: Optional[dict] = None

    def from_file(name: str) -> Optional[str]:
        nonlocal file_data
        if file_data is None:
            file_data = read_config()
        value = file_data.get(name)
        return value if isinstance(value, str) and value else None

    url_source = "argument"
    if not url:
        url, url_source = os.environ.get("DOCPUB_URL") or None, "DOCPUB_URL"
    if not url:
        url, url_source = from_file("url"), "config file"
    if not url:
        url, url_source = DEFAULT_URL, "default"
    key_source: Optional[str] = "argument"
    if not api_key:
        api_key, key_source = os.environ.get("DOCPUB_API_KEY") or None, "DOCPUB_API_KEY"
    if not api_key:
        api_key, key_source = from_file("api_key"), "config file"
    if not api_key:
        key_source = None
    return Settings(url=url.rstrip("/"), api_key=api_key, url_source=url_source, key_source=key_source)
