"""The `docpub` command. Run `docpub --help`; exit statuses are in docpub.errors."""
from __future__ import annotations

import functools
import html as html_lib
import json
import re
import sys
import webbrowser
from pathlib import Path
from typing import Any, Callable, Optional, Union

import click

from docpub import config
from docpub.client import VERSION, Client
from docpub.errors import (
    EXIT_AUTH, EXIT_LIMIT, EXIT_NOT_FOUND, EXIT_SERVER, EXIT_USAGE, DocpubError, UsageError,
)

PROGRESS_THRESHOLD = 1_000_000  # bytes: uploads over 1 MB show a progress bar on a terminal
TITLE_MAX = 500
_TITLE_RE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)

EXIT_STATUS_HELP = f"""\b
Exit statuses:
  0  success
  {EXIT_USAGE}  usage: bad arguments, or the service rejected the request as invalid
     (validation_error, edit_not_found, edit_ambiguous, no_change, version_conflict, …)
  {EXIT_AUTH}  auth: no API key, or unauthorized / invalid_api_key
  {EXIT_NOT_FOUND}  not found: not_found
  {EXIT_LIMIT}  limit: plan_limit_reached, feature_not_in_plan, document_too_large,
     rate_limited (after retries)
  {EXIT_SERVER}  server: internal_error / other 5xx, connection failure, unexpected answer
  7  verify: the content, statement or signature does not match what was signed
"""


