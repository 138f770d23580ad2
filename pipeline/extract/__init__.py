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
    read_attachment,
)

__all__ = [
    "EXTRACTOR_VERSION",
    "STATUS_FAILED",
    "STATUS_OCR_NEEDED",
    "STATUS_OK",
    "STATUS_UNSUPPORTED",
    "AttachmentText",
    "ExtractLimits",
    "combined_sections",
    "parse_combined",
    "read_attachment",
    "render_combined",
]
