"""Docpub's Python client: the REST API v1 (see the API contract) over httpx.

    from docpub import Client

    with Client() as docpub:                     # DOCPUB_URL / DOCPUB_API_KEY / `docpub login`
        doc = docpub.publish("<h1>Hi</h1>", title="Report")
        print(doc["share_url"])

Every method returns the contract's JSON as plain dicts and raises a
``docpub.errors.DocpubError`` subclass on failure.

Retries: a request that could not be sent (connection refused, DNS, connect
timeout) and a 429 (Retry-After honoured) are retried for every call, because
nothing happened on the server. A 5xx or a connection lost after sending is
retried only when a replay is harmless: reads, PATCH, DELETE, and publish, which
carries one ``Idempotency-Key`` per call (kept across its retries), so the server
answers a replay with the first answer instead of storing a second version.
Edits have no idempotency key in the contract and are not replayed after the
request may have reached the server.
"""
from __future__ import annotations

import email.utils
import json
import os
import random
import re
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Union
from urllib.parse import quote

import httpx

from docpub import config
from docpub.errors import (
    AuthError, ConnectionFailed, DocpubError, LimitError, NotFoundError, ServerError, UsageError,
    error_from_response,
)

__all__ = ["Client", "MAX_HTML_BYTES", "check_html_size", "USER_AGENT"]

VERSION = "0.1.0"
USER_AGENT = f"docpub-python/{VERSION}"
MAX_HTML_BYTES = 4 * 1024 * 1024  # the contract's limit: 4 MiB of UTF-8
# Files up to this go in one multipart request (the API's body cap is 6 MiB, with room
# for the multipart framing); larger ones go through POST /api/v1/uploads.
MULTIPART_LIMIT = 5 * 1024 * 1024
# Never put in a folder's bundle: version control, caches, editor and OS noise.
SKIPPED_NAMES = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".DS_Store", "Thumbs.db", ".venv"}


def zip_folder(folder: Path) -> bytes:
    """A folder as a .zip, paths relative to it, noise and symlinks left out."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in sorted(folder.rglob("*")):
            relative = item.relative_to(folder)
            if any(part in SKIPPED_NAMES for part in relative.parts) or item.is_symlink() or not item.is_file():
                continue
            archive.write(item, relative.as_posix())
    return out.getvalue()
UPLOAD_CHUNK = 64 * 1024

Progress = Callable[[int, int], None]
RetryNotice = Callable[[int, float, str], None]
Edit = Union[dict, tuple, list]


def check_html_size(data: bytes) -> None:
    """Refuse HTML over 4 MiB before uploading, with the server's own message."""
    if len(data) > MAX_HTML_BYTES:
        raise LimitError(
            f"The HTML is {len(data):,} bytes; the limit is {MAX_HTML_BYTES:,} bytes (4 MiB). "
            "Inlined base64 images are the usual cause: host images at a URL instead.",
            code="document_too_large", status=None,
            details={"limit_bytes": MAX_HTML_BYTES, "size_bytes": len(data)})


