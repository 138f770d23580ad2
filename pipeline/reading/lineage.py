"""A rule as people read it, from the lineage stage's rows: its timeline (its dockets, each
document with its phase, posted date and comment window, Eastern dates, and the comments each
document and phase drew: the one read of ``docketeer rule``, the docket page and the export's
``rule_phases``), the organisations that commented in every phase named, each comment's tie
(the export). The lineage stage's phases are reached from here by the pages and the commands."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from peewee import fn

from pipeline.clock import eastern_date
from pipeline.lineage.phases import ORDER, UNKNOWN, BadPhases, parse_phases, phase_of
from pipeline.lineage.queries import ties_among, ties_of
from pipeline.store.documents import documents_of
from pipeline.store.models import Docket, LineageComment, LineageLink

__all__ = ["BadPhases", "Step", "Timeline", "comments_per_document", "comments_per_phase", "docket_ties",
           "lines", "organisations_in_every_phase", "parse_phases", "phase_of", "rule_dockets", "ties_among",
           "timeline"]


def rule_dockets(name: str) -> tuple[str | None, list[str]]:
    """(the rule's RIN, its dockets) for a RIN or a docket id: the docket and those linked to
    it; (None, []) when neither names anything known."""
    name = name.strip()
    by_rin = [d for (d,) in Docket.select(Docket.id).where(Docket.rin == name.upper()).order_by(Docket.id).tuples()]
    if by_rin:
        return name.upper(), by_rin
    docket = Docket.get_or_none(Docket.id == name)
    if docket is None:
        return None, []
    linked = {o for (o,) in LineageLink.select(LineageLink.other).where(LineageLink.docket == name).tuples()}
    if docket.rin:
        linked |= {d for (d,) in Docket.select(Docket.id).where(Docket.rin == docket.rin).tuples()}
    return docket.rin, sorted({name, *linked})


def comments_per_document(dockets: list[str]) -> dict[str | None, int]:
    if not dockets:
        return {}
    return dict(LineageComment.select(LineageComment.document, fn.COUNT(LineageComment.item))
                .where(LineageComment.docket.in_(dockets)).group_by(LineageComment.document).tuples())


def comments_per_phase(dockets: list[str]) -> dict[str, int]:
    if not dockets:
        return {}
    return dict(LineageComment.select(LineageComment.phase, fn.COUNT(LineageComment.item))
                .where(LineageComment.docket.in_(dockets)).group_by(LineageComment.phase).tuples())


def organisations_in_every_phase(dockets: list[str], phases: list[str]) -> list[tuple[str, str, dict[str, int]]]:
    """(organisation id, name, phase -> comments) for the organisations that commented in
    every one of ``phases`` of the rule's dockets, most comments first."""
    from pipeline.store.models import Organisation, OrganisationMember

    if not dockets or not phases:
        return []
    query = (LineageComment.select(OrganisationMember.organisation, Organisation.name, LineageComment.phase,
                                   fn.COUNT(LineageComment.item))
             .join(OrganisationMember, on=(OrganisationMember.item == LineageComment.item))
             .join(Organisation, on=(Organisation.id == OrganisationMember.organisation))
             .where(LineageComment.docket.in_(dockets) & LineageComment.phase.in_(phases))
             .group_by(OrganisationMember.organisation, Organisation.name, LineageComment.phase).tuples())
    found: dict[str, tuple[str, dict[str, int]]] = {}
    for org, name, phase, n in query:
        found.setdefault(org, (name, {}))[1][phase] = n
    every = [(org, name, counts) for org, (name, counts) in found.items() if all(p in counts for p in phases)]
    return sorted(every, key=lambda o: (-sum(o[2].values()), o[1].lower(), o[0]))


def docket_ties(docket_id: str) -> dict[str, tuple[str | None, str]]:
    """comment -> (document answered, phase), for the export."""
    return ties_of(docket_id)


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
    rin, dockets = rule_dockets(name)
    if not dockets:
        return None
    per_document = comments_per_document(dockets)
    steps = [Step(d.docket, d.document, d.document_type, phase_of(d.document_type), eastern_date(d.posted_at),
                  d.start, d.end, d.fr_doc_num, per_document.get(d.document, 0))
             for d in documents_of(dockets)]
    per_phase = comments_per_phase(dockets)
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
