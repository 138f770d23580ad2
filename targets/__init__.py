"""The Luigi targets of docketeer's tasks, under the name the design gives them.

They live with the engine that writes and reads them (``pipeline/engine/targets.py``); this
package re-exports them, so ``from targets import SealedDocketTarget`` keeps working.
"""

from pipeline.engine.targets import DocketTarget, FingerprintTarget, SealedDocketTarget

__all__ = ["DocketTarget", "FingerprintTarget", "SealedDocketTarget"]
