"""The dashboard's "Export workspace" in Chromium against the real local stack (issue 36):
the owner presses the button, the page shows the export's progress in a live status
region, its script polls until the zip is ready and puts the download link there; the
link downloads the zip. Both states pass axe-core's WCAG 2.1 A/AA rules."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

from tests import axe
from tests.browser.test_dashboard_browser import browser  # noqa: F401  (the fixture)
from tests.chromium import sign_up

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def test_export_button_progress_then_download(stack, browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        sign_up(page, stack, "exporter@example.com", "Export Browser Co", "a long browser password")
        page.goto(stack.base_url + "/dashboard/workspace")
        page.click("button >> text=Export workspace")
        status = page.locator("#export-status[role=status][aria-live=polite]")
        status.wait_for()  # the redirect after the POST may still be loading (is_visible does not wait)
        assert "export=exp_" in page.url
        assert not axe.violations(page)
        link = page.locator("#export-status a >> text=Download the export (zip)")
        link.wait_for(timeout=30_000)  # the page's script polls the export and shows the link
        assert page.locator("#export-status progress").count() == 0
        assert not axe.violations(page)
        with page.expect_download() as downloading:
            link.click()
        data = open(downloading.value.path(), "rb").read()
        manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
        assert manifest["workspace"]["name"] == "Export Browser Co"
        assert errors == []
    finally:
        context.close()