class State:
    def __init__(self) -> None:
        self.url: Optional[str] = None
        self.api_key: Optional[str] = None
        self.json = False
        self.retries = 4
        self.timeout = 60.0
        self._client: Optional[Client] = None

    def client(self) -> Client:
        if self._client is None:
            self._client = Client(self.url, self.api_key, max_retries=self.retries, timeout=self.timeout,
                                  on_retry=self._notice)
        return self._client

    def _notice(self, attempt: int, wait: float, reason: str) -> None:
        click.echo(f"docpub: {reason}; retrying in {wait:.1f} s (retry {attempt} of {self.retries})",
                   err=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _store(name: str) -> Callable:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None and value is not False:
            setattr(ctx.ensure_object(State), name, value)
    return callback


def common_options(f: Callable) -> Callable:
    """--url, --api-key, --json, --retries, --timeout: accepted before or after the command name."""
    options = [
        click.option("--url", metavar="URL", expose_value=False, callback=_store("url"),
                     help="Service address (else DOCPUB_URL, else the `docpub login` config)."),
        click.option("--api-key", metavar="KEY", expose_value=False, callback=_store("api_key"),
                     help="API key (else DOCPUB_API_KEY, else the `docpub login` config)."),
        click.option("--json", "json_output", is_flag=True, default=False, expose_value=False,
                     callback=_store("json"), help="Machine output: the API's JSON on stdout."),
        click.option("--retries", type=click.IntRange(0, 20), default=None, expose_value=False,
                     callback=_store("retries"), help="Retries on 429, 5xx and connection errors [4]."),
        click.option("--timeout", type=click.FloatRange(1, 3600), default=None, expose_value=False,
                     callback=_store("timeout"), help="Seconds per HTTP request [60]."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def state() -> State:
    return click.get_current_context().ensure_object(State)


def handled(f: Callable) -> Callable:
    """Turn client errors into one line on stderr (+ the error JSON with --json) and an exit status."""
    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except DocpubError as exc:
            fail(exc)
    return wrapper


def fail(exc: DocpubError) -> None:
    """With --json the error is the JSON on stdout only (one place to read); else one line on stderr."""
    if state().json:
        emit_json(exc.to_dict())
    else:
        message = " ".join(f"{exc.code}: {exc.message}".split())
        click.echo(f"docpub: error: {message}", err=True)
        for line in finding_lines(exc.details.get("findings")):
            click.echo(line, err=True)
    raise click.exceptions.Exit(exc.exit_code)


def finding_lines(findings: Any) -> list[str]:
    """A secret_detected refusal's findings, one per line, as editors and compilers show places:
    `  report.md:12:5  aws-access-token  AKIA…WXYZ` (the preview is all the service sends)."""
    if not isinstance(findings, list):
        return []
    lines = []
    for f in findings:
        if isinstance(f, dict):
            where = ":".join(str(part) for part in (f.get("path") or "content", f.get("line"), f.get("column")))
            lines.append(f"  {where}  {f.get('rule')}  {f.get('preview')}")
    if lines:
        lines.append("Remove them and publish again, or pass --allow-secrets to publish anyway.")
    return lines


def command(group: click.Group, name: Optional[str] = None, **kwargs: Any) -> Callable:
    def decorate(f: Callable) -> Callable:
        return group.command(name, **kwargs)(common_options(handled(f)))
    return decorate


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def info(message: str) -> None:
    """Human notes go to stderr so stdout stays clean for `URL=$(docpub …)`."""
    click.echo(message, err=True)


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=EXIT_STATUS_HELP)
@common_options
@click.version_option(VERSION, prog_name="docpub")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Publish HTML documents behind shareable links, from a terminal or CI.

    \b
    Configure with DOCPUB_URL and DOCPUB_API_KEY, --url/--api-key, or `docpub login`.
    """
    ctx.call_on_close(ctx.ensure_object(State).close)


# -- helpers ------------------------------------------------------------------------------------

def extract_title(text: str) -> Optional[str]:
    """The HTML's first <title>, unescaped, whitespace collapsed, at most 500 characters."""
    match = _TITLE_RE.search(text)
    if not match:
        return None
    title = " ".join(html_lib.unescape(match.group(1)).split())
    return title[:TITLE_MAX] or None


BUNDLE_SUFFIXES = {".zip"}
MARKDOWN_SUFFIXES = {".md", ".markdown"}


def extract_markdown_title(text: str) -> Optional[str]:
    """The first ATX heading (`# Title`), as the service would take it; None if there is none
    (the file name is used then)."""
    for line in text.splitlines():
        match = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match and match.group(1).strip():
            return " ".join(match.group(1).replace("`", "").replace("*", "").split())[:TITLE_MAX]
    return None


def read_input(source: str, what: str = "file") -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{source} is a directory, not a {what}", code="usage_error") from None
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}", code="usage_error") from None


def short_time(value: Optional[str]) -> str:
    if not value:
        return "-"
    return value.replace("T", " ")[:16]


def print_rows(columns: list[str], rows: list[list[str]], keep: Optional[list[int]] = None,
               no_wrap: tuple[int, ...] = (0,)) -> None:
    """A table on a terminal (only the ``keep`` columns, ids never wrapped);
    tab-separated lines of every column (no header) when piped."""
    if not stdout_is_terminal():
        for row in rows:
            click.echo("\t".join(" ".join(str(c).split()) for c in row))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    keep = keep if keep is not None else list(range(len(columns)))
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    for index in keep:
        table.add_column(columns[index], overflow="fold", no_wrap=index in no_wrap)
    for row in rows:
        table.add_row(*[str(row[i]) for i in keep])
    Console().print(table)


def document_rows(documents: list[dict]) -> list[list[str]]:
    return [[d["document_id"], d.get("title", ""), str(d.get("version_count", "")),
             short_time(d.get("updated_at")), str(d.get("open_feedback_count", 0)), d.get("share_url", "")]
            for d in documents]


DOC_COLUMNS = ["ID", "Title", "Ver.", "Updated (UTC)", "Feedback", "Link"]


def print_documents(documents: list[dict]) -> None:
    """Piped: one tab-separated line per document (every column, for scripts). On a
    terminal: one block per document, whatever the width: the title, then the share
    link and the id each on a line of their own, never cut or wrapped by us (they
    are what people copy), then version, update time and open feedback."""
    rows = document_rows(documents)
    if not stdout_is_terminal():
        print_rows(DOC_COLUMNS, rows)
        return
    for index, (doc_id, title, versions, updated, feedback, link) in enumerate(rows):
        if index:
            click.echo("")
        click.echo(click.style(" ".join(title.split()) or "(untitled)", bold=True))
        click.echo(f"  {link}")
        facts = [doc_id, f"v{versions}", f"updated {updated} UTC"]
        if feedback not in ("", "0"):
            facts.append(f"{feedback} open feedback")
        click.echo("  " + " · ".join(facts))


class UploadProgress:
    """A rich progress bar on stderr for large uploads; nothing when stderr is not a terminal."""

    def __init__(self, size: int, label: str):
        from rich.console import Console
        from rich.progress import (
            BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn,
        )

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task(label, total=size)

    def __enter__(self) -> "UploadProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def __call__(self, sent: int, total: int) -> None:
        self.progress.update(self.task, completed=sent, total=total)


# -- commands -----------------------------------------------------------------------------------

@command(cli)
@click.argument("file", metavar="FILE|FOLDER|-")
@click.option("--title", help="Title (new document: default the HTML <title>, then the file name; "
                              "new version: default the document's current title).")
@click.option("--document", "document_id", metavar="ID", help="Append a version to this document.")
@click.option("--note", help="Version note (up to 2,000 characters).")
@click.option("--description", help="Document description (up to 5,000 characters).")
@click.option("--idempotency-key", metavar="KEY",
              help="Idempotency-Key to send (default: a new random key per run, kept across retries).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: on for uploads over 1 MB when stderr is a terminal).")
@click.option("--allow-secrets", is_flag=True,
              help="Store it even if the secret scan finds credentials (the activity log records it).")
def publish(file: str, title: Optional[str], document_id: Optional[str], note: Optional[str],
            description: Optional[str], idempotency_key: Optional[str], progress: Optional[bool],
            allow_secrets: bool) -> None:
    """Publish FILE (or - for stdin) as a new document, or as a new version with --document.

    FILE is HTML, Markdown (.md/.markdown: rendered by the service into a typeset page),
    or a .zip; a FOLDER holding index.html or index.md is published with its files
    (images, stylesheets...), which the page references by relative path. Large files
    go through an upload on their own.

    Prints only the share URL on stdout, so `URL=$(docpub publish report.html)` works.
    """
    if file != "-" and (Path(file).is_dir() or Path(file).suffix.lower() in BUNDLE_SUFFIXES):
        client = state().client()
        show = progress if progress is not None else sys.stderr.isatty()
        kwargs = dict(document_id=document_id, note=note, description=description, allow_secrets=allow_secrets,
                      idempotency_key=idempotency_key)
        if show:
            with UploadProgress(0, "Uploading") as bar:
                result = client.publish_path(file, title, progress=bar, **kwargs)
        else:
            result = client.publish_path(file, title, **kwargs)
        _print_published(result)
        return
    markdown = file != "-" and Path(file).suffix.lower() in MARKDOWN_SUFFIXES
    data = read_input(file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file} is not UTF-8 text (invalid byte at offset {exc.start})",
                         code="usage_error") from None
    client = state().client()
    if title is None and document_id:
        title = client.get(document_id)["title"]  # a new version keeps the title unless --title
    if title is None:
        found = extract_markdown_title(text) if markdown else extract_title(text)
        title = found or (Path(file).name if file != "-" else "Untitled")
    show = progress if progress is not None else (len(data) > PROGRESS_THRESHOLD and sys.stderr.isatty())
    kwargs = dict(document_id=document_id, note=note, description=description, allow_secrets=allow_secrets,
                  idempotency_key=idempotency_key, format="markdown" if markdown else None)
    if show:
        from docpub.client import check_html_size

        check_html_size(data)  # fail before drawing a bar
        with UploadProgress(len(data), "Uploading") as bar:
            result = client.publish(text, title, progress=bar, **kwargs)
    else:
        result = client.publish(text, title, **kwargs)
    _print_published(result)


