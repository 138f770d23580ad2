"""Text extraction: attachment readers, OCR and the combined.md writer."""

from pipeline.extract.combined import combined_sections, parse_combined, render_combined
from pipeline.extract.readers import (
    EXTRACTOR_VERSION,
    STATUS_FAILED,
    STATUS_OCR_NEEDED,
    STATUS_OK,
    STATUS_UNSUPPORTED,
    AttachmentText,
    ExtractLimits,
    ReaderProcess,
    read_attachment,
    read_attachment_with_timeout,
)

__all__ = [
    "EXTRACTOR_VERSION",
    "STATUS_FAILED",
    "STATUS_OCR_NEEDED",
    "STATUS_OK",
    "STATUS_UNSUPPORTED",
    "AttachmentText",
    "ExtractLimits",
    "ReaderProcess",
    "combined_sections",
    "parse_combined",
    "read_attachment",
    "read_attachment_with_timeout",
    "render_combined",
]
