"""Identifiers that come from outside: their validation (they may reach a path or a storage
key), and the page on regulations.gov a record's id names."""

from __future__ import annotations

import re

from pipeline.errors import InvalidIdentifier

# regulations.gov ids look like CMS-2026-2377-0001, ACF-2025-0038, EPA-HQ-OAR-2021-0317-0001.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# Attachment file names we store: attachment_1.pdf, content.docx, ...
_FILENAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

REGULATIONS_GOV = "https://www.regulations.gov"


def record_url(kind: str, key: str) -> str:
    """The record's page on regulations.gov: ``/document/ID`` for a document, ``/comment/ID``
    for anything else."""
    return f"{REGULATIONS_GOV}/{'document' if kind == 'document' else 'comment'}/{key}"


def _check(value: object, pattern: re.Pattern[str], what: str) -> str:
    # fullmatch: `$` would let a trailing newline through ("X-1\n" is no id).
    if not isinstance(value, str) or not pattern.fullmatch(value) or ".." in value:
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


def validate_key(key: object, *, what: str = "key") -> str:
    """Return ``key`` if it is a safe relative object key, else raise InvalidIdentifier.

    The same string becomes a filesystem path in the local stores, so anything that could
    climb out of the root or be read differently by another OS is refused.
    """
    if not isinstance(key, str) or not key:
        raise InvalidIdentifier(f"unsafe {what}: {key!r}")
    if ".." in key or "\\" in key or "\x00" in key or key.startswith("/"):
        raise InvalidIdentifier(f"unsafe {what}: {key!r}")
    if any(part in ("", ".") for part in key.split("/")):
        raise InvalidIdentifier(f"unsafe {what}: {key!r}")
    return key


def validate_prefix(prefix: object) -> str:
    """A listing prefix: empty, or a safe key that may end with '/'."""
    if prefix == "":
        return ""
    if not isinstance(prefix, str):
        raise InvalidIdentifier(f"unsafe prefix: {prefix!r}")
    validate_key(prefix.removesuffix("/"), what="prefix")
    return prefix


def agency_of_docket(docket_id: str) -> str:
    """The agency a docket id names: ``ACF-2025-0038`` → ACF, and for the Federal Register
    dockets agencies keep (``USTR_FRDOC_0001``) the part before ``_`` → USTR. The mirror
    files a docket under this agency too."""
    return docket_id.split("-", 1)[0].split("_", 1)[0]
