"""Link-preview cards (contract 7b): a 1200x630 PNG with a document's title and the
workspace's brand, what chat apps show for `og:image`. Pure: text in, PNG bytes out.

Pillow draws it with its bundled TrueType font (present wherever Pillow's wheels
are, Lambda included); a title is wrapped to at most three lines and cut with an
ellipsis, never overflowing the card. The work is bounded whatever the title (issue 33):
at most its first TITLE_CHARS characters are laid out, and a word longer than a line is
cut where a binary search finds the longest prefix that fits (a few measurements, not
one per character)."""
from __future__ import annotations

import hashlib
import io
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.ImageFont import FreeTypeFont

WIDTH, HEIGHT = 1200, 630
MARGIN = 80
BACKGROUND = (246, 247, 249)
ACCENT = (40, 86, 199)
INK = (29, 35, 48)
MUTED = (91, 100, 117)
TITLE_SIZES = (72, 60, 50)  # the largest size at which the title fits in three lines
MAX_LINES = 3
# Three lines hold about 130 average characters at the smallest size: 200 always fill them.
TITLE_CHARS = 200
# Bump when the drawing changes, so cached cards are drawn again.
CARD_REVISION = "2"


@lru_cache(maxsize=8)
def _font(size: int) -> "FreeTypeFont":
    from PIL import ImageFont

    font = ImageFont.load_default(size=size)
    assert isinstance(font, ImageFont.FreeTypeFont)  # Pillow's wheels carry FreeType
    return font


def _width(font: "FreeTypeFont", text: str) -> int:
    return int(font.getlength(text))


def _cut(word: str, font: "FreeTypeFont", width: int) -> int:
    """The longest prefix of `word` (at least one character) that fits in `width`, by binary
    search: a prefix is never narrower than a shorter one."""
    fits, too_long = 1, len(word)  # word[:too_long] is known not to fit
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if _width(font, word[:middle]) <= width:
            fits = middle
        else:
            too_long = middle
    return fits


def _wrap(text: str, font: "FreeTypeFont", width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        while _width(font, word) > width:  # a word longer than a line: cut it
            cut = _cut(word, font, width)
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:cut])
            word = word[cut:]
        candidate = f"{current} {word}".strip()
        if _width(font, candidate) <= width:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def _fit(title: str, width: int) -> tuple["FreeTypeFont", list[str]]:
    font, lines = _font(TITLE_SIZES[0]), [title]
    for size in TITLE_SIZES:
        font = _font(size)
        lines = _wrap(title, font, width)
        if len(lines) <= MAX_LINES:
            return font, lines
    lines = lines[:MAX_LINES]
    last = lines[-1]
    while last and _width(font, last + "…") > width:
        last = last[:-1].rstrip()
    lines[-1] = last + "…"
    return font, lines


def laid_out(title: str) -> str:
    """What of a title the card lays out: its first TITLE_CHARS characters (spaces folded),
    an ellipsis after them when there is more."""
    words = " ".join(title.split()) or "Untitled"
    return words if len(words) <= TITLE_CHARS else words[:TITLE_CHARS].rstrip() + "…"


def card_key(title: str, brand: str) -> str:
    """What a card depends on: the same inputs give the same card (a cache key / ETag)."""
    return hashlib.sha256(f"{CARD_REVISION}\0{title}\0{brand}".encode()).hexdigest()[:32]


def render_card(title: str, brand: str) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, WIDTH, 14), fill=ACCENT)
    font, lines = _fit(laid_out(title), WIDTH - 2 * MARGIN)
    size = int(font.size)
    y = MARGIN + 40
    for line in lines:
        draw.text((MARGIN, y), line, font=font, fill=INK)
        y += int(size * 1.22)
    brand_font = _font(34)
    brand_text = brand[:60]
    draw.rectangle((MARGIN, HEIGHT - MARGIN - 52, MARGIN + 10, HEIGHT - MARGIN - 6), fill=ACCENT)
    draw.text((MARGIN + 28, HEIGHT - MARGIN - 50), brand_text, font=brand_font, fill=MUTED)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
