"""Secret scanning of every write before anything is stored (contract 7g).

One call from the write path: `check(ctx, workspace_id, content, allow_secrets)` after
the content is built and checked for size, before the quota, the rate slot and the
store. The workspace decides: `secret_scanning` "block" (default: 422
`secret_detected`, nothing stored), "warn" (stored; the answer's `warnings`) or "off";
`pii_scanning` "warn" adds email addresses, phone numbers, card numbers and IBANs as
warnings (never blocks). `allow_secrets: true` stores despite findings; the activity
entry of the write records it (`detail()`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

from chalicelib.domain import limits, scanning
from chalicelib.errors import SecretDetected, ValidationFailed
from chalicelib.models import ScanWarning

if TYPE_CHECKING:
    from chalicelib.services.content import Content
    from chalicelib.services.context import Context

SECRET_MODES = ("block", "warn", "off")
PII_MODES = ("off", "warn")
DEFAULT_SECRET_MODE = "block"
DEFAULT_PII_MODE = "off"


@dataclass
class Outcome:
    """What a scan decided for a write that goes ahead."""
    warnings: list[dict[str, Any]] = field(default_factory=list)
    allowed_secrets: int = 0  # secrets stored because of allow_secrets

    def detail(self) -> dict[str, Any]:
        """Added to the write's activity entry."""
        return {"allow_secrets": True, "secrets": self.allowed_secrets} if self.allowed_secrets else {}

    def response_warnings(self) -> Optional[list[ScanWarning]]:
        return [ScanWarning(**w) for w in self.warnings] or None


def modes(ctx: "Context", workspace_id: str) -> tuple[str, str]:
    item = ctx.workspaces.get(workspace_id)
    if item is None:
        return DEFAULT_SECRET_MODE, DEFAULT_PII_MODE
    return item.secret_scanning or DEFAULT_SECRET_MODE, item.pii_scanning or DEFAULT_PII_MODE


def scan_content(content: "Content", secrets: bool = True, pii: bool = False,
                 budget: Optional[scanning.Budget] = None) -> list[scanning.Finding]:
    """The page (or Markdown source) as sent, then each new bundle file that is UTF-8 text,
    within one CPU budget (limits.SCAN_CPU_SECONDS): past it, 422 naming html or files.
    At most MAX_FINDINGS secrets and as many PII findings (PII never crowds out a secret)."""
    budget = budget or scanning.Budget(limits.SCAN_CPU_SECONDS)
    found: dict[str, list[scanning.Finding]] = {"secret": [], "pii": []}
    texts: list[tuple[Optional[str], bytes]] = [(content.index_path, content.source or content.page)]
    for item in content.files:
        texts.append((item.path, item.data))
    for path, data in texts:
        if path is not None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # not text: images, fonts, archives
        for kind, wanted in (("secret", secrets), ("pii", pii)):
            room = scanning.MAX_FINDINGS - len(found[kind])
            if not wanted or room <= 0:
                continue
            try:
                found[kind].extend(scanning.scan(data, path=path, secrets=kind != "pii", pii=kind == "pii",
                                                 limit=room, budget=budget))
            except scanning.TooComplexToScan:
                raise limits.too_complex_to_scan("html" if path is None or path == content.index_path
                                                 else "files") from None
    return found["secret"] + found["pii"]


def refusal(findings: Sequence[scanning.Finding], again: str = "publish again") -> SecretDetected:
    secrets = [f for f in findings if f.kind != "pii"]
    return SecretDetected(
        f"The content holds {scanning.describe(secrets)}; remove it and {again}, or pass "
        f"allow_secrets: true to publish it anyway.",
        {"findings": [f.as_dict() for f in secrets]})


def check(ctx: "Context", workspace_id: str, content: "Content", allow_secrets: Optional[bool],
          again: str = "publish again") -> Outcome:
    """Scan first, read the workspace's settings only when there is something to decide:
    clean content (nearly every write) costs no storage round trip."""
    try:
        findings = scan_content(content, secrets=True, pii=True)
    except ValidationFailed:  # too complex to scan: refused unless the workspace does not scan at all
        if modes(ctx, workspace_id) == ("off", "off"):
            return Outcome()
        raise
    if not findings:
        return Outcome()
    credential_mode, pii_mode = modes(ctx, workspace_id)
    findings = [f for f in findings if (credential_mode != "off") if f.kind != "pii"] + [
        f for f in findings if f.kind == "pii" and pii_mode == "warn"]
    secrets = sum(1 for f in findings if f.kind != "pii")
    if secrets and credential_mode == "block" and not allow_secrets:
        raise refusal(findings, again)
    return Outcome(warnings=[f.as_dict(with_kind=True) for f in sorted(findings, key=_place)],
                   allowed_secrets=secrets if allow_secrets else 0)


def _place(finding: scanning.Finding) -> tuple[int, str, int, int]:
    """Where a finding is: the page first, then bundle files by path."""
    return (0 if finding.path is None else 1, finding.path or "", finding.line, finding.column)
