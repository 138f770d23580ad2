"""Luigi targets whose ``exists()`` is one indexed read of the state (or index) DB.

* ``SealedDocketTarget``: the docket is sealed and the stage recorded completion under that
  same seal at a version >= the one asked. Unseal or reseal changes ``sealed_at`` and so
  invalidates it.
* ``FingerprintTarget``: the docket is open, was pulled in the current freshness window, and
  the stage's recorded input fingerprint equals its upstream's current output fingerprint,
  at a version >= the one asked.
* Either way, a stage after fetch is incomplete once the docket's earliest next attempt of
  an item waiting to retry has come (``retry_due``): items that wait never block a marker,
  and the marker never hides them past their time.

Both check and write through the stage's marker store (``pipeline.store.markers``), as
Luigi's own ``PostgresTarget`` does with its marker table: ``exists()`` reads one ``Probe``
and applies the rules below (plain functions, tested without a database), ``touch()``
records the marker.
"""

from __future__ import annotations

import luigi

from pipeline.clock import iso, utcnow
from pipeline.store import dockets as docket_rows
from pipeline.store.markers import MarkerStore, Probe


def retry_due(probe: Probe, now: str) -> bool:
    """An item of the docket waits to retry and its time has come."""
    return probe.retry_due_at is not None and probe.retry_due_at <= now


def sealed_complete(probe: Probe, version: int, now: str = "", has_upstream: bool = False) -> bool:
    return (
        probe.docket_exists
        and probe.docket_sealed_at is not None
        and probe.marker_version is not None
        and probe.marker_version >= version
        and probe.marker_sealed_at == probe.docket_sealed_at
        and not (has_upstream and now and retry_due(probe, now))
    )


def fingerprint_complete(probe: Probe, version: int, window_start: str, has_upstream: bool,
                         now: str = "") -> bool:
    if not probe.docket_exists or probe.docket_sealed_at is not None:
        return False
    if has_upstream and now and retry_due(probe, now):
        return False
    if probe.marker_version is None or probe.marker_version < version:
        return False
    # Luigi checks downstream first and prunes upstream of a complete task: without this,
    # a finished index would stop fetch from ever pulling the open docket again.
    if probe.last_pull_at is None or probe.last_pull_at < window_start:
        return False
    if has_upstream:
        return probe.upstream_output is not None and probe.marker_input == probe.upstream_output
    return True


def probed_complete(probe: Probe, version: int, window_start: str, has_upstream: bool,
                    now: str) -> bool:
    """The stage is done for the docket, whichever its seal says now: the rule a wrapper
    applies to the probes it reads in bulk, and a target to the one it reads alone."""
    if probe.docket_sealed_at is not None:
        # A sealed docket, or one fetch sealed during this run (at the end of a clean walk):
        # only a marker recorded under that seal counts.
        return sealed_complete(probe, version, now, has_upstream)
    return fingerprint_complete(probe, version, window_start, has_upstream, now)


class DocketTarget(luigi.Target):
    """One stage's completion for one docket, read and written through its marker store."""

    def __init__(self, docket: str, version: int, store: MarkerStore, *, has_upstream: bool) -> None:
        self.docket, self.version, self.store = docket, version, store
        self.has_upstream = has_upstream

    def touch(self, *, input_fingerprint: str | None, run_id: str,
              kept_output: str | None = None) -> None:
        """Record the stage done for the docket at this version, vouching for that input
        (``kept_output``: the store's held output, when the run wrote no item row)."""
        sealed_at = docket_rows.require_docket(self.docket).sealed_at  # fetch may have sealed it
        self.store.write(self.docket, version=self.version, sealed_at=sealed_at,
                         input_fingerprint=input_fingerprint, run_id=run_id,
                         kept_output=kept_output)


class SealedDocketTarget(DocketTarget):
    def exists(self) -> bool:
        return sealed_complete(self.store.probe(self.docket), self.version, iso(utcnow()),
                               self.has_upstream)

    def __repr__(self) -> str:
        return f"SealedDocketTarget({self.docket}, {self.store.stage}, v{self.version})"


class FingerprintTarget(DocketTarget):
    def __init__(self, docket: str, version: int, store: MarkerStore, *, window_start: str,
                 has_upstream: bool) -> None:
        super().__init__(docket, version, store, has_upstream=has_upstream)
        self.window_start = window_start

    def exists(self) -> bool:
        return probed_complete(self.store.probe(self.docket), self.version, self.window_start,
                               self.has_upstream, iso(utcnow()))

    def __repr__(self) -> str:
        return (f"FingerprintTarget({self.docket}, {self.store.stage}, v{self.version}, "
                f"{self.window_start})")
