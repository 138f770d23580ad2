"""Read the text out of one attachment file: PDF, DOCX, DOC, TXT, CSV or HTML.

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
import html.parser
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
EXTRACTOR_VERSION = "extract-3"  # 2: PDF page markers; 3: DOC and CSV read, documents labelled, bodies as text

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
    """Whether a file of this extension is read here (with its program installed, if it needs one)."""
    return extension.lower() in _READERS and not missing_program(extension)


def missing_program(extension: str) -> str | None:
    """Why a format's external program is unusable (naming the Debian package), or None."""
    needed = PROGRAMS.get(extension.lower())
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
    _check_docx_container(path, limits)
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


def _check_docx_container(path: Path, limits: ExtractLimits) -> None:
    """Refuse zip bombs and non-zip files before python-docx decompresses anything."""
    with path.open("rb") as fh:
        if fh.read(8) == _OLE2_MAGIC:
            raise _FileUnreadable("encrypted DOCX or legacy Word file (OLE2 container)")
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(member.file_size for member in archive.infolist())
    except zipfile.BadZipFile as exc:
        raise _FileUnreadable(f"corrupt DOCX: {exc}") from exc
    if declared > limits.max_docx_uncompressed_bytes:
        raise _FileUnreadable(
            f"DOCX too large uncompressed ({declared} > {limits.max_docx_uncompressed_bytes} bytes)"
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


# --- DOC (Word 97-2003) ------------------------------------------------------------------


def _read_doc(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """Word 97 files through Debian's antiword, in a child process bounded by the file's
    time limit (a malformed file cannot hang the worker)."""
    try:
        done = subprocess.run(["antiword", "-m", "UTF-8.txt", "-w", "0", str(path)], capture_output=True,
                              timeout=limits.file_seconds, check=False)
    except subprocess.TimeoutExpired:
        raise _FileUnreadable(f"time limit exceeded ({limits.file_seconds:g} s)") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _FileUnreadable(f"unreadable DOC: {why[-1] if why else f'antiword exited {done.returncode}'}")
    if len(done.stdout) > limits.max_text_bytes:
        raise _FileUnreadable(f"text too large ({len(done.stdout)} > {limits.max_text_bytes} bytes)")
    return _text_result(filename, done.stdout.decode("utf-8", "replace"), None, scannable=False)


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


class _VisibleTextParser(html.parser.HTMLParser):
    """Collects the text a browser would show: no head, script, style or template."""

    HIDDEN = {"head", "script", "style", "template", "noscript", "title"}
    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table",
              "section", "article", "blockquote", "pre", "ul", "ol", "hr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden_depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.hidden_depth += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self.hidden_depth = max(0, self.hidden_depth - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.hidden_depth:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        return "\n".join(line for line in lines if line)


def _read_html(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    parser = _VisibleTextParser()
    parser.feed(_decode(_read_bytes_limited(path, limits)))
    parser.close()
    return _text_result(filename, parser.text(), None, scannable=False)


_READERS: dict[str, Callable[[Path, str, ExtractLimits], AttachmentText]] = {
    "pdf": _read_pdf,
    "docx": _read_docx,
    "doc": _read_doc,
    "txt": _read_txt,
    "csv": _read_csv,
    "htm": _read_html,
    "html": _read_html,
}


# External programs a format's reader runs: extension -> (program, Debian package).
PROGRAMS = {"doc": ("antiword", "antiword")}


# A reader's signature: pipeline.extract.pool runs readers in worker processes it can kill,
# which is what bounds a file stuck inside MuPDF's C code.
Reader = Callable[[Path, str, ExtractLimits], AttachmentText]
