"""What the visualiser's status line says: a phase while the model loads, an ETA only once
items have moved, measured from when they started to."""

from __future__ import annotations

from pipeline.engine.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_loading_model_is_said_and_the_eta_counts_from_the_first_items():
    clock, said = Clock(), []
    progress = Progress("index D", every=0, on_status=said.append, clock=clock)
    progress.start(34)
    assert said[-1] == "index D: 0/34 0%"  # no rate, no ETA: nothing has moved yet
    progress.phase("loading model")
    assert said[-1] == "index D: 0/34 0% loading model"
    clock.now = 120.0  # two minutes of model loading
    progress.phase(None)
    clock.now = 122.0
    progress.advance("embedded", 2)
    assert said[-1] == "index D: 2/34 5% 1.0/s ETA 32s embedded=2"
