"""Validation of identifiers that come from outside and may reach a path or a storage key."""

from __future__ import annotations

import re

from pipeline.errors import InvalidIdentifier

# regulations.gov ids look like CMS-2026-2377-0001, ACF-2025-0038, EPA-HQ-OAR-2021-0317-0001.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# Attachment file names we store: attachment_1.pdf, content.docx, ...
_FILENAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _check(value: object, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.match(value) or ".." in value:
        raise InvalidIdentifier(f"unsafe {what}: {value!r}")
    return value


def validate_id(value: object, what: str = "id") -> str:
    """Return ``value`` if it is a safe regulations.gov id, else raise InvalidIdentifier."""
    return _check(value, _ID, what)


def validate_filename(value: object) -> str:
    """Return ``value`` if it is a safe single path component for a stored file."""
    return _check(value, _FILENAME, "filename")


def validate_sha256(value: object) -> str:
    return _check(value, _SHA256, "sha256")
