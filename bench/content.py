"""Content (issue 26): a 30 MiB bundle published, then published again with one file
changed (time and bytes written, the second against the first); and Markdown
rendering of a 1 MiB source against markdown-it-py alone, in the same run; and the worst
Markdown sources near the 4 MiB limit (CPU time to render or refuse each, against
markdown-it-py alone on the same source).

    .venv/bin/python -m bench.content [--repeat N] [--storage sqlite|aws]
    .venv/bin/python -m bench.content --only worst [--size BYTES] [--families dense,headings,...]

Publishes go through the service (DocumentService.publish) on the embedded store
(a temporary folder) or on moto in-process; "bytes written" counts what the blob
store was asked to store (pages, sources and bundle files). The Markdown floor is
`MarkdownIt("gfm-like").render(source)`: the parser alone, no plugins, no
highlighting, no page template.
"""
from __future__ import annotations

import argparse
import base64
import os
import statistics
import tempfile
import time

from bench._common import mib, ms, print_header, print_table, ratio

FILES = 30
FILE_BYTES = 1024 * 1024


def _count_writes(blobs) -> dict:
    counter = {"bytes": 0, "objects": 0}
    for name in ("put_html", "put_file"):
        original = getattr(blobs, name)

        def counted(key, data, *args, _original=original, **kwargs):
            counter["bytes"] += len(data)
            counter["objects"] += 1
            return _original(key, data, *args, **kwargs)

        setattr(blobs, name, counted)
    return counter


def bundle_bench(repeat: int, storage: str) -> list[list[str]]:
    os.environ["DOCPUB_STORAGE"] = storage
    os.environ.setdefault("DOCPUB_DATA_DIR", tempfile.mkdtemp(prefix="docpub-bench-content-"))
    if storage == "aws":
        from bench._common import fake_aws_env

        fake_aws_env()
        import moto

        mock = moto.mock_aws()
        mock.start()
        from chalicelib.adapters.aws.schema import ensure_storage

        ensure_storage()
    from chalicelib.models import PublishRequest
    from chalicelib.wiring import new_context
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.workspaces import WorkspaceService

    ctx = new_context()
    ctx.backoff = lambda attempt: None
    documents, workspaces = DocumentService(ctx), WorkspaceService(ctx)
    counter = _count_writes(ctx.blobs)
    firsts, seconds, first_bytes, second_bytes = [], [], [], []
    for _ in range(repeat):
        _ws, key = workspaces.create_workspace("Bench", "pro")
        from chalicelib.services.auth import credentials_from_headers

        who = credentials_from_headers({"x-api-key": key.api_key})
        files = [{"path": f"data/part{i:02d}.bin", "content": base64.b64encode(os.urandom(FILE_BYTES)).decode(),
                  "encoding": "base64"} for i in range(FILES)]
        request = PublishRequest.model_validate({"title": "Big bundle", "html": "<h1>Bundle</h1>", "files": files})
        counter.update(bytes=0, objects=0)
        start = time.perf_counter()
        published = documents.publish(who, request).response
        firsts.append(time.perf_counter() - start)
        first_bytes.append(counter["bytes"])
        files[7] = {**files[7], "content": base64.b64encode(os.urandom(FILE_BYTES)).decode()}
        again = PublishRequest.model_validate({"title": "Big bundle", "html": "<h1>Bundle</h1>", "files": files,
                                               "document_id": published.document_id})
        counter.update(bytes=0, objects=0)
        start = time.perf_counter()
        documents.publish(who, again)
        seconds.append(time.perf_counter() - start)
        second_bytes.append(counter["bytes"])
    first, second = statistics.median(firsts), statistics.median(seconds)
    return [[storage, f"{FILES} x {mib(FILE_BYTES)}", ms(first), mib(statistics.median(first_bytes)),
             ms(second), mib(statistics.median(second_bytes)), ratio(second, first),
             ratio(statistics.median(second_bytes), statistics.median(first_bytes))]]