def _print_published(result: dict) -> None:
    if state().json:
        emit_json(result)
    else:
        click.echo(result["share_url"])
        if stdout_is_terminal():
            info(f"document {result['document_id']}, version {result['version_number']}")


@command(cli)
@click.argument("document_id", metavar="ID")
@click.option("--version", "version", metavar="N|VERSION_ID",
              help="Version number N (as `docpub get --version`) or a version id (default: the latest).")
@click.option("-o", "--output", metavar="PATH", help="Where to write (default: the document's file name, here; "
                                                      "- for stdout).")
def download(document_id: str, version: Optional[str], output: Optional[str]) -> None:
    """Download a document as a file: its HTML, its Markdown source, or a .zip of a page with files.

    Prints the path written (or, with --json, {"path", "size_bytes"}).
    """
    wanted: Union[int, str, None] = int(version) if version and version.isdigit() else version
    filename, data = state().client().download(document_id, wanted)
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    target = Path(output) if output else Path(filename)
    if target.is_dir():
        target = target / filename
    try:
        target.write_bytes(data)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror}", code="usage_error") from None
    if state().json:
        emit_json({"path": str(target), "size_bytes": len(data)})
    else:
        click.echo(str(target))


@command(cli, "export")
@click.option("-o", "--output", metavar="PATH", default="docpub-export.zip", show_default=True,
              help="Where to write the zip.")
