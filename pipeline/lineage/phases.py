"""A document's place in a rule's life: its phase, from the type its record gives."""

from __future__ import annotations

# regulations.gov's document types and the phase of the rule each stands for. A comment on a
# "Rule" (an interim final rule's, or a final rule's comment period) answers the final rule.
PHASE_OF_TYPE = {
    "Proposed Rule": "proposed",
    "Rule": "final",
    "Notice": "notice",
    "Supporting & Related Material": "supporting",
    "Other": "other",
}
UNKNOWN = "unknown"  # a document whose type the store does not hold, or no document at all
# The order phases are listed in when they tie on date.
ORDER = ("notice", "proposed", "final", "supporting", "other", UNKNOWN)
NAMES = {"proposed": "Proposed Rule", "final": "Rule", "notice": "Notice",
         "supporting": "Supporting & Related Material", "other": "Other", UNKNOWN: "unknown"}


def phase_of(document_type: str | None) -> str:
    if not document_type:
        return UNKNOWN
    return PHASE_OF_TYPE.get(document_type.strip(), document_type.strip().lower())


class BadPhases(ValueError):
    """A list of phases people gave that names one this store does not know."""


def parse_phases(given: str) -> list[str]:
    """``proposed,final`` -> ["proposed", "final"]; a phase not known is BadPhases."""
    phases = [p.strip().lower() for p in given.split(",") if p.strip()]
    unknown = [p for p in phases if p not in ORDER]
    if not phases or unknown:
        raise BadPhases(f"unknown phase {', '.join(unknown) or '(none given)'}: "
                        f"choose from {', '.join(ORDER)}")
    return list(dict.fromkeys(phases))
