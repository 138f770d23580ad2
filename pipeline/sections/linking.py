"""A comment's ties to the sections of the document it answers, two kinds kept apart:

* cited: each citation the comment makes ("§ 200.1", "question 3", "II.B"), found and matched
  by ``pipeline.sections.citations``; one it makes that no section matches is kept as written,
  with no section (unmatched), so a reader sees what the commenter pointed at;
* nearest: each of the comment's passages (the index's chunks and vectors, no second
  embedding) to the section holding the document's passage most like it, when the cosine is at
  least ``section_nearest_floor``; one link per section, its best passage as evidence.

Pure functions of texts and vectors; the stage reads and writes the stores.
"""

from __future__ import annotations

import re

EVIDENCE_CHARS = 400
_WORD = re.compile(r"\S+")


def cited_links(text: str, sections: list) -> list[dict]:
    """{"section" (None: unmatched), "citation" (as written), "evidence" (its sentence)} for each
    citation of the document in the comment's text (another law's, "42 U.S.C. 1395", is not
    one), each citation and section once."""
    from pipeline.sections import citations

    found, seen = [], set()
    for citation in citations.find_citations(text, **document_facts(sections)):
        if citation.kind == "external":
            continue
        section = citations.match_citation(citation, sections)
        if (citation.written, section) in seen:
            continue
        seen.add((citation.written, section))
        found.append({"section": section, "citation": citation.written,
                      "evidence": citation.sentence[:EVIDENCE_CHARS]})
    return found


def document_facts(sections: list) -> dict:
    """What the document tells the citation finder: its numbered questions (number -> text),
    when it asks any, and the CFR parts its sections amend ("§200.1" -> "200")."""
    questions = {s.id[1:]: s.text for s in sections if s.id.startswith("q") and "~" not in s.id}
    parts = {s.id[1:].split(".")[0] for s in sections if s.id.startswith("§")}
    parts |= {s.id[4:] for s in sections if s.id.startswith("Part")}
    return {"questions": questions or None, "cfr_parts": sorted(parts)}


def passage_sections(passages: list[str], sections: list) -> list[str | None]:
    """The section each of a document's indexed passages falls in: the one most of its words
    are found in, by windows of eight (None: none found). The index's chunks keep the printer's
    lines the splitter drops, and a chunk may straddle two sections. The other documents of a
    Federal Register page are not the document's: a passage is never placed in one of them."""
    from collections import Counter

    flat, starts, ids = _flattened(sections)
    skipped = {s.id for s in sections if getattr(s, "kind", "") == "other"}
    found = []
    for passage in passages:
        words = _WORD.findall(passage)
        votes: Counter = Counter()
        for first in range(0, len(words), 8):
            window = words[first:first + 8]
            if len(window) < 4 and first:  # a short tail says little on its own
                break
            probe = " ".join(window)
            at = flat.find(probe)
            if at >= 0 and (section := ids[_last_at_or_before(starts, at)]) not in skipped:
                votes[section] += 1
        found.append(max(votes, key=lambda s: (votes[s], -ids.index(s))) if votes else None)
    return found


def _flattened(sections: list) -> tuple[str, list[int], list[str]]:
    parts, starts, ids, length = [], [], [], 0
    for section in sections:
        text = " ".join(_WORD.findall(section.text))
        starts.append(length)
        ids.append(section.id)
        parts.append(text)
        length += len(text) + 1
    return " ".join(parts), starts, ids


def _last_at_or_before(starts: list[int], at: int) -> int:
    import bisect

    return max(bisect.bisect_right(starts, at) - 1, 0)


def nearest_links(comment_passages: list[tuple[str, object]], document_vectors, document_sections: list[str | None],
                  floor: float) -> list[dict]:
    """{"section", "evidence", "similarity"} for each section some passage of the comment is
    nearest to (its best passage), when the cosine is at least ``floor``. ``document_vectors``
    holds the document's passage vectors a row each, ``document_sections`` each row's section."""
    import numpy as np

    if not comment_passages or document_vectors is None or len(document_vectors) == 0:
        return []
    docs = _normalised(np.asarray(document_vectors, dtype=np.float64))
    mine = _normalised(np.vstack([np.asarray(v, dtype=np.float64) for _, v in comment_passages]))
    sims = mine @ docs.T
    best: dict[str, tuple[float, str]] = {}
    for row, (text, _) in enumerate(comment_passages):
        column = int(np.argmax(sims[row]))
        similarity, section = float(sims[row, column]), document_sections[column]
        if section is None or similarity < floor:
            continue
        if section not in best or similarity > best[section][0]:
            best[section] = (similarity, " ".join(text.split())[:EVIDENCE_CHARS])
    return [{"section": s, "evidence": e, "similarity": round(sim, 4)} for s, (sim, e) in sorted(best.items())]


def _normalised(rows):
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)
