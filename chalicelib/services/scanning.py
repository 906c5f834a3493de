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

from chalicelib.domain import scanning
from chalicelib.errors import SecretDetected
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


def scan_content(content: "Content", secrets: bool = True, pii: bool = False) -> list[scanning.Finding]:
    """The page (or Markdown source) as sent, then each new bundle file that is UTF-8 text."""
    findings: list[scanning.Finding] = []
    texts: list[tuple[Optional[str], bytes]] = [(content.index_path, content.source or content.page)]
    for item in content.files:
        texts.append((item.path, item.data))
    for path, data in texts:
        room = scanning.MAX_FINDINGS - len(findings)
        if room <= 0:
            break
        if path is not None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # not text: images, fonts, archives
        findings.extend(scanning.scan(data, path=path, secrets=secrets, pii=pii, limit=room))
    return findings


def refusal(findings: Sequence[scanning.Finding], again: str = "publish again") -> SecretDetected:
    secrets = [f for f in findings if f.kind == "secret"]
    return SecretDetected(
        f"The content holds {scanning.describe(secrets)}; remove it and {again}, or pass "
        f"allow_secrets: true to publish it anyway.",
        {"findings": [f.as_dict() for f in secrets]})


def check(ctx: "Context", workspace_id: str, content: "Content", allow_secrets: Optional[bool],
          again: str = "publish again") -> Outcome:
    secret_mode, pii_mode = modes(ctx, workspace_id)
    if secret_mode == "off" and pii_mode == "off":
        return Outcome()
    findings = scan_content(content, secrets=secret_mode != "off", pii=pii_mode == "warn")
    secrets = sum(1 for f in findings if f.kind == "secret")
    if secrets and secret_mode == "block" and not allow_secrets:
        raise refusal(findings, again)
    return Outcome(warnings=[f.as_dict(with_kind=True) for f in findings],
                   allowed_secrets=secrets if allow_secrets else 0)
