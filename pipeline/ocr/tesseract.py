"""OCR for image-only PDFs and images (status ``ocr_needed``), through PyMuPDF's built-in
Tesseract. An image (JPG, PNG, GIF, every frame of a TIFF) is turned into a PDF of one page a
frame first, so both are read by the same page loop.

PyMuPDF wheels link Tesseract themselves; what they need from the system is the language
data (``eng.traineddata``), found through ``TESSDATA_PREFIX`` or the usual Debian folder
(``apt-get install tesseract-ocr`` brings ``tesseract-ocr-eng``). No pytesseract.
"""

from __future__ import annotations

import glob
import os
import time
from functools import lru_cache
from pathlib import Path

from pipeline.counters import PDF_OPENS, counters
from pipeline.extract.readers import (
    IMAGE_EXTENSIONS,
    MIN_TEXT_CHARS,
    STATUS_FAILED,
    STATUS_OK,
    AttachmentText,
    ExtractLimits,
)

# Part of the OCR fingerprint, like EXTRACTOR_VERSION for the plain readers.
OCR_VERSION = "ocr-2"  # 2: images; a page rendered at no more than its image's own pixels

_TESSDATA_CANDIDATES = (
    "/usr/share/tesseract-ocr/*/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
)


@lru_cache(maxsize=8)
def find_tessdata(language: str = "eng") -> str | None:
    """The folder holding ``<language>.traineddata``, or None when OCR cannot run."""
    candidates = [os.environ.get("TESSDATA_PREFIX", "")]
    for pattern in _TESSDATA_CANDIDATES:
        candidates.extend(sorted(glob.glob(pattern), reverse=True))  # newest version first
    for folder in candidates:
        if folder and Path(folder, f"{language}.traineddata").is_file():
            return folder
    return None


def tesseract_available(language: str = "eng") -> bool:
    return find_tessdata(language) is not None


def ocr_pdf(path: Path, *, language: str = "eng", dpi: int = 300, filename: str | None = None,
            limits: ExtractLimits | None = None) -> AttachmentText:
    """OCR every page of a PDF; never raises for a bad file."""
    filename = filename or path.name
    limits = limits or ExtractLimits()
    tessdata = find_tessdata(language)
    if tessdata is None:
        return AttachmentText(filename, STATUS_FAILED, f"tesseract language data '{language}' not found")
    try:
        return _ocr_pages(path, filename, language, dpi, tessdata, limits)
    except Exception as exc:  # a bad file must never stop the docket
        return AttachmentText(filename, STATUS_FAILED, f"ocr failed: {type(exc).__name__}: {exc}"[:300])


def ocr_attachment(path: Path, filename: str, limits: ExtractLimits | None = None) -> AttachmentText:
    """``ocr_pdf`` with the reader signature, so the extract pool can run it in a worker."""
    return ocr_pdf(path, filename=filename, limits=limits)


def _open_as_pdf(path: Path, filename: str):
    """The file as a PDF document: a PDF as it is, an image converted (one page a frame)."""
    import pymupdf

    extension = Path(filename).suffix.lower().lstrip(".")
    if extension not in IMAGE_EXTENSIONS:
        return pymupdf.open(path, filetype="pdf")
    with pymupdf.open(path, filetype=extension) as image:
        return pymupdf.open("pdf", image.convert_to_pdf())


def page_dpi(page, dpi: int) -> int:
    """The resolution to render a page at for OCR: ``dpi``, but never above a lone image's
    own pixels. A scan that says it is 72 dpi (many JPGs say nothing, which reads as 72) is
    a page of 35 inches at 2,550 pixels: at 300 dpi that is 10,600 pixels a side, 18 times
    the work for no detail the image has."""
    images = page.get_images(full=True)
    if len(images) != 1 or page.rect.width <= 0:
        return dpi
    native = round(72 * images[0][2] / page.rect.width)  # the image's width in pixels
    return max(72, min(dpi, native))


def _ocr_pages(path: Path, filename: str, language: str, dpi: int, tessdata: str,
               limits: ExtractLimits) -> AttachmentText:
    started = time.monotonic()
    counters.incr(PDF_OPENS)
    with _open_as_pdf(path, filename) as doc:
        if doc.needs_pass:
            return AttachmentText(filename, STATUS_FAILED, "encrypted PDF (password required)")
        if doc.page_count > limits.max_pdf_pages:
            return AttachmentText(filename, STATUS_FAILED,
                                  f"too many pages ({doc.page_count} > {limits.max_pdf_pages})")
        page_texts = []
        for page in doc:  # keep `page` bound: the text page only weakly references it
            if time.monotonic() - started > limits.file_seconds:
                return AttachmentText(filename, STATUS_FAILED,
                                      f"time limit exceeded ({limits.file_seconds:g} s)")
            textpage = page.get_textpage_ocr(language=language, dpi=page_dpi(page, dpi), full=True,
                                             tessdata=tessdata)
            page_texts.append(page.get_text(textpage=textpage).strip())
        text = "\n\n".join(page_texts).strip()
        if len(text) > MIN_TEXT_CHARS:
            return AttachmentText(filename, STATUS_OK, "", len(text), doc.page_count, text)
        return AttachmentText(filename, STATUS_FAILED, "ocr found no text", len(text), doc.page_count, text)
