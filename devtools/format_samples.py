"""One generated file per attachment format, holding given lines of text: fixtures for the
reader tests and the corpus of the extraction benchmark. Each format is written by its own
library where one exists (openpyxl, xlwt, python-pptx, python-docx, PyMuPDF, Pillow); RTF,
TXT, CSV and HTM are plain text; MSG comes from ``devtools.msg_file``; WPD is a minimal
WordPerfect 5.1 file (a 16-byte header, then the text: no library writes WordPerfect).
"""

from __future__ import annotations

import csv
import html
import struct
from collections.abc import Callable
from pathlib import Path

from devtools.msg_file import write_msg


def write_sample(path: Path, lines: list[str]) -> Path:
    """Write ``lines`` into ``path`` in the format its extension names."""
    WRITERS[path.suffix.lower().lstrip(".")](path, lines)
    return path


def _pdf(path: Path, lines: list[str]) -> None:
    import pymupdf

    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), "\n".join(lines), fontsize=11)
        doc.save(path)


def _docx(path: Path, lines: list[str]) -> None:
    import docx

    document = docx.Document()
    for line in lines:
        document.add_paragraph(line)
    document.save(str(path))


def _rtf(path: Path, lines: list[str]) -> None:
    def escaped(line: str) -> str:  # non-ASCII as RTF's \uN? escapes
        out = line.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")
        return "".join(c if ord(c) < 128 else f"\\u{ord(c)}?" for c in out)
    body = "".join(f"{{\\pard {escaped(line)}\\par}}\n" for line in lines)
    path.write_text("{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times New Roman;}}\n" + body + "}\n", encoding="ascii")


def _txt(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _csv(path: Path, lines: list[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([n, line] for n, line in enumerate(lines, 1))


def _htm(path: Path, lines: list[str]) -> None:
    paragraphs = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    path.write_text(f"<html><head><title>t</title></head><body>{paragraphs}</body></html>", encoding="utf-8")


def _xlsx(path: Path, lines: list[str]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Comments"
    for n, line in enumerate(lines, 1):
        sheet.append([n, line])
    book.save(path)


def _xls(path: Path, lines: list[str]) -> None:
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Comments")
    for n, line in enumerate(lines):
        sheet.write(n, 0, n + 1)
        sheet.write(n, 1, line)
    book.save(str(path))


def _pptx(path: Path, lines: list[str]) -> None:
    import pptx

    deck = pptx.Presentation()
    for line in lines:  # one slide a line: the title layout's title holds it
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = line
    deck.save(str(path))


def _wpd(path: Path, lines: list[str]) -> None:
    # WordPerfect 5.1: magic, document offset, product 1, file type 10 (document), version
    # 0.1, no encryption; then the text, 0x0A being a hard return.
    header = b"\xffWPC" + struct.pack("<I", 16) + bytes([1, 10, 0, 1]) + struct.pack("<HH", 0, 0)
    # Only ASCII: WordPerfect writes other characters as its own extended-character codes.
    path.write_bytes(header + "".join(f"{line}\n" for line in lines).encode("ascii", "replace"))


def _msg(path: Path, lines: list[str]) -> None:
    write_msg(path, subject=lines[0], body="\r\n".join(lines), sender_name="Jane Roe",
              sender_email="jane.roe@example.org", to="comments@agency.example.gov")


def _image(path: Path, lines: list[str]) -> None:
    """Black text on white at about 200 dpi; a TIFF gets one frame per line (a multi-page scan)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=40)

    def frame(text_lines: list[str]) -> Image.Image:
        image = Image.new("L", (1700, 120 + 70 * len(text_lines)), 255)
        draw = ImageDraw.Draw(image)
        for n, line in enumerate(text_lines):
            draw.text((60, 60 + 70 * n), line, fill=0, font=font)
        return image

    fmt = path.suffix.lower().lstrip(".")
    if fmt in ("tif", "tiff"):
        frames = [frame([line]) for line in lines]
        frames[0].save(path, save_all=True, append_images=frames[1:], compression="tiff_lzw", dpi=(200, 200))
        return
    image = frame(lines)
    image = image.convert("RGB") if fmt in ("jpg", "jpeg") else image
    image.save(path, dpi=(200, 200))


WRITERS: dict[str, Callable[[Path, list[str]], None]] = {
    "pdf": _pdf, "docx": _docx, "rtf": _rtf, "txt": _txt, "csv": _csv, "htm": _htm, "html": _htm,
    "xlsx": _xlsx, "xls": _xls, "pptx": _pptx, "wpd": _wpd, "msg": _msg,
    "jpg": _image, "jpeg": _image, "png": _image, "tif": _image, "tiff": _image, "gif": _image,
}