@click.option("--wait", "wait_seconds", type=click.FloatRange(0), default=900, show_default=True, metavar="SECONDS",
              help="Seconds to wait for it to be built (--timeout is per HTTP request, as everywhere).")
def export(output: str, wait_seconds: float) -> None:
    """Export the whole workspace (owner) as one zip: every document's versions as published with
    their files, feedback with replies, reviews, the activity log and provenance.

    Starts the export, waits while the server builds it, then downloads it. Prints the path
    written (or, with --json, {"path", "size_bytes", "export_id"}).
    """
    client = state().client()
    export_id = client.start_export()
    info(f"export {export_id} started; waiting for it to be built…")
    status = client.wait_for_export(export_id, timeout=wait_seconds)
    if status["status"] != "ready":
        raise DocpubError(f"export {export_id} is {status['status']}" + (
            " (still running: follow it with GET /api/v1/exports/" + export_id + ")"
            if status["status"] == "running" else "; start a new one"), code="export_" + status["status"])
    try:
        size = client.download_export(status["download_url"], output)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror}", code="usage_error") from None
    if state().json:
        emit_json({"path": output, "size_bytes": size, "export_id": export_id})
    else:
        click.echo(output)


@command(cli)
@click.argument("target", metavar="SHARE_URL|FILE")
@click.option("--provenance", "provenance_path", metavar="PROVENANCE.json",
              help="The provenance route's answer (with FILE: the content as downloaded, or a bundle's .zip).")
@click.option("--keys", "keys_path", metavar="KEYS.json",
              help="The signing keys (JWKS) to trust; without it they are fetched from the service.")
def verify(target: str, provenance_path: Optional[str], keys_path: Optional[str]) -> None:
    """Check that a version is what was signed: its content, its statement, its signature.

    \b
    docpub verify https://docs.example.com/d/AbC…[?v=N]      fetches content, statement and keys
    docpub verify FILE --provenance PROVENANCE.json [--keys KEYS.json]   offline with --keys

    Exit 0 when valid, 7 when not (each failed part on stderr: content, statement, signature).
    """
    from docpub import verify as rules

    share = rules.share_address(target) if provenance_path is None else None
    if provenance_path is None and share is None:
        raise UsageError("give a share URL, or FILE with --provenance PROVENANCE.json")
    keys = _read_json(keys_path, "--keys") if keys_path else None
    if share is not None:
        data = _fetch(share.download, "the content")
        answer = json.loads(_fetch(share.provenance, "the signed statement"))
        name = "download.zip" if data[:4] == b"PK\x03\x04" else ""
        keys = keys if keys is not None else json.loads(_fetch(share.keys, "the signing keys"))
    else:
        data = read_input(target)
        answer = _read_json(provenance_path, "--provenance")
        name = target
        if keys is None:
            base = config.resolve(state().url, None).url.rstrip("/")
            keys = json.loads(_fetch(base + "/.well-known/docpub-signing-keys.json", "the signing keys"))
    try:
        content, files = rules.content_of(data, name)
    except ValueError as exc:
        raise UsageError(f"{target}: {exc}") from None
    result = rules.verify(answer, keys, content, files)
    stated = answer.get("statement") if isinstance(answer, dict) else None
    if state().json:
        emit_json({"valid": result.valid, "failures": [{"part": p, "message": m} for p, m in result.failures],
                   "statement": stated})
    elif result.valid:
        assert isinstance(stated, dict)
        who = stated["publisher"]
        click.echo(f"valid: version {stated['version_number']} of document {stated['document_id']}, "
                   f"published by {who['kind']} {who['name']} at {stated['published_at']}, "
                   f"signed with key {answer['signature']['kid']}")
    else:
        for part, message in result.failures:
            click.echo(f"docpub: invalid {part}: {message}", err=True)
    if not result.valid:
        raise click.exceptions.Exit(rules.EXIT_INVALID)


def _read_json(path: str, option: str) -> Any:
    try:
        return json.loads(read_input(path))
    except ValueError:
        raise UsageError(f"{option} {path}: not JSON") from None


