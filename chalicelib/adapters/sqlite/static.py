"""The static site as files (ports/static.py): `<data dir>/static/<site>/<name>`, one
file per object plus `<name>.meta` (its Content-Type and Cache-Control), where `<name>`
is the public path percent-encoded into one file name (`/d/<share>` and
`/d/<share>/v/<version>` cannot both be files in a folder tree). Nothing serves these
files: `make run` answers every share request from the function; the adapter exists so
the embedded store keeps the same contract (tests/contract/test_static_site.py) and a
static host could be pointed at the folder."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional
from urllib.parse import quote

from chalicelib.ports.static import SITES, StaticObject


def _name(path: str) -> str:
    if not path.startswith("/d/") or any(part in ("", ".", "..") for part in path[1:].split("/")):
        raise ValueError(f"not a static path: {path!r}")
    return quote(path, safe="")


class FileStaticSite:
    enabled = True

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _folder(self, site: str) -> Path:
        if site not in SITES:
            raise ValueError(f"no such site: {site!r}")
        folder = self.root / site
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def put(self, site: str, obj: StaticObject) -> None:
        target = self._folder(site) / _name(obj.path)
        meta = json.dumps({"content_type": obj.content_type, "cache_control": obj.cache_control}).encode()
        for path, data in ((target, obj.body), (target.with_name(target.name + ".meta"), meta)):
            tmp = path.with_name(".tmp-" + path.name)
            tmp.write_bytes(data)
            os.replace(tmp, path)

    def get(self, site: str, path: str) -> Optional[StaticObject]:
        target = self._folder(site) / _name(path)
        try:
            body = target.read_bytes()
            meta = json.loads(target.with_name(target.name + ".meta").read_bytes())
        except FileNotFoundError:
            return None
        return StaticObject(path, body, meta["content_type"], meta["cache_control"])

    def delete_link(self, site: str, share_id: str) -> int:
        page = _name(f"/d/{share_id}")
        removed = 0
        for entry in self._folder(site).iterdir():
            name = entry.name.removesuffix(".meta")
            if name == page or name.startswith(page + "%2F"):
                entry.unlink(missing_ok=True)
                removed += 0 if entry.name.endswith(".meta") else 1
        return removed
