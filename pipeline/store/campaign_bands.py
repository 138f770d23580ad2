"""A compared member's LSH band keys: what lets a later run find it with one indexed read.

The run's own ``MinHashLSH`` buckets a signature by the bytes of each band (a run of
``r`` hash values). What is stored for a later run is one 64-bit integer per band, made in
numpy for every member at once: each hash value times a fixed odd multiplier of its
position, summed over the band (wrapping at 2**64), then SplitMix64's finaliser. Two
different bands meet on one key with a chance of about 2**-64, as the truncated SHA-256
text keys of schema v17 did; a key carries no text, so its row and index entry are small.

A member's row keeps how its keys were made (``banding``), not the keys: removing it makes
them again from its signature. Numpy and hashlib only: the state DB's upgrade
(``pipeline.store.db``) rekeys stored members with it, without loading datasketch.

The keys are how the ``campaign_band`` table is keyed, a stored format: so they live with
the store, which both the campaigns stage and that upgrade use (a store module imports no
stage). Changing how a key is made is a schema upgrade of its own.
"""

from __future__ import annotations

import hashlib

import numpy as np

# One odd multiplier per hash position (up to 1,024 permutations), fixed by their seed text
# so that every run and every host makes the same keys.
_MULTIPLIERS = np.frombuffer(hashlib.shake_256(b"docketeer campaign band keys").digest(8 * 1024),
                             dtype="<u8").astype(np.uint64) | np.uint64(1)
_MIX = (np.uint64(30), np.uint64(0xBF58476D1CE4E5B9), np.uint64(27), np.uint64(0x94D049BB133111EB),
        np.uint64(31))


# Why not datasketch's own band bytes: docs/BENCHMARKS.md, "Written by hand beside a library".
def band_keys(signatures: np.ndarray, hashranges: list[tuple[int, int]]) -> np.ndarray:
    """The band keys of each row of ``signatures`` (n rows of hash values): an (n, bands)
    int64 array, the bands being ``hashranges`` as the LSH splits a signature (contiguous,
    from position 0)."""
    starts = [start for start, _ in hashranges]
    if [end for _, end in hashranges[:-1]] != starts[1:] or starts[0] != 0:
        raise ValueError(f"band ranges are not contiguous from 0: {hashranges}")
    end = hashranges[-1][1]
    signatures = np.asarray(signatures)
    weighted = signatures[:, :end].astype(np.uint64) * _MULTIPLIERS[:end]
    summed = np.add.reduceat(weighted, starts, axis=1)  # uint64 sums wrap at 2**64, as meant
    s1, m1, s2, m2, s3 = _MIX
    summed ^= summed >> s1
    summed *= m1
    summed ^= summed >> s2
    summed *= m2
    summed ^= summed >> s3
    return summed.view(np.int64)


def banding(hashranges: list[tuple[int, int]]) -> str:
    """The bands a member's keys were made with, as its row keeps them ("25x5": 25 bands of
    5 hash values): its keys are made again from its signature when it is removed, even
    after the threshold (and with it the bands) changed."""
    widths = {end - start for start, end in hashranges}
    if len(widths) != 1 or hashranges[0][0] != 0:
        raise ValueError(f"bands of unequal widths: {hashranges}")
    return f"{len(hashranges)}x{widths.pop()}"


def stored_keys(signatures: list[str], made_with: str) -> np.ndarray:
    """The band keys of stored signatures (hex of their uint32 hash values, as the member
    rows keep them), made with the bands ``made_with`` (``banding``)."""
    bands, width = (int(n) for n in made_with.split("x"))
    values = np.stack([np.frombuffer(bytes.fromhex(s), dtype=np.uint32) for s in signatures])
    return band_keys(values, [(band * width, (band + 1) * width) for band in range(bands)])


def hashranges_of_v17(signature_hex: str, band_zero_key: str, bands: int, num_perm: int,
                      width: int) -> list[tuple[int, int]] | None:
    """The LSH bands a schema v17 store was keyed with, found from one member's signature
    and its band 0 key (``0:`` and the first 16 hex digits of the SHA-256 of the band's
    bytes): the threshold they came from is a setting the store does not keep. None when no
    band width gives that key."""
    raw = bytes.fromhex(signature_hex)
    digest = band_zero_key.partition(":")[2]
    for r in range(1, num_perm // bands + 1):
        if hashlib.sha256(raw[:r * width]).hexdigest()[:16] == digest:
            return [(band * r, (band + 1) * r) for band in range(bands)]
    return None
