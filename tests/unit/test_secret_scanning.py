"""Secret scanning before anything is stored (issue 36, contract 7g): the rule families,
block / warn / off / allow_secrets / PII on publish, edit, bundles and uploads, the
false-positive corpus and the CPU bound."""
from __future__ import annotations

import io
import random
import string
import time
import zipfile
from pathlib import Path

import pytest

from chalicelib.domain import scanning

CORPUS = Path(__file__).resolve().parents[1] / "data" / "scanning_corpus"


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits, seed: int = 7) -> str:
    rng = random.Random(seed * 1000 + n)
    return "".join(rng.choice(alphabet) for _ in range(n))


# Secrets built at run time (so this file is not itself a leak), one per family the contract names.
UPPER32 = string.ascii_uppercase + "234567"
SAMPLES = {
    # cloud provider keys
    "aws-access-token": "AKIA" + _rand(16, UPPER32),
    "gcp-api-key": "AIza" + _rand(35),
    # source hosting and chat
    "github-pat": "ghp_" + _rand(36),
    "gitlab-pat": "glpat-" + _rand(20),
    "slack-bot-token": "xoxb-1234567890123-1234567890123-" + _rand(24),
    # payment and AI
    "stripe-access-token": "sk_live_" + _rand(24),
    "openai-api-key": "sk-proj-" + _rand(74) + "T3BlbkFJ" + _rand(74, seed=8),
    "anthropic-api-key": "sk-ant-api03-" + _rand(93) + "AA",
    # Docpub's own
    "docpub-api-key": "dpk_" + _rand(43, string.ascii_letters + string.digits + "-_"),
}
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSIsImlhdCI6MTUxNjIzOTAyMn0."
       + _rand(43, string.ascii_letters + string.digits + "-_"))
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_rand(64, string.ascii_letters + "+/", seed=i)
                                                      for i in range(6)) + "\n-----END RSA PRIVATE KEY-----")


def rules_of(text: str, **kw) -> list[str]:
    return [f.rule for f in scanning.scan(text.encode(), **kw)]


@pytest.mark.parametrize("rule", sorted(SAMPLES))
def test_each_family_is_found_with_its_place_and_a_redacted_preview(rule):
    secret = SAMPLES[rule]
    text = f"# Notes\n\nThe run printed:\n    value {secret} \n"
    findings = scanning.scan(text.encode())
    assert [f.rule for f in findings] == [rule]
    found = findings[0]
    assert (found.line, found.column) == (4, 11)
    assert found.preview == f"{secret[:4]}…{secret[-4:]}"
    assert secret[4:-4] not in found.preview


@pytest.mark.parametrize("rule", sorted(SAMPLES))
def test_each_family_is_found_inside_html_tags(rule):
    """gitleaks ends a value at a quote or whitespace; in a page a tag ends it too
    (<code>sk_live_…</code> was missed before scanning.for_html)."""
    assert rules_of(f"<p>Key: <code>{SAMPLES[rule]}</code></p>") == [rule]
    assert rules_of(f'<a href="https://x.example/?k={SAMPLES[rule]}&amp;v=1">x</a>') == [rule]


def test_private_key_blocks_jwts_and_high_entropy_assignments():
    assert rules_of(f"<pre>\n{PEM}\n</pre>") == ["private-key"]
    assert rules_of(f"Authorization: Bearer {JWT} \n") == ["jwt"]
    assert rules_of(f'settings.password = "{_rand(20)}"\n') == ["generic-api-key"]
    assert rules_of(f"export CLIENT_SECRET={_rand(32)}\n") == ["generic-api-key"]


def test_documentation_examples_and_placeholders_are_not_findings():
    """Documented example keys are not findings (gitleaks' allowlists: AWS keys ending in
    EXAMPLE; placeholders; low entropy)."""
    text = ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
            "password = \"${DB_PASSWORD}\"\n"
            "api_key: YOUR_API_KEY_HERE\n"
            "token = xxxxxxxxxxxxxxxxxxxxxxxx\n"
            "secret: changeme\n")
    assert rules_of(text) == []


def test_a_specific_rule_wins_over_the_generic_one_and_bundle_paths_are_named():
    key = SAMPLES["aws-access-token"]
    findings = scanning.scan(f"aws_access_key_id = {key}\n".encode(), path="deploy/notes.txt")
    assert [(f.rule, f.path, f.line, f.column) for f in findings] == [("aws-access-token", "deploy/notes.txt", 1, 21)]


def test_columns_count_characters_not_bytes():
    key = SAMPLES["github-pat"]
    findings = scanning.scan(f"日本語\n€ é {key}\n".encode())
    assert [(f.line, f.column) for f in findings] == [(2, 5)]


def test_pii_is_opt_in():
    text = ("Write to ada.lovelace@example.org or call +44 20 7946 0958.\n"
            "Card 4242 4242 4242 4242, IBAN GB82 WEST 1234 5698 7654 32.\n"
            "Not a card: 4242 4242 4242 4241. Version 1.2.3, 2026-11-28.\n")
    assert rules_of(text) == []
    assert rules_of(text, pii=True) == ["email", "phone-number", "card-number", "iban"]
    assert {f.kind for f in scanning.scan(text.encode(), pii=True)} == {"pii"}