def _fetch(url: str, what: str) -> bytes:
    """A public GET (share links and keys need no API key), redirects followed (a large download)."""
    import httpx

    from docpub.errors import ConnectionFailed, error_from_response

    try:
        response = httpx.get(url, follow_redirects=True, timeout=state().timeout,
                             headers={"Accept": "*/*", "User-Agent": f"docpub/{VERSION}"})
    except httpx.HTTPError as exc:
        raise ConnectionFailed(f"cannot fetch {what} from {url}: {exc}") from None
    if response.status_code != 200:
        try:
            body = response.json()
        except ValueError:
            body = None
        error = error_from_response(response.status_code, body)
        why = {404: "no such link, or no such version of it"}.get(response.status_code, error.message)
        if response.status_code in (401, 403):  # a protected link: its files verify offline
            why += (" (verify a protected version from its files: docpub download ID --version N, the provenance "
                    "route's answer, then docpub verify FILE --provenance PROVENANCE.json)")
        error.message = f"cannot fetch {what} from {url}: {why}"
        error.args = (error.message,)
        raise error
    return response.content


@command(cli)
@click.argument("document_id", metavar="ID")
@click.option("--replace", "replacements", nargs=2, multiple=True, metavar="OLD NEW",
              help="Replace OLD with NEW (literal, case-sensitive). Repeat for several edits, applied in order.")
@click.option("--replace-all", is_flag=True, help="Each --replace replaces every occurrence (else exactly one).")
@click.option("--from-json", "from_json", metavar="FILE|-",
              help='Edits as JSON: a list of {"old_string","new_string","replace_all"?}, '
                   'or {"edits": [...], "note"?}. Applied before any --replace.')
@click.option("--note", help="Version note.")
@click.option("--allow-secrets", is_flag=True,
              help="Store it even if the secret scan finds credentials (the activity log records it).")
def edit(document_id: str, replacements: tuple, replace_all: bool, from_json: Optional[str],
         note: Optional[str], allow_secrets: bool) -> None:
    """Edit a document by find-and-replace; stores one new version. Prints the share URL."""
    edits: list[dict] = []
    if from_json:
        try:
            loaded = json.loads(read_input(from_json).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"--from-json: not valid JSON ({exc})", code="usage_error") from None
        if isinstance(loaded, dict):
            if note is None and isinstance(loaded.get("note"), str):
                note = loaded["note"]
            loaded = loaded.get("edits")
        if not isinstance(loaded, list) or not all(isinstance(e, dict) for e in loaded):
            raise UsageError('--from-json: expected a list of edits or {"edits": [...]}', code="usage_error")
        edits.extend(loaded)
    for old, new in replacements:
        item: dict[str, Any] = {"old_string": old, "new_string": new}
        if replace_all:
            item["replace_all"] = True
        edits.append(item)
    if not edits:
        raise UsageError("nothing to do: give --replace OLD NEW or --from-json FILE", code="usage_error")
    result = state().client().edit(document_id, edits, note=note, allow_secrets=allow_secrets)
    if state().json:
        emit_json(result)
        return
    summary = result.get("summary") or {}
    click.echo(result["share_url"])
    info(f"version {result['version_number']}: {summary.get('edits_applied', len(edits))} edit(s), "
         f"{summary.get('replacements', '?')} replacement(s), "
         f"{summary.get('size_bytes_before', 0):,} -> {summary.get('size_bytes_after', 0):,} bytes")


@command(cli)
@click.argument("document_id", metavar="ID")
@click.option("--html", "as_html", is_flag=True, help="Print the HTML itself (latest or --version).")
@click.option("--version", "version", type=click.IntRange(1), metavar="N", help="Version number N.")
def get(document_id: str, as_html: bool, version: Optional[int]) -> None:
    """Show a document and its versions, or print its HTML with --html."""
    doc = state().client().get(document_id, include_html=as_html, version=version)
    if state().json:
        emit_json(doc)
        return
    if as_html:
        sys.stdout.write(doc.get("html", ""))
        sys.stdout.flush()
        return
    versions = doc.get("versions", [])
    if version is not None:
        versions = [v for v in versions if v.get("number") == version]
    lines = [
        ("Title", doc.get("title", "")), ("ID", doc.get("document_id", "")), ("Link", doc.get("share_url", "")),
        ("Description", doc.get("description") or "-"), ("Created", short_time(doc.get("created_at"))),
        ("Updated", short_time(doc.get("updated_at"))), ("Versions", str(doc.get("version_count", ""))),
        ("Open feedback", str(doc.get("open_feedback_count", 0))),
        ("Passphrase", "yes" if doc.get("passphrase_protected") else "no"),
    ]
    for label, value in lines:
        click.echo(f"{label + ':':<15}{value}")
    click.echo("")
    print_rows(["#", "Version ID", "Created (UTC)", "Bytes", "Note"],
               [[str(v.get("number")), v.get("version_id", ""), short_time(v.get("created_at")),
                 f"{v.get('size_bytes', 0):,}", v.get("note") or ""] for v in versions], no_wrap=(1, 2))


