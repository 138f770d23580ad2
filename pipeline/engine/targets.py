"""Luigi targets whose ``exists()`` is one indexed read of the state (or index) DB.

* ``SealedDocketTarget``: for a sealed docket; ``FingerprintTarget``: for an open one.
  Both apply the one rule of ``pipeline.engine.completion`` to the ``Probe`` their stage's
  marker store reads: the marker's version, its input under the current settings, the seal
  it was recorded under (sealed) or the docket's pull in this freshness window (open), the
  stage's own output, and no retry due. The wrappers judge every docket by the same rule
  in SQL, so a wrapper and a task never disagree on "done".

Both check and write through the stage's marker store (``pipeline.engine.markers``), as
Luigi's own ``PostgresTarget`` does with its marker table: ``exists()`` reads one ``Probe``
and applies the rule, ``touch()`` records the marker.
"""

from __future__ import annotations

import luigi

from pipeline.clock import iso, utcnow
from pipeline.engine.completion import is_done
from pipeline.engine.markers import MarkerStore
from pipeline.store import dockets as docket_rows


class DocketTarget(luigi.Target):
    """One stage's completion for one docket, read and written through its marker store."""

    def __init__(self, docket: str, version: int, store: MarkerStore, *, window_start: str) -> None:
        # The window counts only while the docket is open (the rule reads the seal when asked).
        self.docket, self.version, self.store = docket, version, store
        self.window_start = window_start

    def exists(self) -> bool:
        return is_done(self.store.probe(self.docket), self.store.completion, self.version,
                       self.window_start, iso(utcnow()))

    def touch(self, *, input_fingerprint: str | None, run_id: str,
              kept_output: str | None = None) -> None:
        """Record the stage done for the docket at this version, vouching for that input
        (``kept_output``: the store's held output, when the run wrote no item row)."""
        sealed_at = docket_rows.require_docket(self.docket).sealed_at  # fetch may have sealed it
        self.store.write(self.docket, version=self.version, sealed_at=sealed_at,
                         input_fingerprint=input_fingerprint, run_id=run_id,
                         kept_output=kept_output)


class SealedDocketTarget(DocketTarget):
    """A sealed docket's stage: done under the docket's current seal (whichever its seal
    says when asked: fetch may seal a docket during the run that asked)."""

    def __repr__(self) -> str:
        return f"SealedDocketTarget({self.docket}, {self.store.stage}, v{self.version})"


class FingerprintTarget(DocketTarget):
    """An open docket's stage: done while the docket's pull is in this window."""

    def __repr__(self) -> str:
        return (f"FingerprintTarget({self.docket}, {self.store.stage}, v{self.version}, "
                f"{self.window_start})")
