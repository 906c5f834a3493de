"""One way to make HTML (issue 25, item 3): every page, fragment, SVG chart and mail
body is a template rendered by chalicelib.rendering's one jinja2 environment,
autoescaped; no HTML is built in f-strings anywhere in chalicelib."""
from __future__ import annotations

import ast
import re
from pathlib import Path

CHALICELIB = Path(__file__).resolve().parents[2] / "chalicelib"
# An f-string whose text has a tag in it: `f"<p>{x}</p>"`, `f'<svg …'`, `"<b>" + f"{x}</b>"`.
TAG = re.compile(r"<[A-Za-z/!]")


def _sources():
    return sorted(CHALICELIB.rglob("*.py"))


def test_no_html_is_built_in_f_strings():
    found = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"""\b[rRbB]?[fF][rRbB]?("|')<""", text):
            found.append(f"{path.relative_to(CHALICELIB)}:{text.count(chr(10), 0, match.start()) + 1}")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.JoinedStr):
                literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                if TAG.search(literal):
                    found.append(f"{path.relative_to(CHALICELIB)}:{node.lineno}")
    assert found == [], f"HTML built in f-strings (make it a template): {found}"


def test_the_check_above_sees_html_in_an_f_string():
    """Guard against a check that can never fail."""
    tree = ast.parse('x = 1\nhtml = f"<p>{x}</p>"\n')
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]
    assert strings and TAG.search("".join(v.value for v in strings[0].values if isinstance(v, ast.Constant)))


def test_one_jinja_environment_in_the_code():
    makers = [str(path.relative_to(CHALICELIB)) for path in _sources()
              if re.search(r"\bEnvironment\(|\bTemplate\(|import jinja2|from jinja2", path.read_text(encoding="utf-8"))]
    assert makers == ["rendering.py"]


def test_pages_escape_what_they_are_given():
    from chalicelib import rendering

    page = rendering.page("share/message.html", title="<t>", css="", heading="<script>alert(1)</script>",
                          text='"quoted" & <b>bold</b>')
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>bold</b>" not in page and "&#34;quoted&#34; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "<title>&lt;t&gt;</title>" in page


def test_charts_escape_labels_and_titles():
    from chalicelib.entrypoints import charts

    hostile = '"><script>alert(1)</script>'
    chart = str(charts.bar_chart(hostile, hostile, [(hostile, 3), ("2026-11-02", 1)]))
    table = str(charts.data_table(hostile, (hostile, "Views"), [(hostile, 1234567)]))
    spark = str(charts.sparkline([0, 4], [hostile, "2026-11-02"]))
    for markup in (chart, table, spark):
        assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert chart.startswith('<figure class="chart"><svg class="chart"') and chart.count('<rect class="bar"') == 2
    assert "1,234,567" in table
    assert re.fullmatch(r'<svg class="sparkline" role="img" .*</svg><span class="spark-total">4</span>', spark)


def test_plain_text_mail_is_not_escaped_and_its_html_is():
    from chalicelib.services import mailing

    message = mailing.render("reset", "a@example.com", {"brand_name": "Acme <Labs>"},
                             link="https://docpub.example/reset?a=1&b=2", minutes=30)
    assert "https://docpub.example/reset?a=1&b=2" in message.text
    assert "a=1&amp;b=2" in message.html and "Acme &lt;Labs&gt;" in message.html


def test_a_template_extends_the_base_of_its_own_folder():
    """`{% extends "base.html" %}` in site/ and in share/ are two different bases."""
    from chalicelib import rendering

    site = rendering.page("site/landing.html", base_url="http://docpub.test")
    share = rendering.page("share/message.html", title="T", css="", heading="H", text="x")
    assert '<meta name="robots" content="noindex">' in share and 'class="center"' in share
    assert '<meta name="robots" content="noindex">' not in site and "docpub.test" in site