@command(cli, name="list")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="Documents per page (1-100) [20].")
@click.option("--cursor", help="Continue from a previous page's next_cursor.")
@click.option("--all", "all_pages", is_flag=True, help="Follow cursors and list every document.")
def list_(limit: Optional[int], cursor: Optional[str], all_pages: bool) -> None:
    """List documents, most recently updated first."""
    _listing(None, limit, cursor, all_pages)


@command(cli)
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="Documents per page (1-100) [20].")
@click.option("--all", "all_pages", is_flag=True, help="Follow cursors and list every match.")
def find(query: str, limit: Optional[int], all_pages: bool) -> None:
    """Find documents whose title or description contains QUERY (case-insensitive)."""
    _listing(query, limit, None, all_pages)


def _listing(query: Optional[str], limit: Optional[int], cursor: Optional[str], all_pages: bool) -> None:
    client = state().client()
    if all_pages:
        page = {"documents": list(client.iter_documents(query=query, page_size=limit or 100)),
                "next_cursor": None}
    else:
        page = client.list_documents(limit=limit, cursor=cursor, query=query)
    if state().json:
        emit_json(page)
        return
    documents = page.get("documents", [])
    if not documents:
        info("no documents" if query is None else f"no documents match {query!r}")
        return
    print_documents(documents)
    if page.get("next_cursor"):
        info(f"more: docpub list --cursor {page['next_cursor']}" if query is None
             else "more: use --all to list every match")


@command(cli)
@click.argument("document_id", metavar="ID")
@click.option("--title", help="New title.")
@click.option("--description", help="New description (\"\" clears it).")
def rename(document_id: str, title: Optional[str], description: Optional[str]) -> None:
    """Change a document's title and/or description (adds no version)."""
    if title is None and description is None:
        raise UsageError("give --title, --description or both", code="usage_error")
    doc = state().client().update(document_id, title=title, description=description)
    if state().json:
        emit_json(doc)
    else:
        click.echo(doc.get("title", ""))


@command(cli)
@click.argument("document_id", metavar="ID")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete(document_id: str, yes: bool) -> None:
    """Delete a document, all its versions, its feedback and its share link."""
    client = state().client()
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("refusing to delete without --yes (no terminal to confirm on)", code="usage_error")
        doc = client.get(document_id)
        if not click.confirm(f"Delete {doc.get('title')!r} ({doc.get('version_count')} versions) "
                             "and its share link?", default=False, err=True):
            raise UsageError("not deleted", code="aborted")
    client.delete(document_id)
    if state().json:
        emit_json({"document_id": document_id, "deleted": True})
    else:
        info(f"deleted {document_id}")


@command(cli, name="open")
@click.argument("document_id", metavar="ID")
def open_(document_id: str) -> None:
    """Open a document's share link in the browser (and print it)."""
    doc = state().client().get(document_id)
    url = doc["share_url"]
    opened = False
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if state().json:
        emit_json({"document_id": document_id, "share_url": url, "opened": opened})
    else:
        click.echo(url)
        if not opened:
            info("no browser found; open the link above")


@cli.group()
def feedback() -> None:
    """Viewer feedback on your documents."""


@command(feedback, name="list")
@click.argument("document_id", metavar="[ID]", required=False)
@click.option("--status", type=click.Choice(["open", "resolved", "all"]), default=None,
              help="Which feedback [open].")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="Items per page (1-100).")
