"""What a docket's lineage rows must agree on while its lineage marker says done
(``docketeer verify`` asks): a tie for each comment with a lineage state, naming a
document exactly when that state is ``ok``, and no tie without a state."""

from __future__ import annotations

from pipeline.store import item_states
from pipeline.store.models import LineageComment

STAGE = "lineage"


def problems(docket_id: str) -> list[str]:
    """One line per disagreement between the docket's comment ties and its item states."""
    ties = dict(LineageComment.select(LineageComment.item, LineageComment.document)
                .where(LineageComment.docket == docket_id).tuples())
    # A docket's asks of the Federal Register have state rows of their own, and no tie.
    states = {key: row.state for key, row in item_states.states_for_docket(STAGE, docket_id).items()
              if not key.startswith(f"{docket_id}/fr-")}
    found = [f"{key}: lineage state {state} but no tie" for key, state in sorted(states.items()) if key not in ties]
    found += [f"{key}: a tie without a lineage state" for key in sorted(ties.keys() - states.keys())]
    found += [f"{key}: lineage state {state} but the tie {'names' if ties[key] else 'names no'} document"
              for key, state in sorted(states.items())
              if key in ties and state in ("ok", "skipped") and (state == "ok") != (ties[key] is not None)]
    return found