def markdown_source(size: int = 1024 * 1024) -> str:
    block = ("## Section heading\n\nA paragraph with *emphasis*, **strong** text, `inline code`, a "
             "[link](https://example.com) and an autolink https://example.org/path.\n\n"
             "- [x] done item\n- [ ] open item\n\n| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n\n"
             "```python\ndef total(rows):\n    return sum(r.amount for r in rows)\n```\n\n")
    return (block * (size // len(block) + 1))[:size]


def markdown_bench(repeat: int) -> list[list[str]]:
    from markdown_it import MarkdownIt

    from chalicelib.services.content import render_markdown as render

    source = markdown_source()
    floor_parser = MarkdownIt("gfm-like")
    floor_parser.render("warm up")
    render("# warm up")
    floors, ours = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        floor_parser.render(source)
        floors.append(time.perf_counter() - start)
        start = time.perf_counter()
        page = render(source, "Bench", None).html  # rendered whole (publish stops past 4 MiB)
        ours.append(time.perf_counter() - start)
    floor, mine = statistics.median(floors), statistics.median(ours)
    return [[mib(len(source.encode())), ms(floor), ms(mine), ratio(mine, floor), mib(len(page.encode()))]]


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


_PROSE = "A sentence of prose with a [link](https://example.com/path) and some *emphasis* in it. " * 8 + "\n\n"
_CODE = "".join(f"```{lang}\n" + "def f(x):\n    return {'a': [x, 2.0, \"s\"]}  # c\n" * 4 + "```\n\n"
                for lang in ["python", "js", "c", "rust", "html", "sql", "bash", "yaml"])
# Sources a stranger could send, each filled to the size asked: what each costs is the point.
WORST = {
    "dense": lambda n: markdown_source(n),  # headings, lists, a table, fenced code: the finding
    "prose": lambda n: _fill(_PROSE, n),
    "headings": lambda n: _fill("# a\n", n),  # one repeated heading (its anchors were quadratic)
    "tasks": lambda n: _fill("- [x] a\n", n),  # one list of task items (quadratic too)
    "table": lambda n: "| a | b |\n|---|---|\n" + _fill("| x | y |\n", n - 20),  # one block of many rows
    "code": lambda n: _fill(_CODE, n),  # fenced code in eight languages (Pygments' budget)
    "references": lambda n: _fill("[a]: b\n", n),  # renders to nothing: every byte parsed, accepted
    "emphasis": lambda n: _fill("*a ", n),  # one paragraph: one inline token
}


def worst_bench(size: int, families: list[str]) -> list[list[str]]:
    """CPU time (process_time: what a Lambda is billed and limited by) of markdown-it-py alone
    and of Docpub's publish path (render, then the size rule) on each source, once each."""
    from markdown_it import MarkdownIt

    from chalicelib.errors import DocpubError
    from chalicelib.services.content import markdown_content

    floor_parser = MarkdownIt("gfm-like")
    floor_parser.render("warm up")
    markdown_content(b"# warm up", None)
    rows = []
    for family in families:
        source = WORST[family](size)
        start = time.process_time()
        floor_parser.render(source)
        floor = time.process_time() - start
        start = time.process_time()
        try:
            outcome = f"page {mib(len(markdown_content(source.encode(), 'Bench').page))}"
        except DocpubError as exc:
            outcome = f"{exc.status} {exc.code}"
        mine = time.process_time() - start
        rows.append([family, mib(len(source.encode())), f"{floor:.2f} s", f"{mine:.2f} s", ratio(mine, floor),
                     outcome])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--storage", choices=["sqlite", "aws"], default="sqlite")
    parser.add_argument("--only", choices=["bundle", "markdown", "worst"])
    parser.add_argument("--size", type=int, default=4 * 1024 * 1024, help="worst: source size in bytes")
    parser.add_argument("--families", default=",".join(WORST), help="worst: which sources, comma-separated")
    args = parser.parse_args()
    print_header("Content: bundle re-publish and Markdown rendering (issue 26)")
    if args.only == "worst":
        print_table(["source", "size", "markdown-it-py alone (floor)", "Docpub (render or refuse)", "ratio",
                     "outcome"], worst_bench(args.size, args.families.split(",")))
        return
    if args.only != "markdown":
        print_table(["store", "bundle", "first publish", "bytes written", "one file changed", "bytes written",
                     "time ratio", "bytes ratio"], bundle_bench(args.repeat, args.storage))
    if args.only != "bundle":
        print_table(["Markdown source", "markdown-it-py alone (floor)", "Docpub page", "ratio", "page size"],
                    markdown_bench(args.repeat))


if __name__ == "__main__":
    main()
