"""Exit statuses, one-line errors, the client-side size check, idempotent retries, 429 backoff."""
from __future__ import annotations

import json
import time
import uuid

import pytest

pytestmark = pytest.mark.e2e

BIG_PREFIX = "<p>"


def doc_count(api) -> int:
    return api.get("/api/v1/me").json()["workspace"]["document_count"]


# -- exit statuses --------------------------------------------------------------------------------

def test_exit_status_per_class(cli, stack, tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<p>x</p>")
    no_key = cli.with_key(None)("publish", str(page))
    assert no_key.returncode == 3
    assert no_key.stderr.startswith("docpub: error: unauthorized: no API key")
    bad_key = cli.with_key("dpk_" + "z" * 43)("list")
    assert (bad_key.returncode, bad_key.stderr.split(":")[2].strip()) == (3, "invalid_api_key")
    assert cli("get", str(uuid.uuid4())).returncode == 4
    assert cli("publish").returncode == 2                       # click usage error
    assert cli("publish", str(tmp_path / "missing.html")).returncode == 2
    assert cli("list", "--limit", "500").returncode == 2
    too_long = cli("publish", str(page), "--title", "t" * 501, "--json")
    assert too_long.returncode == 2
    assert json.loads(too_long.stdout)["error"]["code"] == "validation_error"
    unreachable = cli("whoami", "--retries", "0", "--url", f"http://127.0.0.1:{_closed_port()}")
    assert unreachable.returncode == 6
    assert unreachable.stderr.startswith("docpub: error: connection_error: cannot reach http://127.0.0.1:")


def _closed_port() -> int:
    from conftest import free_port

    return free_port()


def test_free_plan_cap_is_a_limit_error(stack, tmp_path):
    from conftest import Cli

    key = stack.admin("create-workspace", "--name", "Free", "--plan", "free")["api_key"]
    cli = Cli(tmp_path, stack.base_url, key)
    page = tmp_path / "p.html"
    page.write_text("<p>x</p>")
    with stack.client(key) as http:
        ids = [http.post("/api/v1/publish", json={"title": "Free", "html": "<p>x</p>"}).json()["document_id"]
               for _ in range(5)]
    sixth = cli("publish", str(page), "--json")
    assert sixth.returncode == 5
    assert json.loads(sixth.stdout)["error"] == {
        "code": "plan_limit_reached", "message": json.loads(sixth.stdout)["error"]["message"],
        "details": {"limit": 5, "current": 5}}
    assert sixth.stderr == ""  # --json: the error is on stdout only
    # Appending a version to an existing document still works on a full free plan.
    assert cli.json("publish", str(page), "--document", ids[0])["version_number"] == 2


def test_size_is_checked_before_upload_with_the_servers_message(cli, api, tmp_path):
    from chalicelib.domain.limits import encoded_html
    from chalicelib.errors import DocumentTooLarge

    html = BIG_PREFIX + "é" * 2_097_151 + "x"  # 4,194,306 bytes of UTF-8, under 4.2 million characters
    assert len(html.encode()) == 4_194_306
    with pytest.raises(DocumentTooLarge) as server_side:
        encoded_html(html)
    path = tmp_path / "big.html"
    path.write_text(html, encoding="utf-8")
    before = doc_count(api)
    result = cli("publish", str(path), "--json")
    assert result.returncode == 5
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "document_too_large"
    assert error["message"] == server_side.value.message
    assert error["details"] == {"limit_bytes": 4_194_304, "size_bytes": 4_194_306}
    assert result.stderr == ""  # --json: the error is on stdout only
    assert doc_count(api) == before


def test_exactly_4_mib_is_accepted(cli, api, tmp_path):
    html = "<p>" + "a" * (4_194_304 - 7) + "</p>"
    assert len(html.encode()) == 4_194_304
    path = tmp_path / "limit.html"
    path.write_text(html)
    doc = cli.json("publish", str(path), "--title", "Exactly 4 MiB")
    got = api.get(f"/api/v1/documents/{doc['document_id']}").json()
    assert got["versions"][0]["size_bytes"] == 4_194_304


# -- retries --------------------------------------------------------------------------------------

def test_publish_retried_after_the_answer_was_lost_makes_one_document(cli, api, faulty_proxy, tmp_path):
    proxy = faulty_proxy(["drop_after_forward"])
    page = tmp_path / "p.html"
    page.write_text("<title>Once</title><p>only once</p>")
    before = doc_count(api)
    result = cli.with_key(cli.key)("publish", str(page), "--json", env={"DOCPUB_URL": proxy.url})
    assert result.returncode == 0, result.stderr
    assert "connection lost" in result.stderr and "retrying" in result.stderr
    out = json.loads(result.stdout)
    keys = proxy.header_values("Idempotency-Key")
    assert len(keys) == 2 and keys[0] == keys[1]            # same key on the retry
    assert doc_count(api) == before + 1                      # one document, not two
    doc = api.get(f"/api/v1/documents/{out['document_id']}").json()
    assert [v["version_id"] for v in doc["versions"]] == [out["version_id"]]

    # Appending a version: the lost answer and the retry still make exactly one version.
    proxy = faulty_proxy(["drop_after_forward"])
    result = cli("publish", str(page), "--document", out["document_id"], "--json",
                 env={"DOCPUB_URL": proxy.url})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["version_number"] == 2
    assert api.get(f"/api/v1/documents/{out['document_id']}").json()["version_count"] == 2


def test_two_runs_with_the_same_idempotency_key_make_one_version(cli, api, tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<p>ci</p>")
    key = f"ci-run-{uuid.uuid4()}"
    first = cli.json("publish", str(page), "--idempotency-key", key)
    second = cli.json("publish", str(page), "--idempotency-key", key)
    assert first == second
    assert api.get(f"/api/v1/documents/{first['document_id']}").json()["version_count"] == 1


def test_edit_is_not_replayed_after_the_request_may_have_been_applied(cli, api, faulty_proxy, tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<p>one</p>")
    doc = cli.json("publish", str(page))
    proxy = faulty_proxy(["drop_after_forward"])
    result = cli("edit", doc["document_id"], "--replace", "one", "two", env={"DOCPUB_URL": proxy.url})
    assert result.returncode == 6
    assert "may or may not have been applied" in result.stderr
    assert len(proxy.requests) == 1
    assert api.get(f"/api/v1/documents/{doc['document_id']}").json()["version_count"] == 2


def test_5xx_is_retried_with_backoff(cli, faulty_proxy, tmp_path):
    proxy = faulty_proxy(["503", "503"])
    page = tmp_path / "p.html"
    page.write_text("<p>after two 503s</p>")
    result = cli("publish", str(page), "--json", env={"DOCPUB_URL": proxy.url})
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("server error (503); retrying") == 2
    assert len(proxy.requests) == 3
    proxy = faulty_proxy(["503"] * 3)
    failed = cli("list", "--retries", "2", env={"DOCPUB_URL": proxy.url})
    assert failed.returncode == 6
    assert failed.stderr.endswith("docpub: error: service_unavailable: injected by the test proxy\n")


@pytest.fixture(scope="module")
def limited_stack(tmp_path_factory):
    """A second local stack whose write rate limit is 2 per 4 s."""
    from tests.stack import LocalStack

    running = LocalStack(tmp_path_factory.mktemp("limited") / "data",
                         env={"DOCPUB_WRITE_RATE_LIMIT": "2", "DOCPUB_WRITE_RATE_WINDOW": "4"}).start()
    yield running
    running.stop()


def test_429_is_retried_after_retry_after(limited_stack, tmp_path):
    from conftest import Cli
    from docpub import Client, LimitError

    key = limited_stack.api_key
    with Client(limited_stack.base_url, key, max_retries=0) as strict:
        doc = strict.publish("<p>1</p>", "Rate")
        strict.publish("<p>2</p>", "Rate", document_id=doc["document_id"])
        with pytest.raises(LimitError) as refused:
            strict.publish("<p>3</p>", "Rate", document_id=doc["document_id"])
    assert refused.value.code == "rate_limited" and refused.value.exit_code == 5
    assert 1 <= refused.value.details["retry_after_seconds"] <= 4

    waits: list[tuple[float, str]] = []
    with Client(limited_stack.base_url, key, max_retries=3,
                on_retry=lambda attempt, wait, reason: waits.append((wait, reason))) as patient:
        started = time.monotonic()
        out = patient.publish("<p>3</p>", "Rate", document_id=doc["document_id"])
        elapsed = time.monotonic() - started
    assert out["version_number"] == 3
    assert waits and all(reason == "rate limited (429)" for _, reason in waits)
    assert all(wait >= 1 and wait == int(wait) for wait, _ in waits)  # the server's Retry-After, in seconds
    assert elapsed >= waits[0][0]

    # The command line: the window is full again, so the CLI waits and then succeeds.
    with Client(limited_stack.base_url, key, max_retries=5) as filler:
        filler.publish("<p>4</p>", "Rate", document_id=doc["document_id"])
    cli = Cli(tmp_path, limited_stack.base_url, key)
    page = tmp_path / "p.html"
    page.write_text("<p>5</p>")
    result = cli("publish", str(page), "--document", doc["document_id"], "--json")
    assert result.returncode == 0, result.stderr
    assert "rate limited (429); retrying in" in result.stderr
    assert json.loads(result.stdout)["version_number"] == 5
    with Client(limited_stack.base_url, key) as check:
        assert check.get(doc["document_id"])["version_count"] == 5
