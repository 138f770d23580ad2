"""Write a minimal Outlook ``.msg`` file, for tests and benchmarks: no maintained library
writes MSG (``extract-msg`` only reads), so this builds the OLE2 compound file itself.

An MSG is a compound file (MS-CFB) whose streams hold the message's properties
(MS-OXMSG): ``__substg1.0_<tag>`` streams for strings (UTF-16LE, type ``001F``) and
``__properties_version1.0`` for fixed-size ones (here the submit time). Every stream here
is under 4096 bytes, so all live in the mini stream (64-byte mini sectors) that the root
entry holds; the directory is a chain of right siblings (readers do not require the
red-black balance).
"""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from pathlib import Path

SECTOR = 512
MINI = 64
FREE, END, FAT_SECTOR = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
NONE = 0xFFFFFFFF
MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
STRING_TAGS = {"message_class": "001A", "subject": "0037", "body": "1000", "sender_name": "0C1A",
               "sender_email": "0C1F", "to": "0E04", "cc": "0E03"}


def write_msg(path: Path, *, subject: str, body: str, sender_name: str, sender_email: str,
              to: str, cc: str = "", sent: datetime | None = None) -> Path:
    """Write ``path`` as an MSG holding these headers and this plain-text body."""
    values = {"message_class": "IPM.Note", "subject": subject, "body": body, "sender_name": sender_name,
              "sender_email": sender_email, "to": to, "cc": cc}
    streams = [(f"__substg1.0_{STRING_TAGS[name]}001F", value.encode("utf-16-le"))
               for name, value in values.items() if value]
    streams.append(("__properties_version1.0", _properties(sent or datetime(2024, 1, 2, 15, 4, 5, tzinfo=UTC))))
    path.write_bytes(_compound_file(streams))
    return path


def _properties(sent: datetime) -> bytes:
    """The top-level message's property stream: a 32-byte header, then 16-byte entries."""
    filetime = int((sent - datetime(1601, 1, 1, tzinfo=UTC)).total_seconds() * 10_000_000)
    header = bytes(8) + struct.pack("<IIII", 0, 0, 0, 0) + bytes(8)
    submit_time = struct.pack("<IIQ", 0x00390040, 0x6, filetime)  # PidTagClientSubmitTime, PT_SYSTIME
    return header + submit_time


def _compound_file(streams: list[tuple[str, bytes]]) -> bytes:
    mini_stream, mini_fat, starts = b"", [], []
    for _name, data in streams:
        first = len(mini_stream) // MINI
        count = max(1, -(-len(data) // MINI))
        starts.append(first)
        mini_fat += [first + i + 1 for i in range(count - 1)] + [END]
        mini_stream += data.ljust(count * MINI, b"\0")
    entries = 1 + len(streams)
    dir_sectors = -(-entries // 4)
    minifat_sectors = -(-len(mini_fat) * 4 // SECTOR)
    stream_sectors = -(-len(mini_stream) // SECTOR)
    first_dir, first_minifat = 1, 1 + dir_sectors
    first_stream = first_minifat + minifat_sectors
    fat = [FAT_SECTOR]
    for first, count in ((first_dir, dir_sectors), (first_minifat, minifat_sectors), (first_stream, stream_sectors)):
        fat += [first + i + 1 for i in range(count - 1)] + [END]
    if len(fat) > SECTOR // 4:
        raise ValueError("message too large for this minimal writer")
    directory = _entry("Root Entry", 5, child=1, start=first_stream, size=len(mini_stream))
    for n, (name, data) in enumerate(streams, start=1):
        right = n + 1 if n < len(streams) else NONE
        directory += _entry(name, 2, right=right, start=starts[n - 1], size=len(data))
    directory = directory.ljust(dir_sectors * SECTOR, b"\0")
    body = (_pack_u32(fat, SECTOR, FREE) + directory + _pack_u32(mini_fat, minifat_sectors * SECTOR, FREE)
            + mini_stream.ljust(stream_sectors * SECTOR, b"\0"))
    return _header(first_dir, first_minifat, minifat_sectors) + body


def _header(first_dir: int, first_minifat: int, minifat_sectors: int) -> bytes:
    header = MAGIC + bytes(16) + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6) + bytes(6)
    header += struct.pack("<IIIIIIIII", 0, 1, first_dir, 0, 4096,
                          first_minifat if minifat_sectors else END, minifat_sectors, END, 0)
    return header + struct.pack("<I", 0) + struct.pack("<I", FREE) * 108


def _entry(name: str, kind: int, *, left: int = NONE, right: int = NONE, child: int = NONE,
           start: int = END, size: int = 0) -> bytes:
    encoded = (name + "\0").encode("utf-16-le")
    fixed = struct.pack("<HBBIII", len(encoded), kind, 1, left, right, child)
    return encoded.ljust(64, b"\0") + fixed + bytes(16 + 4 + 16) + struct.pack("<III", start, size, 0)


def _pack_u32(values: list[int], length: int, fill: int) -> bytes:
    """``values`` as little-endian u32, padded with ``fill`` to ``length`` bytes."""
    return struct.pack(f"<{len(values)}I", *values) + struct.pack("<I", fill) * (length // 4 - len(values))
