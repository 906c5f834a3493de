"""scripts/generated.py: the write-or-check step both export scripts share."""
from __future__ import annotations

from scripts.generated import write_or_check


def test_check_fails_on_a_missing_or_stale_copy_and_passes_on_a_fresh_one(tmp_path, capsys):
    path = tmp_path / "out.json"
    assert write_or_check(path, "{}\n", ["--check"], "make x") == 1  # missing
    assert "out of date: run `make x`" in capsys.readouterr().err
    assert not path.exists()  # --check never writes
    path.write_text("old\n", encoding="utf-8")
    assert write_or_check(path, "{}\n", ["--check"], "make x") == 1  # stale
    assert path.read_text(encoding="utf-8") == "old\n"
    assert write_or_check(path, "{}\n", [], "make x") == 0  # write
    assert path.read_text(encoding="utf-8") == "{}\n"
    assert write_or_check(path, "{}\n", ["--check"], "make x") == 0  # fresh