def test_the_rule_set_is_gitleaks_plus_docpub():
    assert scanning.rule_count() >= 200
    ids = {r.id for r in scanning.rule_set().rules}
    assert {"aws-access-token", "private-key", "jwt", "generic-api-key", "docpub-api-key"} <= ids


def test_no_findings_on_ordinary_documents():
    """The false-positive corpus (tests/data/scanning_corpus: README files, reports, code
    samples with placeholder keys) and this repository's own docs: zero findings."""
    files = sorted(CORPUS.glob("*")) + sorted((Path(__file__).resolve().parents[2] / "docs").glob("*.md"))
    assert len(files) >= 10
    found = {f.name: [(x.rule, x.line, x.preview) for x in scanning.scan(f.read_bytes())] for f in files}
    assert {name: hits for name, hits in found.items() if hits} == {}


def _cpu(data: bytes, **kw) -> float:
    best = None
    for _ in range(2):
        start = time.process_time()
        scanning.scan(data, **kw)
        spent = time.process_time() - start
        best = spent if best is None else min(best, spent)
    return best or 1e-6


def _keyword_flood(size: int) -> bytes:
    words = sorted({k.decode() for r in scanning.rule_set().rules for k in r.keywords})
    unit = (" = ".join(words) + "\n").encode()
    return (unit * (size // len(unit) + 1))[:size]


@pytest.mark.parametrize("make", [
    lambda n: (b"The quarterly report: revenue grew; see the table below.\n" * (n // 57 + 1))[:n],
    _keyword_flood,
    lambda n: (b"aws_key = AKIAIOSFODNN7EXAMPLE\n" * (n // 31 + 1))[:n],
    lambda n: (b"password = aaaaaaaaaaaaaaaa\n" * (n // 28 + 1))[:n],
], ids=["prose", "keyword-flood", "example-keys", "low-entropy-assignments"])
def test_cpu_grows_linearly(make):
    """Four times the input costs about four times the CPU (not sixteen): the growth ratio,
    not wall-clock, so a busy machine does not fail it."""
    scanning.rule_set()
    small, large = _cpu(make(256 * 1024), pii=True), _cpu(make(1024 * 1024), pii=True)
    assert large / max(small, 0.002) < 7, (small, large)


# ------------------------------------------------------------------ the service


@pytest.fixture
def who(services, workspace):
    from chalicelib.services.auth import credentials_from_key

    return credentials_from_key(workspace[1])


def _set(ctx, workspace, **fields):
    ctx.workspaces.set_fields(workspace[0].id, fields)


def _usage(ctx, workspace):
    item = ctx.workspaces.get(workspace[0].id)
    return item.document_count, item.version_total, item.storage_bytes


def _publish(services, who, html, **kw):
    from chalicelib.models import PublishRequest

    return services.documents.publish(who, PublishRequest(title="Run log", html=html, **kw))


LEAK = f"<p>Deployed with key {SAMPLES['aws-access-token']}</p>\n"


def test_block_is_the_default_and_stores_nothing(ctx, services, workspace, who):
    from chalicelib.errors import SecretDetected

    before = _usage(ctx, workspace)
    with pytest.raises(SecretDetected) as caught:
        _publish(services, who, "<h1>Log</h1>\n" + LEAK)
    error = caught.value
    assert error.status == 422 and error.code == "secret_detected"
    assert error.details == {"findings": [{"rule": "aws-access-token", "line": 2, "column": 22,
                                           "preview": SAMPLES["aws-access-token"][:4] + "…"
                                           + SAMPLES["aws-access-token"][-4:]}]}
    assert "an AWS access key on line 2, column 22" in error.message
    assert "allow_secrets: true" in error.message
    assert _usage(ctx, workspace) == before


def test_warn_stores_and_answers_warnings(ctx, services, workspace, who):
    _set(ctx, workspace, secret_scanning="warn")
    answer = _publish(services, who, LEAK).response
    assert [(w.rule, w.kind, w.line) for w in answer.warnings] == [("aws-access-token", "secret", 1)]
    assert "warnings" in answer.model_dump()
    clean = _publish(services, who, "<p>nothing to see</p>").response
    assert "warnings" not in clean.model_dump()


def test_off_stores_without_looking(ctx, services, workspace, who):
    _set(ctx, workspace, secret_scanning="off")
    assert _publish(services, who, LEAK).response.warnings is None


def test_allow_secrets_stores_and_the_activity_log_says_so(ctx, services, workspace, who):
    from chalicelib.services.activity import ActivityService

    answer = _publish(services, who, LEAK, allow_secrets=True).response
    assert [w.rule for w in answer.warnings] == ["aws-access-token"]
    entries = ActivityService(ctx).list(who).activity
    assert entries[0].action == "document.publish"
    assert entries[0].detail["allow_secrets"] is True and entries[0].detail["secrets"] == 1


def test_pii_warns_when_the_workspace_asks(ctx, services, workspace, who):
    html = "<p>Mail ada.lovelace@example.org</p>"
    assert _publish(services, who, html).response.warnings is None
    _set(ctx, workspace, pii_scanning="warn")
    answer = _publish(services, who, html).response
    assert [(w.rule, w.kind) for w in answer.warnings] == [("email", "pii")]


def test_edit_scans_the_document_as_it_would_be(ctx, services, workspace, who):
    from chalicelib.errors import SecretDetected
    from chalicelib.models import EditRequest

    doc = _publish(services, who, "<h1>Log</h1>\n<p>key: PLACEHOLDER</p>\n").response
    before = _usage(ctx, workspace)
    request = EditRequest(edits=[{"old_string": "PLACEHOLDER", "new_string": SAMPLES["github-pat"]}])
    with pytest.raises(SecretDetected) as caught:
        services.documents.edit(who, doc.document_id, request)
    assert [(f["rule"], f["line"], f["column"]) for f in caught.value.details["findings"]] == [("github-pat", 2, 9)]
    assert _usage(ctx, workspace) == before
    allowed = EditRequest(edits=request.edits, allow_secrets=True)
    assert [w.rule for w in services.documents.edit(who, doc.document_id, allowed).response.warnings] == ["github-pat"]


def test_markdown_is_scanned_as_sent(services, who):
    from chalicelib.errors import SecretDetected

    with pytest.raises(SecretDetected) as caught:
        _publish(services, who, f"# Run\n\n```\nexport STRIPE={SAMPLES['stripe-access-token']}\n```\n",
                 format="markdown")
    assert [(f["rule"], f["line"]) for f in caught.value.details["findings"]] == [("stripe-access-token", 4)]


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_bundle_text_files_are_scanned_by_path(ctx, services, workspace, who):
    from chalicelib.errors import SecretDetected
    from chalicelib.models import PublishRequest

    before = _usage(ctx, workspace)
    data = _zip({"index.html": b"<h1>Report</h1><script src='app.js'></script>",
                 "app.js": f"// config\nconst token = '{SAMPLES['slack-bot-token']}';\n".encode(),
                 "logo.png": b"\x89PNG\r\n\x1a\n\xff\xfe" + SAMPLES["github-pat"].encode()})
    with pytest.raises(SecretDetected) as caught:
        services.documents.publish(who, PublishRequest(title="Bundle"), upload=("report.zip", data))
    assert caught.value.details["findings"] == [
        {"rule": "slack-bot-token", "path": "app.js", "line": 2, "column": 16,
         "preview": SAMPLES["slack-bot-token"][:4] + "…" + SAMPLES["slack-bot-token"][-4:]}]
    assert _usage(ctx, workspace) == before
    with pytest.raises(SecretDetected):
        services.documents.publish(who, PublishRequest(title="JSON", html="<p>x</p>", files=[
            {"path": "notes.txt", "content": f"key {SAMPLES['gitlab-pat']}\n"}]))
    assert _usage(ctx, workspace) == before


def test_an_upload_is_scanned_when_published_and_stays_usable(ctx, services, workspace, who):
    from chalicelib.errors import SecretDetected
    from chalicelib.models import PublishRequest
    from chalicelib.services.uploads import UploadService

    uploads = UploadService(ctx)
    created = uploads.create(who, "log.html", len(LEAK.encode()))
    token = created.upload_url.split("token=")[1]
    uploads.receive(created.upload_id, token, io.BytesIO(LEAK.encode()), len(LEAK.encode()))  # PUT: not scanned
    before = _usage(ctx, workspace)
    with pytest.raises(SecretDetected):
        services.documents.publish(who, PublishRequest(title="Up", upload_id=created.upload_id))
    assert _usage(ctx, workspace) == before
    answer = services.documents.publish(who, PublishRequest(title="Up", upload_id=created.upload_id,
                                                            allow_secrets=True)).response
    assert answer.version_number == 1


def test_a_scan_past_its_cpu_budget_is_refused_and_stores_nothing(ctx, services, workspace, who, monkeypatch):
    """Bundles hold up to 32 MiB of text: one write's scans share limits.SCAN_CPU_SECONDS
    (an injected clock here), past it 422 naming the part, nothing stored."""
    from chalicelib.domain import limits
    from chalicelib.errors import ValidationFailed
    from chalicelib.services import scanning as service

    ticks = iter(range(10**9))
    real = scanning.Budget
    monkeypatch.setattr(service.scanning, "Budget", lambda seconds: real(seconds, clock=lambda: next(ticks)))
    before = _usage(ctx, workspace)
    flood = "\n".join(f"api_key = value{i:06d}" for i in range(20000))
    with pytest.raises(ValidationFailed) as caught:
        _publish(services, who, "<p>ok</p>", files=[{"path": "notes.txt", "content": flood}])
    assert caught.value.details["fields"][0]["field"] == "files"
    assert "too complex to scan" in caught.value.message and f"{limits.SCAN_CPU_SECONDS:g} s" in caught.value.message
    assert _usage(ctx, workspace) == before
