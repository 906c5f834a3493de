"""Link-preview cards (contract 7b): a 1200x630 PNG with a document's title and the
workspace's brand, what chat apps show for `og:image`. Pure: text in, PNG bytes out.

Pillow draws it with its bundled TrueType font (present wherever Pillow's wheels
are, Lambda included); a title is wrapped to at most three lines and cut with an
ellipsis, never overflowing the card."""
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
# Bump when the drawing changes, so cached cards are drawn again.
CARD_REVISION = "1"


@lru_cache(maxsize=8)
def _font(size: int) -> "FreeTypeFont":
    from PIL import ImageFont

    font = ImageFont.load_default(size=size)
    assert isinstance(font, ImageFont.FreeTypeFont)  # Pillow's wheels carry FreeType
    return font


def _width(font: "FreeTypeFont", text: str) -> int:
    return int(font.getlength(text))


def _wrap(text: str, font: "FreeTypeFont", width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        while _width(font, word) > width:  # a word longer than a line: cut it
            cut = len(word)
            while cut > 1 and _width(font, word[:cut]) > width:
                cut -= 1
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


def card_key(title: str, brand: str) -> str:
    """What a card depends on: the same inputs give the same card (a cache key / ETag)."""
    return hashlib.sha256(f"{CARD_REVISION}\0{title}\0{brand}".encode()).hexdigest()[:32]


def render_card(title: str, brand: str) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, WIDTH, 14), fill=ACCENT)
    font, lines = _fit(" ".join(title.split()) or "Untitled", WIDTH - 2 * MARGIN)
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
