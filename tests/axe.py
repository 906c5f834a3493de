"""axe-core (npm) for browser tests: the WCAG 2.1 AA rules run inside a page.

scripts/axe.sh installs the pinned axe-core into .axe/ (git-ignored; DOCPUB_AXE_DIR
elsewhere) on first use, as scripts/engines.sh installs the engines. Without npm the
tests that need it skip. The script is evaluated through the DevTools protocol, so the
pages' Content-Security-Policy (no inline script) does not stop it."""
from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parent.parent
AXE_DIR = Path(os.environ.get("DOCPUB_AXE_DIR") or PROJECT_DIR / ".axe")
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, iframes: false,
                                          resultTypes: ['violations']});
  return result.violations.map(v => `${v.id} (${v.impact}): ${v.help}: ` +
    v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' ' + (n.failureSummary || '').replace(/\\s+/g, ' ')).join(' | '));
}"""


@lru_cache(maxsize=1)
def axe_source() -> str:
    if not AXE_JS.exists():
        if shutil.which("npm") is None:
            pytest.skip("axe-core is not installed and npm is not here (scripts/axe.sh)")
        done = subprocess.run([str(PROJECT_DIR / "scripts" / "axe.sh"), str(AXE_DIR)], capture_output=True, text=True,
                              timeout=300)
        if done.returncode != 0 or not AXE_JS.exists():  # offline: say so, do not fail every browser test
            pytest.skip(f"scripts/axe.sh could not install axe-core: {done.stderr.strip()[-300:]}")
    return AXE_JS.read_text(encoding="utf-8")


def violations(page) -> list[str]:
    """The WCAG 2.1 A/AA violations axe finds on the page as it is now (the document in a
    share page's iframe is the author's, not checked)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source())
    return page.evaluate(RUN, TAGS)
