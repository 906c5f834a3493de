"""`docpub list` / `docpub find` output (issue 29, item 4: the share URL was cut off on a
terminal: the table dropped the Link column to fit the width). A snapshot: on a terminal
every document's share link and id stand whole on lines of their own, whatever the width;
piped, the tab-separated columns scripts rely on are unchanged."""
from __future__ import annotations

import pytest

from docpub import cli

DOCUMENTS = [
    {"document_id": "3f0c1a52-9a4e-4c4b-8f0e-2d6f1b7a9c11", "title": "Release notes for the spring launch,\n with a long title",
     "version_count": 12, "updated_at": "2026-11-25T16:50:03Z", "open_feedback_count": 2,
     "share_url": "https://docpub.example.com/d/Xo3kP9qLmN2vR7tY1uWz8a"},
    {"document_id": "b1e2c3d4-0000-4000-8000-000000000002", "title": "Q4",
     "version_count": 1, "updated_at": "2026-11-24T09:00:00Z", "open_feedback_count": 0,
     "share_url": "http://127.0.0.1:8000/d/AbCdEfGhIjKlMnOpQrStUv"},
]

TERMINAL = """\
Release notes for the spring launch, with a long title
  https://docpub.example.com/d/Xo3kP9qLmN2vR7tY1uWz8a
  3f0c1a52-9a4e-4c4b-8f0e-2d6f1b7a9c11 · v12 · updated 2026-11-25 16:50 UTC · 2 open feedback

Q4
  http://127.0.0.1:8000/d/AbCdEfGhIjKlMnOpQrStUv
  b1e2c3d4-0000-4000-8000-000000000002 · v1 · updated 2026-11-24 09:00 UTC
"""

PIPED = """\
3f0c1a52-9a4e-4c4b-8f0e-2d6f1b7a9c11\tRelease notes for the spring launch, with a long title\t12\t2026-11-25 16:50\t2\thttps://docpub.example.com/d/Xo3kP9qLmN2vR7tY1uWz8a
b1e2c3d4-0000-4000-8000-000000000002\tQ4\t1\t2026-11-24 09:00\t0\thttp://127.0.0.1:8000/d/AbCdEfGhIjKlMnOpQrStUv
"""


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_on_a_terminal_every_share_link_stands_whole_on_its_own_line(monkeypatch, capsys, columns):
    monkeypatch.setattr(cli, "stdout_is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", columns)
    cli.print_documents(DOCUMENTS)
    out = capsys.readouterr().out
    assert out == TERMINAL
    lines = out.splitlines()
    for document in DOCUMENTS:
        assert f"  {document['share_url']}" in lines
        assert any(line.startswith(f"  {document['document_id']} ") for line in lines)


def test_piped_output_keeps_every_column_tab_separated(monkeypatch, capsys):
    monkeypatch.setattr(cli, "stdout_is_terminal", lambda: False)
    cli.print_documents(DOCUMENTS)
    assert capsys.readouterr().out == PIPED
