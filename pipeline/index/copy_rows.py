"""Rows in the formats PostgreSQL's ``COPY ... FROM STDIN`` reads: text (the chunk rows) and
binary (the vectors, 4-byte floats as pgvector sends them, never formatted as decimals)."""

from __future__ import annotations

import io
import struct

_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_BINARY_TRAILER = struct.pack(">h", -1)


def binary_vectors(vectors, text_of: dict[str, str]) -> io.BytesIO:
    """(text hash, vector, text) rows in COPY's binary format; a vector as pgvector sends
    one (``vector_send``): its dimension and a spare as 2-byte integers, then 4-byte floats,
    all big-endian."""
    out = io.BytesIO()
    out.write(_BINARY_HEADER)
    for text_hash, vector in vectors:
        dim = len(vector)
        floats = (vector.astype(">f4").tobytes() if hasattr(vector, "astype")
                  else struct.pack(f">{dim}f", *vector))
        hash_bytes, text_bytes = text_hash.encode(), text_of[text_hash].encode()
        out.write(struct.pack(">hi", 3, len(hash_bytes)))
        out.write(hash_bytes)
        out.write(struct.pack(">ihh", 4 + len(floats), dim, 0))
        out.write(floats)
        out.write(struct.pack(">i", len(text_bytes)))
        out.write(text_bytes)
    out.write(_BINARY_TRAILER)
    out.seek(0)
    return out


def text_rows(rows) -> io.StringIO:
    """Rows in COPY's text format: tab-separated, ``\\N`` for NULL, backslash escapes."""
    out = io.StringIO()
    for row in rows:
        out.write("\t".join("\\N" if value is None else _field(str(value)) for value in row))
        out.write("\n")
    out.seek(0)
    return out


def _field(value: str) -> str:
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    return value.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