@click.option("--cursor", help="Continue from a previous page's next_cursor.")
def feedback_list(document_id: Optional[str], status: Optional[str], limit: Optional[int],
                  cursor: Optional[str]) -> None:
    """List feedback, newest first (all documents, or document ID)."""
    page = state().client().list_feedback(document_id=document_id, status=status, limit=limit, cursor=cursor)
    if state().json:
        emit_json(page)
        return
    items = page.get("feedback", [])
    if not items:
        info("no feedback")
        return
    print_rows(["Feedback ID", "Status", "Document", "Created (UTC)", "From", "Message"],
               [[f.get("feedback_id", ""), f.get("status", ""), f.get("document_id", ""),
                 short_time(f.get("created_at")), f.get("name") or "-", f.get("message", "")] for f in items],
               keep=[0, 1, 3, 4, 5], no_wrap=(0, 2))
    if page.get("next_cursor"):
        info(f"more: docpub feedback list --cursor {page['next_cursor']}")


@command(feedback, name="resolve")
@click.argument("feedback_id", metavar="FID")
@click.option("--reopen", is_flag=True, help="Reopen resolved feedback instead.")
def feedback_resolve(feedback_id: str, reopen: bool) -> None:
    """Mark feedback FID resolved (or --reopen it)."""
    item = state().client().resolve_feedback(feedback_id, resolved=not reopen)
    if state().json:
        emit_json(item)
    else:
        click.echo(f"{item.get('feedback_id', feedback_id)}: {item.get('status', 'open' if reopen else 'resolved')}")


@command(cli)
def whoami() -> None:
    """Show the workspace, plan and usage of the configured key (never the key itself)."""
    client = state().client()
    me = client.me()
    if state().json:
        emit_json(me)
        return
    ws = me.get("workspace", {})
    ent = ws.get("entitlements") or {}
    cap = ent.get("max_documents")
    settings = config.resolve(state().url, state().api_key)
    click.echo(f"{'Workspace:':<12}{ws.get('name', '')} ({ws.get('id', '')})")
    click.echo(f"{'Plan:':<12}{ws.get('plan', '')}")
    click.echo(f"{'Documents:':<12}{ws.get('document_count', 0)} of {cap if cap is not None else 'unlimited'}")
    click.echo(f"{'Service:':<12}{client.url}")
    click.echo(f"{'Key from:':<12}{settings.key_source or '-'}")


@command(cli)
def login() -> None:
    """Check an API key and save it with the URL to the config file (mode 0600).

    Takes --url and --api-key; without --api-key the key is read from a hidden prompt,
    or from the first line of stdin when stdin is not a terminal.
    """
    st = state()
    url = st.url or config.resolve().url
    key = st.api_key
    if not key:
        if sys.stdin.isatty():
            key = click.prompt("API key", hide_input=True, err=True)
        else:
            key = sys.stdin.readline()
    key = (key or "").strip()
    if not key:
        raise UsageError("no API key given", code="usage_error")
    with Client(url, key, max_retries=st.retries, timeout=st.timeout, on_retry=st._notice) as client:
        me = client.me()
    path = config.write_config(client.url, key)
    ws = me.get("workspace", {})
    if st.json:
        emit_json({"url": client.url, "config_path": str(path), "workspace": ws})
    else:
        info(f"logged in to {client.url} as workspace {ws.get('name', '')!r} ({ws.get('plan', '')}); "
             f"saved to {path}")


@command(cli)
def logout() -> None:
    """Remove the config file written by `docpub login`."""
    path = config.config_path()
    removed = config.remove_config(path)
    if state().json:
        emit_json({"config_path": str(path), "removed": removed})
    else:
        info(f"removed {path}" if removed else f"no config file at {path}")


@cli.command(name="mcp")
@common_options
def mcp_command() -> None:
    """Serve Docpub's MCP tools on stdin/stdout (for MCP clients that launch a command).

    \b
    Lists the tools even when the service is down; each tool call is forwarded to
    {DOCPUB_URL}/mcp with the API key. Needs `pip install 'docpub[mcp]'`.
    Same as the `docpub-mcp` command.
    """
    from docpub import mcp_stdio

    raise click.exceptions.Exit(mcp_stdio.run(state().url, state().api_key))


def main(argv: Optional[list[str]] = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="docpub", standalone_mode=False)
    except click.ClickException as exc:  # bad usage: click prints "Usage: …" and the problem
        exc.show()
        code = EXIT_USAGE
    except click.exceptions.Abort:
        click.echo("docpub: aborted", err=True)
        code = 130
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["cli", "main", "extract_title", "EXIT_SERVER"]
