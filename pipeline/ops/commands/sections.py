"""``docketeer sections DOCUMENT``: a rule document's sections (parts, subparts, CFR sections,
questions) with the comments citing each and the comments nearest each. The reading module is
imported inside the command: it brings peewee, which ``docketeer --help`` does without."""

from __future__ import annotations

import json
import sys

from pipeline.ops.commands.command_line import command, open_runtime, table

HEADING_SHOWN = 70


def register(commands) -> None:
    sections = commands.add_parser("sections", help="a rule document's sections (parts, questions, CFR sections) and "
                                                    "how many comments cite each or are nearest to it")
    sections.add_argument("document", help="the document id (e.g. ACF-2025-0038-0001)")
    sections.add_argument("--json", action="store_true",
                          help="one JSON document: each section's id, heading, page, parent, comments citing it "
                               "(cited_by) and nearest to it (nearest), and the submissions they stand for")


@command
def cmd_sections(args) -> int:
    from pipeline.reading import documents
    from pipeline.reading import sections as queries

    open_runtime()
    facts = documents.find_document(args.document)
    if facts is None or facts.item.kind != "document":
        what = "not a document" if facts is not None else "unknown document"
        print(f"docketeer sections: {what}: {args.document}", file=sys.stderr)
        return 2
    found = queries.document_sections(args.document)
    message = _message(found, facts)
    if args.json:
        print(json.dumps({"document": args.document, "message": message, "sections": [
            {"id": s.id, "heading": s.heading, "page": s.page, "parent": s.parent, "kind": s.kind,
             "cited_by": s.cited_by, "nearest": s.nearest, "cited_by_submissions": s.submissions["cited"],
             "nearest_submissions": s.submissions["nearest"],
             "topics": [{"label": label, "comments": n} for label, n in s.top_topics()],
             "positions": dict(sorted(s.positions.items()))} for s in found.sections],
            "unmatched_citations": [{"comment": c, "citation": w, "sentence": e} for c, w, e in found.unmatched]},
            indent=1))
        return 0
    if not found.sections:
        print(message)
        return 0
    rows = [[s.id, ("  " * s.depth + s.heading)[:HEADING_SHOWN], s.page or "", s.cited_by, s.nearest]
            for s in found.sections]
    print(table(rows, ["section", "heading", "page", "cited by", "nearest"]))
    print("cited by: comments citing the section (\"§ 200.1\", \"question 3\", \"II.B\"); nearest: comments with "
          "a passage nearest it")
    if found.unmatched:
        print(f"\n{len(found.unmatched)} citation(s) matching no section:")
        for comment, written, _ in found.unmatched[:20]:
            print(f"  {comment}: {written}")
    return 0


def _message(found, facts) -> str:
    """'' when the document has sections; else why not, in one line."""
    if found.sections:
        return ""
    if found.state == "skipped":
        return f"no sections: {found.reason}"
    extract = facts.extract
    if extract is not None and extract.state != "ok":
        return f"no sections: its text was not extracted (extract {extract.state})"
    return "no sections yet (luigi --module pipeline DocumentSectionsAll splits it)"
