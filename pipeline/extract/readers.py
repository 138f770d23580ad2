"""Read the text out of one attachment file: PDF, DOCX, DOC, WPD, RTF, TXT, CSV, HTML,
XLSX, XLS, PPTX and MSG; images (JPG, PNG, TIFF, GIF) are recognised and left for OCR.

``read_attachment`` never raises for a bad file: every problem becomes an
``AttachmentText`` with status ``failed`` (or ``unsupported``) and a one-line reason, so
one broken upload cannot stop a docket.

Time limits. A PDF is read page by page and the reader checks ``limits.file_seconds``
between pages, which bounds the common runaway (thousands of slow pages). It cannot
interrupt a single call stuck inside MuPDF's C code: ``pipeline.extract.pool`` runs the
readers in worker processes and kills and replaces one whose file overruns.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import logging
import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.counters import PDF_OPENS, counters

# Bump when a change to any reader can change its output: the version is part of every
# extract fingerprint, so a bump re-extracts exactly the affected items.
# 2: PDF page markers; 3: DOC and CSV read, documents labelled, bodies as text;
# 4: RTF, XLSX, XLS, PPTX, WPD and MSG read, images left for OCR (were `unsupported`).
EXTRACTOR_VERSION = "extract-5"

STATUS_OK = "ok"
STATUS_OCR_NEEDED = "ocr_needed"
STATUS_FAILED = "failed"
STATUS_UNSUPPORTED = "unsupported"

# Fewer meaningful characters than this from a PDF means a scan without a text layer.
MIN_TEXT_CHARS = 50

MIB = 1024 * 1024

# The old OLE2 container: legacy .doc files and password-protected (encrypted) .docx.
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class ExtractLimits:
    max_pdf_pages: int = 2000
    # Sum of the sizes the DOCX zip declares for its members, checked before parsing.
    max_docx_uncompressed_bytes: int = 200 * MIB
    file_seconds: float = 120.0
    max_text_bytes: int = 50 * MIB
    # Characters kept per file: a 250 KB PDF once gave 4.45 M characters and 4,257 chunks.
    max_file_chars: int = 2_000_000


@dataclass(frozen=True)
class AttachmentText:
    file: str
    status: str
    reason: str = ""
    chars: int = 0
    pages: int | None = None
    text: str = ""


class _FileUnreadable(Exception):
    """Raised inside a reader to end it with status ``failed`` and this reason."""


def read_attachment(path: Path, filename: str, limits: ExtractLimits | None = None) -> AttachmentText:
    """Extract the text of ``path``; ``filename`` (e.g. attachment_1.pdf) picks the reader."""
    limits = limits or ExtractLimits()
    reader = _READERS.get(_extension(filename))
    if reader is None:
        return AttachmentText(filename, STATUS_UNSUPPORTED, f"{_extension(filename) or 'no'} extension is not read")
    missing = missing_program(_extension(filename))
    if missing:
        return AttachmentText(filename, STATUS_UNSUPPORTED, missing)
    try:
        size = path.stat().st_size
    except OSError as exc:
        return AttachmentText(filename, STATUS_FAILED, f"cannot read file: {exc.strerror or exc}")
    if size == 0:
        return AttachmentText(filename, STATUS_FAILED, "empty file (0 bytes)")
    try:
        return capped(reader(path, filename, limits), limits.max_file_chars)
    except _FileUnreadable as exc:
        reason = str(exc)
    except Exception as exc:  # a bad file must never stop the docket
        reason = f"unreadable: {type(exc).__name__}: {exc}"
    # Library messages quote the path, which may be a temporary one: keep the reason (and
    # so combined.md) the same wherever the file was read from.
    return AttachmentText(filename, STATUS_FAILED, reason.replace(str(path), filename)[:300])


def can_read(extension: str) -> bool:
    """Whether a file of this extension is read here (with its program or library installed,
    if it needs one). An image counts: the OCR stage reads it."""
    return extension.lower() in _READERS and not missing_program(extension)


def missing_program(extension: str) -> str | None:
    """Why a format's external program or Python library is unusable (naming the Debian or
    pip package to install), or None."""
    extension = extension.lower()
    library = LIBRARIES.get(extension)
    if library is not None and importlib.util.find_spec(library[0]) is None:
        return f"{extension} needs the Python package {library[1]}, which is not installed"
    needed = PROGRAMS.get(extension)
    if needed is None or shutil.which(needed[0]):
        return None
    program, package = needed
    return f"{extension} needs the `{program}` program (Debian package {package}), which is not installed"


def capped(result: AttachmentText, max_chars: int) -> AttachmentText:
    """The text cut at ``max_chars``, the cut said in the reason (the extract.file row's)."""
    if len(result.text) <= max_chars:
        return result
    reason = f"text capped at {max_chars} characters (of {len(result.text)})"
    return dataclasses.replace(result, text=result.text[:max_chars], chars=max_chars,
                               reason="; ".join(filter(None, (result.reason, reason))))


def _extension(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    return suffix[1:] if suffix else ""


def _text_result(filename: str, text: str, pages: int | None, *, scannable: bool) -> AttachmentText:
    """Status from the amount of text: too little from a PDF means it needs OCR."""
    text = text.strip()
    if len(text) > MIN_TEXT_CHARS:
        return AttachmentText(filename, STATUS_OK, "", len(text), pages, text)
    if scannable:
        return AttachmentText(filename, STATUS_OCR_NEEDED, "no text layer", len(text), pages, text)
    # A short DOCX/TXT/HTML is simply a short comment; OCR could add nothing.
    if text:
        return AttachmentText(filename, STATUS_OK, "", len(text), pages, text)
    return AttachmentText(filename, STATUS_FAILED, "no text found", 0, pages, "")


# --- PDF -------------------------------------------------------------------------------


def _read_pdf(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    import pymupdf

    started = time.monotonic()
    pymupdf.TOOLS.mupdf_display_errors(False)  # the reason string carries the error
    counters.incr(PDF_OPENS)
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:
        raise _FileUnreadable(f"corrupt PDF: {exc}") from exc
    with doc:
        _check_pdf_openable(doc, limits)
        page_texts = []
        for page in doc:
            if time.monotonic() - started > limits.file_seconds:
                raise _FileUnreadable(f"time limit exceeded ({limits.file_seconds:g} s)")
            page_texts.append(page.get_text().strip())
        result = _text_result(filename, "\n\n".join(page_texts), doc.page_count, scannable=True)
    if result.status != STATUS_OK:
        return result
    # Page markers let the chunker give each chunk its page; counts stay on the plain text.
    marked = "\n\n".join(f"<!-- page {n} -->\n\n{text}" for n, text in enumerate(page_texts, 1) if text)
    return dataclasses.replace(result, text=marked)


def _check_pdf_openable(doc, limits: ExtractLimits) -> None:
    # MuPDF sniffs content and happily opens an HTML error page saved as .pdf; that text
    # is not the comment, so it is a failed download, not an ok attachment.
    if not doc.is_pdf:
        raise _FileUnreadable("not a PDF (content is another format)")
    if doc.needs_pass:
        raise _FileUnreadable("encrypted PDF (password required)")
    if doc.page_count == 0:
        raise _FileUnreadable("corrupt PDF: no pages")
    if doc.page_count > limits.max_pdf_pages:
        raise _FileUnreadable(f"too many pages ({doc.page_count} > {limits.max_pdf_pages})")


# --- DOCX ------------------------------------------------------------------------------


def _read_docx(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    _check_zip_container(path, limits, "DOCX")
    import docx
    from docx.table import Table

    try:
        document = docx.Document(str(path))
    except Exception as exc:
        raise _FileUnreadable(f"corrupt DOCX: {exc}") from exc
    blocks = []
    # iter_inner_content yields paragraphs and tables in document order.
    for block in document.iter_inner_content():
        text = _table_text(block) if isinstance(block, Table) else block.text
        if text.strip():
            blocks.append(text.strip())
    return _text_result(filename, "\n\n".join(blocks), None, scannable=False)


def _check_zip_container(path: Path, limits: ExtractLimits, label: str) -> None:
    """Refuse zip bombs and non-zip files (DOCX, XLSX, PPTX) before a library decompresses
    anything; ``max_docx_uncompressed_bytes`` bounds every Office zip."""
    with path.open("rb") as fh:
        if fh.read(8) == _OLE2_MAGIC:
            raise _FileUnreadable(f"encrypted {label} or legacy Office file (OLE2 container)")
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(member.file_size for member in archive.infolist())
    except zipfile.BadZipFile as exc:
        raise _FileUnreadable(f"corrupt {label}: {exc}") from exc
    if declared > limits.max_docx_uncompressed_bytes:
        raise _FileUnreadable(
            f"{label} too large uncompressed ({declared} > {limits.max_docx_uncompressed_bytes} bytes)"
        )


def _table_text(table) -> str:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = cell.text.strip()
            # A merged cell is returned once per grid column it spans; keep it once.
            if not cells or cells[-1] != text:
                cells.append(text)
        rows.append(" | ".join(cells))
    return "\n".join(rows)


# --- DOC (Word 97-2003) and WPD (WordPerfect): external programs ---------------------------


def _read_doc(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """Word 97 files through Debian's antiword."""
    text = _program_text(["antiword", "-m", "UTF-8.txt", "-w", "0", str(path)], "DOC", limits)
    return _text_result(filename, text, None, scannable=False)


def _read_wpd(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """WordPerfect files through Debian's wpd2text (libwpd-tools)."""
    return _text_result(filename, _program_text(["wpd2text", str(path)], "WPD", limits), None,
                        scannable=False)


def _program_text(command: list[str], label: str, limits: ExtractLimits) -> str:
    """A converter's standard output, in a child process bounded by the file's time limit
    (a malformed file cannot hang the worker)."""
    try:
        done = subprocess.run(command, capture_output=True, timeout=limits.file_seconds, check=False)
    except subprocess.TimeoutExpired:
        raise _FileUnreadable(f"time limit exceeded ({limits.file_seconds:g} s)") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _FileUnreadable(f"unreadable {label}: {why[-1] if why else f'{command[0]} exited {done.returncode}'}")
    if len(done.stdout) > limits.max_text_bytes:
        raise _FileUnreadable(f"text too large ({len(done.stdout)} > {limits.max_text_bytes} bytes)")
    return done.stdout.decode("utf-8", "replace")


# --- TXT and HTML ----------------------------------------------------------------------


def _read_bytes_limited(path: Path, limits: ExtractLimits) -> bytes:
    size = path.stat().st_size
    if size > limits.max_text_bytes:
        raise _FileUnreadable(f"file too large ({size} > {limits.max_text_bytes} bytes)")
    return path.read_bytes()


def _decode(data: bytes) -> str:
    """UTF-8 first (with or without BOM); cp1252 is what most other uploads turn out to be."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _read_csv(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """Cells as text, one row a line (`` | `` between cells, as DOCX tables are written)."""
    import csv
    import io

    text = _decode(_read_bytes_limited(path, limits)).replace("\x00", "")
    rows = (" | ".join(cell.strip() for cell in row) for row in csv.reader(io.StringIO(text)))
    return _text_result(filename, "\n".join(row for row in rows if row.strip(" |")), None, scannable=False)


def _read_txt(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    text = _decode(_read_bytes_limited(path, limits)).replace("\r\n", "\n").replace("\x00", "")
    return _text_result(filename, text, None, scannable=False)


def _read_html(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    from pipeline.html_text import EXTRACTED, html_to_text

    text = html_to_text(_decode(_read_bytes_limited(path, limits)), EXTRACTED)
    return _text_result(filename, text, None, scannable=False)


# --- RTF -------------------------------------------------------------------------------


def _read_rtf(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    from striprtf.striprtf import rtf_to_text

    data = _read_bytes_limited(path, limits)
    if not data.lstrip().startswith(b"{\\rtf"):
        raise _FileUnreadable("not an RTF file (no {\\rtf header)")
    # RTF is 7-bit text; other characters come as escapes striprtf decodes itself.
    return _text_result(filename, rtf_to_text(data.decode("latin-1"), errors="replace"), None,
                        scannable=False)


# --- spreadsheets: XLSX and XLS -----------------------------------------------------------
# Cells as text, one row a line with `` | `` between cells (as CSV and DOCX tables are
# written), each sheet under a ``Sheet: <name>`` line so a hit says where it is.


def _read_xlsx(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    _check_zip_container(path, limits, "XLSX")
    import openpyxl

    # read_only streams rows from the zip instead of building every cell in memory. A file
    # object, not the path: openpyxl refuses a path not ending in .xlsx, and blobs have none.
    with path.open("rb") as fh:
        book = openpyxl.load_workbook(fh, read_only=True, data_only=True)
        try:
            sheets = ((sheet.title, sheet.iter_rows(values_only=True)) for sheet in book.worksheets)
            return _text_result(filename, _sheets_text(sheets, _cell_text, limits), None, scannable=False)
        finally:
            book.close()


def _read_xls(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    import xlrd

    size = path.stat().st_size
    if size > limits.max_text_bytes:
        raise _FileUnreadable(f"file too large ({size} > {limits.max_text_bytes} bytes)")
    book = xlrd.open_workbook(str(path), on_demand=True)
    try:
        def cell(value_and_type):
            return _xls_cell_text(book, *value_and_type)
        sheets = ((sheet.name, (zip(sheet.row_values(r), sheet.row_types(r), strict=True)
                                for r in range(sheet.nrows)))
                  for sheet in (book.sheet_by_index(i) for i in range(book.nsheets)))
        return _text_result(filename, _sheets_text(sheets, cell, limits), None, scannable=False)
    finally:
        book.release_resources()


def _sheets_text(sheets, cell_text: Callable, limits: ExtractLimits) -> str:
    """Sheets as text; stops reading once past the file's character cap (which cuts it)."""
    parts: list[str] = []
    total = 0
    for name, rows in sheets:
        lines = [f"Sheet: {name}"]
        for row in rows:
            line = " | ".join(cell_text(value) for value in row).strip(" |")
            if line:
                lines.append(line)
                total += len(line) + 1
            if total > limits.max_file_chars:
                break
        if len(lines) > 1:
            parts.append("\n".join(lines))
        if total > limits.max_file_chars:
            break
    return "\n\n".join(parts)


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 3.0 is what a spreadsheet shows as 3
    if isinstance(value, datetime.datetime):  # a date cell: its date, and its time if it has one
        return value.isoformat(sep=" ").removesuffix(" 00:00:00")
    return str(value).strip()


def _xls_cell_text(book, value, cell_type) -> str:
    import xlrd

    if cell_type == xlrd.XL_CELL_DATE:
        try:
            return _cell_text(xlrd.xldate_as_datetime(value, book.datemode))
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return _cell_text(value)
    if cell_type == xlrd.XL_CELL_BOOLEAN:
        return str(bool(value)).upper()
    if cell_type == xlrd.XL_CELL_ERROR:
        return ""
    return _cell_text(value)


# --- PPTX ------------------------------------------------------------------------------


def _read_pptx(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """Each slide's text (shapes, tables, notes) after a page marker with its number, so a
    chunk knows its slide as a PDF chunk knows its page."""
    _check_zip_container(path, limits, "PPTX")
    import pptx

    slides = pptx.Presentation(str(path)).slides
    texts = [_slide_text(slide) for slide in slides]
    result = _text_result(filename, "\n\n".join(texts), len(texts), scannable=False)
    if result.status != STATUS_OK:
        return result
    marked = "\n\n".join(f"<!-- page {n} -->\n\n{text}" for n, text in enumerate(texts, 1) if text)
    return dataclasses.replace(result, text=marked)


def _slide_text(slide) -> str:
    blocks = [_shape_text(shape) for shape in slide.shapes]
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        blocks.append(slide.notes_slide.notes_text_frame.text)
    return "\n\n".join(block.strip() for block in blocks if block and block.strip())


def _shape_text(shape) -> str:
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        return shape.text_frame.text
    if getattr(shape, "has_table", False) and shape.has_table:
        return _table_text(shape.table)
    if shape.shape_type is not None and getattr(shape, "shapes", None) is not None:  # a group
        return "\n".join(_shape_text(inner) for inner in shape.shapes)
    return ""


# --- MSG (Outlook) ---------------------------------------------------------------------


def _read_msg(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """The message's headers (from, to, cc, date, subject), then its body: the plain text
    body, else its HTML body as text. Its own attachments are not opened."""
    import extract_msg

    # It logs each optional stream a message lacks at INFO: lines per file in a run's log.
    logging.getLogger("extract_msg").setLevel(logging.WARNING)
    size = path.stat().st_size
    if size > limits.max_text_bytes:
        raise _FileUnreadable(f"file too large ({size} > {limits.max_text_bytes} bytes)")
    try:
        message = extract_msg.openMsg(str(path))
    except Exception as exc:
        raise _FileUnreadable(f"corrupt MSG: {type(exc).__name__}: {exc}") from exc
    try:
        lines = [f"{name}: {value}" for name, value in _msg_headers(message) if value]
        body = message.body or _msg_html_text(message)
    finally:
        message.close()
    return _text_result(filename, "\n".join(lines) + "\n\n" + (body or "").replace("\r\n", "\n"), None,
                        scannable=False)


def _msg_headers(message) -> list[tuple[str, object]]:
    # Without a recipient table (a saved draft, a forwarded export) the display strings
    # PidTagDisplayTo/Cc (0E04, 0E03) still say who it went to.
    sender = message.sender or ""
    email = message.getStringStream("__substg1.0_0C1F")
    if email and email not in sender:
        sender = f"{sender} <{email}>".strip()
    return [("From", sender), ("To", message.to or message.getStringStream("__substg1.0_0E04")),
            ("Cc", message.cc or message.getStringStream("__substg1.0_0E03")),
            ("Date", message.date), ("Subject", message.subject)]


def _msg_html_text(message) -> str:
    from pipeline.html_text import html_to_text

    html_body = message.htmlBody
    if not html_body:
        return ""
    return html_to_text(html_body.decode("utf-8", "replace") if isinstance(html_body, bytes) else html_body)


# --- images: scanned letters, read by the OCR stage --------------------------------------


def _read_image(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """An image has no text layer: it is ``ocr_needed``, as a scanned PDF is, and the OCR
    stage reads it (every frame of a multi-page TIFF). Opening it here refuses a broken
    file or one of too many pages before OCR spends time on it."""
    import pymupdf

    with path.open("rb") as fh:
        if not fh.read(8).startswith(_IMAGE_MAGIC):
            # MuPDF sniffs content: an error page saved as .png would open as HTML.
            raise _FileUnreadable("not an image (content is another format)")
    pymupdf.TOOLS.mupdf_display_errors(False)
    try:
        with pymupdf.open(path, filetype=_extension(filename)) as doc:
            pages = doc.page_count
    except Exception as exc:
        raise _FileUnreadable(f"corrupt image: {exc}") from exc
    if pages == 0:
        raise _FileUnreadable("corrupt image: no frames")
    if pages > limits.max_pdf_pages:
        raise _FileUnreadable(f"too many pages ({pages} > {limits.max_pdf_pages})")
    return AttachmentText(filename, STATUS_OCR_NEEDED, "image", 0, pages, "")


IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "tif", "tiff", "gif")
# Any of them is accepted under any image extension (a PNG named .jpg is still a scan).
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")


_READERS: dict[str, Callable[[Path, str, ExtractLimits], AttachmentText]] = {
    "pdf": _read_pdf,
    "docx": _read_docx,
    "doc": _read_doc,
    "txt": _read_txt,
    "csv": _read_csv,
    "htm": _read_html,
    "html": _read_html,
    "wpd": _read_wpd,
    "rtf": _read_rtf,
    "xlsx": _read_xlsx,
    "xls": _read_xls,
    "pptx": _read_pptx,
    "msg": _read_msg,
    **dict.fromkeys(IMAGE_EXTENSIONS, _read_image),
}


# External programs a format's reader runs: extension -> (program, Debian package).
PROGRAMS = {"doc": ("antiword", "antiword"), "wpd": ("wpd2text", "libwpd-tools")}

# Python libraries a format's reader imports: extension -> (module, pip package).
LIBRARIES = {"rtf": ("striprtf", "striprtf"), "xlsx": ("openpyxl", "openpyxl"), "xls": ("xlrd", "xlrd"),
             "pptx": ("pptx", "python-pptx"), "msg": ("extract_msg", "extract-msg")}


# A reader's signature: pipeline.extract.pool runs readers in worker processes it can kill,
# which is what bounds a file stuck inside MuPDF's C code.
Reader = Callable[[Path, str, ExtractLimits], AttachmentText]
