"""Write a minimal Outlook ``.msg`` file, for tests and benchmarks: no maintained library
writes MSG (``extract-msg`` only reads), so this builds the OLE2 compound file itself.

An MSG is a compound file (MS-CFB) whose streams hold the message's properties
(MS-OXMSG): ``__substg1.0_<tag>`` streams for strings (UTF-16LE, type ``001F``) and
``__properties_version1.0`` for fixed-size ones (here the submit time). Every stream here
under 4096 bytes lives in the mini stream (64-byte mini sectors) that the root entry
holds, a longer one in regular sectors; the directory is a chain of right siblings
(readers do not require the red-black balance).
"""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from pathlib import Path

SECTOR = 512
MINI = 64
CUTOFF = 4096  # streams shorter than this live in the mini stream
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
    """Streams under 4096 bytes go to the mini stream (64-byte mini sectors, held by the root
    entry), longer ones (a long body) to regular 512-byte sectors, as MS-CFB requires."""
    mini_stream, mini_fat, big, starts = b"", [], [], []
    for _name, data in streams:
        if len(data) >= CUTOFF:
            starts.append(("big", len(big)))
            big.append(data)
            continue
        first = len(mini_stream) // MINI
        count = max(1, -(-len(data) // MINI))
        starts.append(("mini", first))
        mini_fat += [first + i + 1 for i in range(count - 1)] + [END]
        mini_stream += data.ljust(count * MINI, b"\0")
    dir_sectors = -(-(1 + len(streams)) // 4)
    minifat_sectors = -(-len(mini_fat) * 4 // SECTOR)
    chains = [dir_sectors, minifat_sectors, -(-len(mini_stream) // SECTOR)]
    chains += [-(-len(data) // SECTOR) for data in big]
    fat_sectors = 1
    while fat_sectors * SECTOR // 4 < fat_sectors + sum(chains):
        fat_sectors += 1
    if fat_sectors > 109:
        raise ValueError("message too large for this minimal writer (no DIFAT)")
    fat, firsts = [FAT_SECTOR] * fat_sectors, []
    for count in chains:
        firsts.append(len(fat) if count else END)
        fat += [len(fat) + i + 1 for i in range(count - 1)] + ([END] if count else [])
    first_dir, first_minifat, first_mini_stream, *first_big = firsts
    directory = _entry("Root Entry", 5, child=1, start=first_mini_stream, size=len(mini_stream))
    for n, ((name, data), (where, index)) in enumerate(zip(streams, starts, strict=True), start=1):
        right = n + 1 if n < len(streams) else NONE
        start = first_big[index] if where == "big" else index
        directory += _entry(name, 2, right=right, start=start, size=len(data))
    body = (_pack_u32(fat, fat_sectors * SECTOR, FREE) + directory.ljust(dir_sectors * SECTOR, b"\0")
            + _pack_u32(mini_fat, minifat_sectors * SECTOR, FREE)
            + b"".join(_sectors(data) for data in (mini_stream, *big)))
    return _header(fat_sectors, first_dir, first_minifat, minifat_sectors) + body


def _sectors(data: bytes) -> bytes:
    return data.ljust(-(-len(data) // SECTOR) * SECTOR, b"\0")


def _header(fat_sectors: int, first_dir: int, first_minifat: int, minifat_sectors: int) -> bytes:
    header = MAGIC + bytes(16) + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6) + bytes(6)
    header += struct.pack("<IIIIIIIII", 0, fat_sectors, first_dir, 0, CUTOFF,
                          first_minifat if minifat_sectors else END, minifat_sectors, END, 0)
    # The FAT sectors are the first ones: their numbers fill the header's DIFAT array.
    return header + struct.pack(f"<{fat_sectors}I", *range(fat_sectors)) + struct.pack("<I", FREE) * (109 - fat_sectors)


def _entry(name: str, kind: int, *, left: int = NONE, right: int = NONE, child: int = NONE,
           start: int = END, size: int = 0) -> bytes:
    encoded = (name + "\0").encode("utf-16-le")
    fixed = struct.pack("<HBBIII", len(encoded), kind, 1, left, right, child)
    return encoded.ljust(64, b"\0") + fixed + bytes(16 + 4 + 16) + struct.pack("<III", start, size, 0)


def _pack_u32(values: list[int], length: int, fill: int) -> bytes:
    """``values`` as little-endian u32, padded with ``fill`` to ``length`` bytes."""
    return struct.pack(f"<{len(values)}I", *values) + struct.pack("<I", fill) * (length // 4 - len(values))
