"""What a docket's sections rows must agree on while its sections marker says done
(``docketeer verify`` asks): sections for each document whose sections state is ``ok`` and
none for another; links only from comments whose state is ``ok``, each to a stored section
of its document (a citation may name none: unmatched)."""

from __future__ import annotations

from pipeline.store import item_states
from pipeline.store.models import DocumentSection, Item, SectionLink

STAGE = "sections"


def problems(docket_id: str) -> list[str]:
    """One line per disagreement between the docket's sections rows and its item states."""
    documents = {key for (key,) in Item.select(Item.key).where(
        (Item.docket == docket_id) & (Item.kind == "document")).tuples()}
    split = {d for (d,) in DocumentSection.select(DocumentSection.document).distinct()
             .where(DocumentSection.docket == docket_id).tuples()}
    states = item_states.states_for_docket(STAGE, docket_id)
    ok_documents = {k for k, row in states.items() if row.state == "ok" and k in documents}
    found = [f"{k}: sections state ok but no section rows" for k in sorted(ok_documents - split)]
    found += [f"{k}: section rows without a sections state ok" for k in sorted(split - ok_documents)]
    known = set(DocumentSection.select(DocumentSection.document, DocumentSection.section)
                .where(DocumentSection.docket == docket_id).tuples())
    for comment, document, section in (SectionLink.select(SectionLink.comment, SectionLink.document,
                                                          SectionLink.section)
                                       .where(SectionLink.docket == docket_id).tuples()):
        row = states.get(comment)
        if row is None or row.state != "ok":
            found.append(f"{comment}: a section link without a sections state ok")
        elif section is not None and (document, section) not in known:
            found.append(f"{comment}: linked to {document} {section}, which has no such section")
    return sorted(set(found))
