"""Dashboard views charts: server-rendered SVG with its numbers in the page's text."""
from __future__ import annotations

import re
from html import unescape

import pytest

from tests import helpers

from chalicelib.domain import views as rules
from tests.http.test_dashboard import create_key
from tests.http.test_views import CHROME

DAY = 24 * 3600


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply: these tests sign up many people."""


def text_of(html: str) -> str:
    """What a reader sees (tags dropped, whitespace collapsed)."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def publish(client, key, title, html="<p>x</p>", document_id=None):
    return helpers.publish(client, key, title=title, html=html, **({"document_id": document_id} if document_id else {}))


def view(client, share_id, v=None, times=1):
    for _ in range(times):
        r = client.http.post(f"/d/{share_id}/view" + (f"?v={v}" if v else ""), headers={"User-Agent": CHROME})
        assert r.status_code == 204, r.body


def test_document_page_charts_views_per_day_and_version(owner, client, app_clock):
    key = create_key(owner)
    first = publish(client, key, "Quarterly report")
    publish(client, key, "Quarterly report", "<p>y</p>", first["document_id"])
    app_clock.now = 1_795_000_000.0
    day_a = rules.day_of(int(app_clock.now * 1000))
    view(client, first["share_id"], v=1, times=2)
    app_clock.advance(2 * DAY)
    day_b = rules.day_of(int(app_clock.now * 1000))
    view(client, first["share_id"], times=5)

    page = owner.get(f"/dashboard/documents/{first['document_id']}")
    assert page.status == 200
    assert '<svg class="chart" id="views-days" role="img"' in page.text
    assert "<title id=\"views-days-title\">Views per day, last 30 days</title>" in page.text
    assert f"7 views in total; the most on {day_b} (5 views)." in page.text  # the chart's <desc>
    assert f"Views per day, last 30 days: 7 views in total; the most on {day_b} (5 views)." in text_of(
        page.text.split("<figcaption", 1)[1])  # and its visible caption
    assert page.text.count('<rect class="bar"') == 30 + 2  # 30 days + 2 versions
    seen = text_of(page.text)
    assert f"{day_a} 2" in seen and f"{day_b} 5" in seen  # the day table
    assert "7 views in total" in seen and "7 in the last 30 days" in seen
    assert f"{day_b[5:]}" in seen  # an axis label
    # Per version: in the chart (v1: 2, v2: 5) and in the versions table.
    assert "<title>v1: 2 views</title>" in page.text and "<title>v2: 5 views</title>" in page.text
    rows = re.findall(r"<tr>\s*<td[^>]*>(\d)(?:.*?)</td>.*?<td class=\"num\"[^>]*>(\d+)</td>", page.text, re.S)
    assert ("2", "5") in rows and ("1", "2") in rows
    assert "<script" not in page.text.split("</head>", 1)[1].replace('<script src=', '')  # no inline JS needed


def test_documents_list_has_a_seven_day_sparkline_per_document(owner, client, app_clock):
    key = create_key(owner)
    hot = publish(client, key, "Hot")
    publish(client, key, "Cold")
    view(client, hot["share_id"], times=3)
    app_clock.advance(DAY)
    view(client, hot["share_id"])
    page = owner.get("/dashboard/documents")
    assert page.text.count('<svg class="sparkline"') == 1  # Cold has none: "no views" (issue 29)
    week = rules.window(int(app_clock.now * 1000), 7)
    expected = "4 views in the last 7 days: " + ", ".join(
        f"{d[5:]} {n}" for d, n in zip(week, [0, 0, 0, 0, 0, 3, 1]))
    assert expected in page.text  # aria-label and <title> of Hot's sparkline
    assert re.search(r'<td class="views"[^>]*><svg class="sparkline".*?</svg><span class="spark-total">4</span>', page.text)
    cold = page.text.split(">Cold</a>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="muted">no views</span></td>' in cold and "<svg" not in cold


def test_workspace_page_lists_most_viewed_documents(owner, client, app_clock):
    key = create_key(owner)
    docs = {name: publish(client, key, name) for name in ("Alpha", "Beta", "Gamma")}
    page = owner.get("/dashboard/workspace")
    assert "No views yet" in page.text
    view(client, docs["Alpha"]["share_id"], times=1)
    view(client, docs["Beta"]["share_id"], times=4)
    page = owner.get("/dashboard/workspace")
    section = page.text.split('id="most-viewed"', 1)[1].split("</section>", 1)[0]
    seen = text_of(section)
    assert seen.index("Beta 4 4") < seen.index("Alpha 1 1")
    assert "Gamma" not in seen
