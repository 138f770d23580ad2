"""What a docket's positions must agree on while its positions marker says done (``docketeer
verify`` asks): a member row for each comment whose positions state is ``ok`` and none for
another, every member's position a known one with a probability in [0, 1], a coded member
with a stored code, model predictions only while the docket has a fitted classifier, and a
judge's position with the judge's answer and evidence beside it."""

from __future__ import annotations

from pipeline.positions.codes import POSITIONS
from pipeline.store import item_states
from pipeline.store.models import PositionCode, PositionMember, PositionModel

STAGE = "positions"


def problems(docket_id: str) -> list[str]:
    """One line per disagreement between the docket's position rows and its item states."""
    members = list(PositionMember.select().where(PositionMember.docket == docket_id))
    found = item_states.ok_without_rows(STAGE, docket_id, {m.item for m in members},
                                        "positions state ok but no position member row",
                                        "a position member row without a positions state ok")
    codes = {k for (k,) in PositionCode.select(PositionCode.item).where(PositionCode.docket == docket_id).tuples()}
    model = PositionModel.get_or_none(PositionModel.docket == docket_id)
    fitted = model is not None and bool(model.model)
    for m in members:
        if m.position not in POSITIONS:
            found.append(f"{m.item}: unknown position {m.position!r}")
        if not 0.0 <= m.probability <= 1.0:
            found.append(f"{m.item}: probability {m.probability:g} outside [0, 1]")
        if m.source == "coded" and m.item not in codes:
            found.append(f"{m.item}: a coded position, but no code of it is stored")
        if m.source == "model" and not fitted:
            found.append(f"{m.item}: a model position, but the docket has no fitted classifier")
        if m.source == "llm" and (m.judged != m.position or not m.evidence):
            found.append(f"{m.item}: a language model's position without its answer and evidence")
    return found
