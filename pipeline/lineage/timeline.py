"""A rule's timeline, read from the store: its dockets, each document with its phase, posted
date and comment window (Eastern dates), and the comments each document and phase drew. The
one read of ``docketeer rule``, the docket page and the export's ``rule_phases``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pipeline.clock import eastern_date
from pipeline.lineage import queries
from pipeline.lineage.phases import ORDER, UNKNOWN, phase_of
from pipeline.store.documents import documents_of


@dataclass(frozen=True)
class Step:
    docket: str
    document: str
    document_type: str | None
    phase: str
    posted: str  # Eastern date
    window_start: str | None
    window_end: str | None  # the deadline's day, Eastern
    fr_doc_num: str | None
    comments: int


@dataclass
class Timeline:
    name: str  # what was asked: a RIN or a docket
    rin: str | None
    dockets: list[str]
    steps: list[Step] = field(default_factory=list)
    phases: dict[str, int] = field(default_factory=dict)  # phase -> comments, in timeline order

    def as_json(self) -> dict:
        return {"rule": self.name, "rin": self.rin, "dockets": self.dockets,
                "documents": [asdict(s) for s in self.steps],
                "phases": [{"phase": p, "comments": n} for p, n in self.phases.items()]}


def timeline(name: str) -> Timeline | None:
    """The rule a RIN or a docket id names; None when it names nothing known."""
    rin, dockets = queries.rule_dockets(name)
    if not dockets:
        return None
    per_document = queries.comments_per_document(dockets)
    steps = [Step(d.docket, d.document, d.document_type, phase_of(d.document_type), eastern_date(d.posted_at),
                  d.start, d.end, d.fr_doc_num, per_document.get(d.document, 0))
             for d in documents_of(dockets)]
    per_phase = queries.comments_per_phase(dockets)
    # Phases in the order their first document was posted, then any that only comments name.
    order = list(dict.fromkeys(s.phase for s in steps))
    order += [p for p in sorted(per_phase, key=lambda p: (ORDER.index(p) if p in ORDER else len(ORDER), p))
              if p not in order]
    phases = {p: per_phase.get(p, 0) for p in order if p != UNKNOWN or per_phase.get(p)}
    return Timeline(name, rin, dockets, steps, phases)


def lines(t: Timeline) -> list[str]:
    """The timeline as people read it on a terminal."""
    out = [f"rule {t.rin or '(no RIN)'}: {len(t.dockets)} docket(s): {', '.join(t.dockets)}", ""]
    for s in t.steps:
        window = f"comments {s.window_start or '?'} to {s.window_end or '?'}" if s.window_start or s.window_end \
            else "no comment window"
        fr = f"FR {s.fr_doc_num}" if s.fr_doc_num else "no FR number"
        out.append(f"{s.posted or '?':10}  {s.phase:10}  {s.document}  {s.document_type or 'type unknown'}; "
                   f"{window}; {fr}; {s.comments} comment(s)")
    out += ["", "comments per phase: " + (", ".join(f"{p} {n}" for p, n in t.phases.items()) or "none tied yet")]
    return out
