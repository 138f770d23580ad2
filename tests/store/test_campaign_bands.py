"""The stored band keys bucket members as datasketch's MinHashLSH does: two signatures share
a band's key exactly when the LSH puts them in one bucket of that band (its key is the
band's bytes, ``MinHashLSH._H``)."""

from __future__ import annotations

import numpy as np
from datasketch import MinHashLSH

from pipeline.campaigns import grouping
from pipeline.store.campaign_bands import band_keys


def test_band_keys_meet_where_datasketchs_buckets_do():
    rng = np.random.default_rng(20261207)
    for threshold in (0.3, 0.5, 0.8):
        lsh = MinHashLSH(num_perm=grouping.NUM_PERM, params=grouping.lsh_params(threshold))
        base = rng.integers(0, 2**32, size=grouping.NUM_PERM, dtype=np.uint64)
        # copies of one signature, each with a few values changed: some bands kept, some not
        signatures = np.tile(base, (200, 1))
        for row in signatures[1:]:
            row[rng.choice(grouping.NUM_PERM, size=rng.integers(1, 12), replace=False)] = rng.integers(0, 2**32)
        keys = band_keys(signatures, lsh.hashranges)
        buckets = [[lsh._H(s[start:end]) for start, end in lsh.hashranges] for s in signatures]
        shared = 0
        for band in range(len(lsh.hashranges)):
            for other in range(1, len(signatures)):
                same_bucket = buckets[0][band] == buckets[other][band]
                assert (keys[0, band] == keys[other, band]) == same_bucket
                shared += same_bucket
        assert 0 < shared < len(lsh.hashranges) * (len(signatures) - 1)  # both kinds met