def _segment(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError("an id must be a non-empty string", code="usage_error")
    return quote(value, safe="")


def _retry_after(response: httpx.Response) -> Optional[float]:
    value = response.headers.get("Retry-After")
    if value:
        value = value.strip()
        if value.isdigit():
            return float(value)
        try:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError):
            pass
    try:
        seconds = response.json()["error"]["details"]["retry_after_seconds"]
        return float(seconds)
    except Exception:
        return None


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Client:
    """A Docpub API client. Not thread-safe; create one per thread.

    ``url`` and ``api_key`` default to ``DOCPUB_URL`` / ``DOCPUB_API_KEY``, then the
    config file written by ``docpub login``. ``max_retries`` bounds retries per
    call; ``max_retry_wait`` is the longest single wait honoured (a longer
    Retry-After fails at once). ``on_retry(attempt, wait_seconds, reason)`` is
    called before each wait.
    """

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None, *,
                 timeout: float = 60.0, max_retries: int = 4, max_retry_wait: float = 120.0,
                 backoff_base: float = 0.5, backoff_cap: float = 10.0,
                 on_retry: Optional[RetryNotice] = None, sleep: Callable[[float], None] = time.sleep,
                 transport: Optional[httpx.BaseTransport] = None):
        settings = config.resolve(url, api_key)
        self.url = settings.url
        self._api_key = settings.api_key
        self.max_retries = max(0, int(max_retries))
        self.max_retry_wait = max_retry_wait
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.on_retry = on_retry
        self._sleep = sleep
        self._http = httpx.Client(base_url=self.url, timeout=timeout, transport=transport,
                                  headers={"User-Agent": USER_AGENT, "Accept": "application/json"})

    def __repr__(self) -> str:  # never shows the key
        return f"Client(url={self.url!r}, api_key={'set' if self._api_key else 'missing'})"

    @property
    def has_api_key(self) -> bool:
        return bool(self._api_key)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- documents --------------------------------------------------------------------------

    def publish(self, html: Union[str, bytes], title: Optional[str] = None, *, document_id: Optional[str] = None,
                note: Optional[str] = None, description: Optional[str] = None,
                base_version_id: Optional[str] = None, idempotency_key: Optional[str] = None,
                progress: Optional[Progress] = None, format: Optional[str] = None,
                files: Optional[list[dict]] = None, allow_secrets: bool = False) -> dict:
        """Create a document, or append a version to ``document_id``.

        ``format="markdown"``: ``html`` is Markdown source, rendered by the service.
        ``files``: ``[{"path", "content", "encoding"?}]`` beside the page. ``title``
        left out: the service takes the page's <title>/<h1> (Markdown: first heading).
        Returns ``{document_id, version_id, version_number, share_url}``. One
        ``Idempotency-Key`` (random unless given) is sent with every attempt.
        """
        if isinstance(html, bytes):
            data = html
            try:
                html = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UsageError(f"the HTML is not valid UTF-8 (byte {exc.start})", code="usage_error") from None
        else:
            data = html.encode("utf-8")
        check_html_size(data)
        body: dict[str, Any] = {"html": html}
        for name, value in (("title", title), ("document_id", document_id), ("note", note),
                            ("description", description), ("base_version_id", base_version_id),
                            ("format", format), ("files", files), ("allow_secrets", allow_secrets or None)):
            if value is not None:
                body[name] = value
        key = idempotency_key or str(uuid.uuid4())
        response, _ = self._request("POST", "/api/v1/publish", json_body=body, replay_safe=True,
                                    headers={"Idempotency-Key": key}, progress=progress)
        return self._result(response)

    def publish_path(self, path: Union[str, "os.PathLike[str]"], title: Optional[str] = None, *,
                     document_id: Optional[str] = None, note: Optional[str] = None,
                     description: Optional[str] = None, idempotency_key: Optional[str] = None,
                     progress: Optional[Progress] = None, allow_secrets: bool = False) -> dict:
        """Publish a file or a folder: .html/.htm, .md/.markdown, a .zip bundle, or a folder
        (zipped here; it must hold index.html or index.md). Up to the request cap the file
        goes in one multipart request; above it, through an upload (POST /api/v1/uploads,
        then a PUT of the bytes straight to storage), on its own."""
        source = Path(path)
        if source.is_dir():
            data, filename = zip_folder(source), (source.resolve().name or "site") + ".zip"
        else:
            try:
                data = source.read_bytes()
            except OSError as exc:
                raise UsageError(f"cannot read {source}: {exc.strerror}", code="usage_error") from None
            filename = source.name
        fields = {name: value for name, value in (("title", title), ("document_id", document_id),
                                                  ("note", note), ("description", description)) if value is not None}
        if allow_secrets:  # store it even if the secret scan finds credentials (contract 7g)
            fields["allow_secrets"] = "true"
        key = idempotency_key or str(uuid.uuid4())
        if len(data) > MULTIPART_LIMIT:
            body: dict[str, Any] = {**fields, "upload_id": self.upload(filename, data, progress=progress)}
            if allow_secrets:
                body["allow_secrets"] = True
            response, _ = self._request("POST", "/api/v1/publish", json_body=body, replay_safe=True,
                                        headers={"Idempotency-Key": key})
            return self._result(response)
        request = httpx.Request("POST", self.url, data=fields,
                                files={"file": (filename, data, "application/octet-stream")})
        content = request.read()
        response, _ = self._request("POST", "/api/v1/publish", raw_body=(content, request.headers["Content-Type"]),
                                    replay_safe=True, headers={"Idempotency-Key": key}, progress=progress)
        return self._result(response)

    def upload(self, filename: str, data: bytes, *, progress: Optional[Progress] = None) -> str:
        """Send a file over the request cap; returns the upload_id to publish with."""
        response, _ = self._request("POST", "/api/v1/uploads", json_body={"filename": filename,
                                                                         "size_bytes": len(data)}, replay_safe=True)
        ticket = self._result(response)
        # The URL is the credential: no API key goes to it (it may be S3's).
        put = self._http.put(ticket["upload_url"], content=self._body(data, progress),
                             headers={"Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        if put.status_code not in (200, 204):
            self._result(put)  # the contract's error, when the server answered one
            raise DocpubError(f"the upload was refused ({put.status_code})", code="upload_failed",
                              status=put.status_code)
        return ticket["upload_id"]

    def download(self, document_id: str, version_id: Union[int, str, None] = None) -> tuple[str, bytes]:
        """(file name, bytes) of a version: the page (.html), the Markdown source (.md), or a
        .zip of a bundle. ``version_id`` is a version_id, or a number (1, 2, …) as for `get`."""
        if isinstance(version_id, int) and not isinstance(version_id, bool):
            version_id = self._version_id(document_id, version_id)
        params = {"version_id": version_id} if version_id else None
        response, _ = self._request("GET", f"/api/v1/documents/{_segment(document_id)}/download", params=params,
                                    headers={"Accept": "*/*"})
        if response.status_code in (302, 303) and response.headers.get("Location"):
            # Deployed, a file too large for a Lambda response: storage serves it from a
            # short-lived presigned URL. The URL is the credential: no API key goes to it.
            response = self._http.get(response.headers["Location"], headers={"Accept": "*/*"})
        if response.status_code != 200:
            self._result(response)
        match = re.search(r'filename="([^"]+)"', response.headers.get("Content-Disposition", ""))
        return (match.group(1) if match else "document"), response.content

    def start_export(self) -> str:
        """Start a zip of the whole workspace (owner); its export_id. While another export of
        the workspace runs the server answers 429, which this retries after `Retry-After`."""
        response, _ = self._request("POST", "/api/v1/exports", replay_safe=False)
        return self._result(response)["export_id"]

    def get_export(self, export_id: str) -> dict:
        """``{"status": "running" | "ready" | "failed", "download_url"?, "expires_at"?}``."""
        response, _ = self._request("GET", f"/api/v1/exports/{_segment(export_id)}")
        return self._result(response)

    def wait_for_export(self, export_id: str, *, timeout: float = 900, poll_seconds: float = 1.0) -> dict:
        """Poll until the export is no longer running (or `timeout` seconds passed); its status."""
        waited = 0.0
        while True:
            status = self.get_export(export_id)
            if status["status"] != "running" or waited >= timeout:
                return status
            self._sleep(poll_seconds)
            waited += poll_seconds

    def download_export(self, download_url: str, path: Union[str, "os.PathLike[str]"]) -> int:
        """Save a ready export's zip (its URL needs no key: none is sent) to `path`, streamed;
        the bytes written."""
        written = 0
        with self._http.stream("GET", download_url, headers={"Accept": "*/*"}) as response:
            if response.status_code != 200:
                response.read()
                self._result(response)
            with open(path, "wb") as out:
                for chunk in response.iter_bytes(1 << 20):
                    out.write(chunk)
                    written += len(chunk)
        return written

    def edit(self, document_id: str, edits: Iterable[Edit], *, note: Optional[str] = None,
             base_version_id: Optional[str] = None, allow_secrets: bool = False) -> dict:
        """Apply find-and-replace edits; each edit is ``{"old_string", "new_string", "replace_all"?}``
        or a tuple ``(old, new)`` / ``(old, new, replace_all)``."""
        body: dict[str, Any] = {"edits": [self._edit(e) for e in edits]}
        if note is not None:
            body["note"] = note
        if base_version_id is not None:
            body["base_version_id"] = base_version_id
        if allow_secrets:
            body["allow_secrets"] = True
        response, _ = self._request("POST", f"/api/v1/documents/{_segment(document_id)}/edit",
                                    json_body=body, replay_safe=False)
        return self._result(response)

    @staticmethod
    def _edit(edit: Edit) -> dict:
        if isinstance(edit, dict):
            return dict(edit)
        if isinstance(edit, (tuple, list)) and len(edit) in (2, 3):
            out = {"old_string": edit[0], "new_string": edit[1]}
            if len(edit) == 3:
                out["replace_all"] = bool(edit[2])
            return out
        raise UsageError("an edit is a dict or an (old, new[, replace_all]) tuple", code="usage_error")

    def get(self, document_id: str, *, include_html: bool = False,
            version: Union[int, str, None] = None) -> dict:
        """The document with its versions; ``version`` is a number (1, 2, …) or a version_id."""
        version_id: Optional[str] = None
        if isinstance(version, int) and not isinstance(version, bool):
            version_id = self._version_id(document_id, version)
        elif version is not None:
            version_id = str(version)
        params: dict[str, str] = {}
        if include_html:
            params["include_html"] = "true"
        if version_id is not None:
            params["version_id"] = version_id
        response, _ = self._request("GET", f"/api/v1/documents/{_segment(document_id)}", params=params)
        return self._result(response)

    def _version_id(self, document_id: str, number: int) -> str:
        """The id of version `number` of the document (NotFoundError when it has none)."""
        meta = self.get(document_id)
        match = [v for v in meta.get("versions", []) if v.get("number") == number]
        if not match:
            raise NotFoundError(f"document {document_id} has no version {number} "
                                f"(it has {len(meta.get('versions', []))})", code="not_found", status=404)
        return match[0]["version_id"]

    def list_documents(self, *, limit: Optional[int] = None, cursor: Optional[str] = None,
                       query: Optional[str] = None) -> dict:
        """One page: ``{"documents": [...], "next_cursor"}``, newest first."""
        params: dict[str, Any] = {}
        if limit is not None:
            params["limit"] = str(limit)
        if cursor:
            params["cursor"] = cursor
        if query is not None:
            params["query"] = query
        response, _ = self._request("GET", "/api/v1/documents", params=params)
        return self._result(response)

    def iter_documents(self, *, query: Optional[str] = None, page_size: int = 100) -> Iterator[dict]:
        """Every document (following cursors), newest first."""
        cursor = None
        while True:
            page = self.list_documents(limit=page_size, cursor=cursor, query=query)
            yield from page.get("documents", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def find(self, query: str, *, limit: Optional[int] = None) -> dict:
        """Documents whose title or description contains ``query`` (case-insensitive)."""
        return self.list_documents(limit=limit, query=query)

    def update(self, document_id: str, *, title: Optional[str] = None,
               description: Optional[str] = None) -> dict:
        """Rename / re-describe a document (no new version)."""
        body = {k: v for k, v in (("title", title), ("description", description)) if v is not None}
        if not body:
            raise UsageError("give a title, a description or both", code="usage_error")
        response, _ = self._request("PATCH", f"/api/v1/documents/{_segment(document_id)}", json_body=body)
        return self._result(response)

    def delete(self, document_id: str) -> None:
        """Delete a document, its versions, feedback and share link."""
        response, ambiguous = self._request("DELETE", f"/api/v1/documents/{_segment(document_id)}")
        if response.status_code == 404 and ambiguous:
            return None  # an earlier attempt reached the server and deleted it
        self._result(response)
        return None

    # -- workspace and feedback ---------------------------------------------------------------

    def me(self) -> dict:
        """``{"workspace": {id, name, plan, document_count, entitlements, …}}``."""
        response, _ = self._request("GET", "/api/v1/me")
        return self._result(response)

    def health(self) -> dict:
        response, _ = self._request("GET", "/api/v1/health", require_key=False)
        return self._result(response)

    def list_feedback(self, *, document_id: Optional[str] = None, status: Optional[str] = None,
                      limit: Optional[int] = None, cursor: Optional[str] = None) -> dict:
        """``{"feedback": [...], "next_cursor"}``; status ``open`` (default), ``resolved`` or ``all``."""
        params: dict[str, str] = {}
        for name, value in (("document_id", document_id), ("status", status), ("limit", limit),
                            ("cursor", cursor)):
            if value is not None:
                params[name] = str(value)
        response, _ = self._request("GET", "/api/v1/feedback", params=params)
        return self._result(response)

    def resolve_feedback(self, feedback_id: str, *, resolved: bool = True) -> dict:
        """Mark feedback resolved (or reopen it with ``resolved=False``)."""
        response, _ = self._request("POST", f"/api/v1/feedback/{_segment(feedback_id)}/resolve",
                                    json_body={"resolved": resolved}, replay_safe=True)  # sets a state
        return self._result(response)

    # -- transport ------------------------------------------------------------------------------

    def _result(self, response: httpx.Response) -> Any:
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.is_success:
            if response.status_code != 204 and body is None:
                raise ServerError(f"unexpected answer from {self.url} (HTTP {response.status_code}, not JSON)",
                                  code="bad_response", status=response.status_code)
            return body
        raise error_from_response(response.status_code, body)

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_cap, self.backoff_base * (2 ** attempt)) * random.uniform(0.5, 1.0)

    def _request(self, method: str, path: str, *, json_body: Any = None, params: Optional[dict] = None,
                 headers: Optional[dict] = None, replay_safe: Optional[bool] = None,
                 progress: Optional[Progress] = None, require_key: bool = True,
                 raw_body: Optional[tuple[bytes, str]] = None) -> tuple[httpx.Response, bool]:
        """Send with retries. Returns the final answer and whether an earlier attempt may have
        reached the server (its outcome unknown)."""
        if replay_safe is None:
            replay_safe = method in ("GET", "HEAD", "PUT", "PATCH", "DELETE")
        all_headers = dict(headers or {})
        if require_key:
            if not self._api_key:
                raise AuthError("no API key: set DOCPUB_API_KEY, pass --api-key, or run `docpub login`",
                                code="unauthorized")
            all_headers["X-Api-Key"] = self._api_key
        content: Optional[bytes] = None
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
            all_headers["Content-Length"] = str(len(content))
        elif raw_body is not None:
            content = raw_body[0]
            all_headers["Content-Type"] = raw_body[1]
            all_headers["Content-Length"] = str(len(content))
        ambiguous = False
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, params=params, headers=all_headers,
                                              content=self._body(content, progress))
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                # Never reached the server: always safe to try again.
                if attempt < self.max_retries:
                    self._wait(attempt, self._backoff(attempt), f"cannot connect ({_describe(exc)})")
                    attempt += 1
                    continue
                raise ConnectionFailed(f"cannot reach {self.url}: {_describe(exc)}") from None
            except httpx.TransportError as exc:
                if replay_safe and attempt < self.max_retries:
                    ambiguous = True
                    self._wait(attempt, self._backoff(attempt), f"connection lost ({_describe(exc)})")
                    attempt += 1
                    continue
                hint = "" if replay_safe else (" after the request was sent; it may or may not have been "
                                               "applied: check before retrying")
                raise ConnectionFailed(f"connection to {self.url} failed{hint}: {_describe(exc)}") from None
            status = response.status_code
            retryable = status == 429 or (status >= 500 and replay_safe)
            if not retryable or attempt >= self.max_retries:
                return response, ambiguous
            wait = _retry_after(response)
            if wait is None:
                wait = self._backoff(attempt)
            if wait > self.max_retry_wait:
                return response, ambiguous
            if status >= 500:
                ambiguous = True
            reason = "rate limited (429)" if status == 429 else f"server error ({status})"
            self._wait(attempt, wait, reason)
            attempt += 1

    def _wait(self, attempt: int, wait: float, reason: str) -> None:
        if self.on_retry is not None:
            self.on_retry(attempt + 1, wait, reason)
        self._sleep(wait)

    @staticmethod
    def _body(content: Optional[bytes], progress: Optional[Progress]):
        if content is None or progress is None:
            return content
        total = len(content)

        def chunks() -> Iterator[bytes]:
            sent = 0
            progress(0, total)
            for start in range(0, total, UPLOAD_CHUNK):
                chunk = content[start:start + UPLOAD_CHUNK]
                yield chunk
                sent += len(chunk)
                progress(sent, total)

        return chunks()
