"""Synthetic 4 MiB documents and edit batches shared by the benches."""
from __future__ import annotations

from dataclasses import dataclass

MAX_BYTES = 4 * 1024 * 1024

_ASCII_PARA = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
               "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
               "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. ")
_JA_PARA = ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
            "ニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。")


def document(kind: str = "ascii", size: int = MAX_BYTES - 4096) -> str:
    """An HTML document of about `size` UTF-8 bytes (just under the 4 MiB limit),
    made of numbered sections so edits can target unique passages."""
    para = _ASCII_PARA if kind == "ascii" else _JA_PARA
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\"><title>Bench</title></head><body>\n"]
    total = len(parts[0].encode())
    i = 0
    while True:
        section = f"<section id=\"s{i}\"><h2>Section {i}</h2><p>{para * 3}</p></section>\n"
        n = len(section.encode())
        if total + n + 20 > size:
            break
        parts.append(section)
        total += n
        i += 1
    parts.append("</body></html>\n")
    return "".join(parts)


@dataclass(frozen=True)
class Edit:
    old_string: str
    new_string: str
    replace_all: bool = False

    def as_json(self) -> dict:
        return {"old_string": self.old_string, "new_string": self.new_string, "replace_all": self.replace_all}


def section_count(html: str) -> int:
    return html.count("<section ")


def edit_batch(html: str, n: int = 100, replace_all: int = 5) -> list[Edit]:
    """n edits: unique headings spread over the whole document (the common case:
    an agent fixes passages) plus a few replace_all edits of repeated text."""
    sections = section_count(html)
    unique = n - replace_all
    edits = []
    for k in range(unique):
        i = (k * (sections - 1)) // max(1, unique - 1)
        edits.append(Edit(f"<h2>Section {i}</h2>", f"<h2>Section {i} (revised)</h2>"))
    repeated = ["magna aliqua", "commodo consequat", "Ut enim", "sed do", "quis nostrud"] \
        if html.isascii() else ["吾輩は猫である", "名前はまだ無い", "見当がつかぬ", "記憶している", "人間というもの"]
    for k in range(replace_all):
        old = repeated[k % len(repeated)]
        # Same length (the engine's slowest path: count, then replace) or shorter,
        # so the result stays under the 4 MiB limit.
        new = (old.upper() if old.isascii() else old[::-1]) if k % 2 == 0 else old[:-1]
        edits.append(Edit(old, new, True))
    return edits


def str_replace_pass(html: str, edits: list[Edit]) -> str:
    """The floor: one plain str.replace per edit, in order, no checks."""
    for edit in edits:
        html = html.replace(edit.old_string, edit.new_string)
    return html
