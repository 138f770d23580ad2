"""Citations of a rule's sections in comments, against sentences judged by reading.

    .venv/bin/python -m benchmarks citations_judged [--file benchmarks/citations_judged.yaml] [--misses]
        [--sweep]

Runs ``pipeline.sections.citations.find_citations`` on each sentence of the judged file
(with its document's options: CFR title and parts, an RFI's questions) and compares the
(kind, ref) pairs found with those expected, a sentence at a time (a pair written twice in one
sentence counts once). An external citation is compared by its kind alone (how a statute is
spelt is no matter: it is never matched). Figures, overall and per kind and per the
entry's form: precision, recall, and the share of the sentences that cite nothing which were
left with nothing found. Then ``match_citation`` on each expected citation that was found,
against the document's hand-made section list: the share matched to the expected id (an
expected "none" must come back None).

``--sweep`` runs find_citations over the whole real share instead: every OMB dev comment
(``labels/stance-omb-dev.csv``) and every NIST-2021-0006 attachment (read by the extract
stage's readers), counts the citations by kind and prints each one that is not external with
its sentence, to be read for precision on text nobody picked.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pipeline.sections.citations import KINDS, Citation, find_citations, match_citation

JUDGED = Path(__file__).with_name("citations_judged.yaml")
REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


@dataclass(frozen=True)
class Section:
    id: str
    heading: str = ""


@dataclass
class Entry:
    id: str
    source: str
    doc: str
    form: str
    text: str
    expect: dict[tuple[str, str], str | None]  # (kind, ref) -> expected section id (None: none)
    sampled: bool = False  # drawn at random from the share, judged before the parser saw it


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    clean: int = 0  # sentences citing nothing left with nothing
    empty: int = 0  # sentences citing nothing
    matched: int = 0  # found citations whose match was the expected id
    judged_matches: int = 0
    misses: list[str] = field(default_factory=list)

    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def load(path: Path = JUDGED) -> tuple[dict[str, dict], list[Entry]]:
    """The documents' options and the judged sentences; a malformed entry stops with its id."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    documents = data["documents"]
    entries = []
    for raw in data["sentences"]:
        if raw.get("doc") not in documents:
            raise ValueError(f"{raw.get('id')}: unknown document {raw.get('doc')!r}")
        entries.append(Entry(raw["id"], raw["source"], raw["doc"], raw["form"], raw["text"],
                             dict(_expected(raw["id"], item) for item in raw["expect"]),
                             bool(raw.get("sampled"))))
    return documents, entries


def _expected(entry_id: str, item: str) -> tuple[tuple[str, str], str | None]:
    """"section 200.1(b) -> §200.1" → (("section", "200.1(b)"), "§200.1"); "external" alone."""
    reference, _, target = (part.strip() for part in item.partition("->"))
    kind, _, ref = reference.partition(" ")
    if kind not in KINDS:
        raise ValueError(f"{entry_id}: unknown kind in {item!r}")
    return (kind, "" if kind == "external" else ref.strip()), (None if target in ("", "none") else target)


def options(document: dict) -> dict:
    return {"questions": document.get("questions"), "cfr_parts": document.get("cfr_parts", ()),
            "cfr_title": document.get("cfr_title")}


def key(citation: Citation) -> tuple[str, str]:
    return citation.kind, "" if citation.kind == "external" else citation.ref


def score(documents: dict[str, dict], entries: list[Entry]) -> dict[str, Tally]:
    """Tallies overall ("all"), the random draw alone ("sampled"), per kind ("kind:section") and
    per form ("form:section-range")."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for entry in entries:
        document = documents[entry.doc]
        found = {key(c): c for c in find_citations(entry.text, **options(document))}
        sections = [Section(section_id) for section_id in document.get("sections", ())]
        names = ("all", f"form:{entry.form}", *(("sampled",) if entry.sampled else ()))
        for pair in found.keys() | entry.expect.keys():
            tallied = [tallies[name] for name in (*names, f"kind:{pair[0]}")]
            if pair in found and pair in entry.expect:
                matched = match_citation(found[pair], sections) == entry.expect[pair]
                for tally in tallied:
                    tally.tp += 1
                    tally.judged_matches += pair[0] != "external"
                    tally.matched += matched and pair[0] != "external"
                if not matched and pair[0] != "external":
                    tallies["all"].misses.append(f"{entry.id}: {pair} matched "
                                                 f"{match_citation(found[pair], sections)!r}, expected {entry.expect[pair]!r}")
            else:
                missing = pair not in found
                for tally in tallied:
                    tally.fn += missing
                    tally.fp += not missing
                tallies["all"].misses.append(f"{entry.id}: {'missed' if missing else 'spurious'} {pair}")
        if not entry.expect:
            for name in names:
                tallies[name].empty += 1
                tallies[name].clean += not found
    return dict(tallies)


def _figure(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def report(tallies: dict[str, Tally], sentences: int, *, misses: bool = False) -> str:
    lines = [f"{sentences} judged sentences",
             f"{'':34} {'precision':>9} {'recall':>7} {'tp':>4} {'fp':>4} {'fn':>4} {'no-cite clean':>13} {'matched':>9}"]
    order = ["all", *(["sampled"] if "sampled" in tallies else [])] + sorted(name for name in tallies if name.startswith("kind:")) \
        + sorted(name for name in tallies if name.startswith("form:"))
    for name in order:
        t = tallies[name]
        clean = f"{t.clean}/{t.empty}" if t.empty else "-"
        matched = f"{t.matched}/{t.judged_matches}" if t.judged_matches else "-"
        lines.append(f"{name:34} {_figure(t.precision()):>9} {_figure(t.recall()):>7} {t.tp:>4} {t.fp:>4} {t.fn:>4}"
                     f" {clean:>13} {matched:>9}")
    if misses:
        lines += ["", "misses:"] + [f"  {miss}" for miss in tallies["all"].misses]
    return "\n".join(lines)


def share_texts(realdata: Path = REALDATA) -> list[tuple[str, str, str]]:
    """(document of the judged file, item id, text) for the OMB dev comments and the NIST
    attachments of the real share."""
    from pipeline.extract.readers import read_attachment

    with (realdata / "labels" / "stance-omb-dev.csv").open(encoding="utf-8") as rows:
        texts = [("omb", row["id"], row["text"]) for row in csv.DictReader(rows)]
    folder = realdata / "mirror" / "raw-data" / "NIST" / "NIST-2021-0006" / "binary-NIST-2021-0006" / "comments_attachments"
    for path in sorted(folder.glob("*")):
        texts.append(("nist", path.stem, read_attachment(path, path.name).text or ""))
    return texts


def sweep(documents: dict[str, dict], texts: list[tuple[str, str, str]]) -> str:
    counts: Counter = Counter()
    lines = []
    for doc, item, text in texts:
        for citation in find_citations(text, **options(documents[doc])):
            counts[(doc, citation.kind)] += 1
            if citation.kind != "external":
                lines.append(f"  {item} {citation.kind} {citation.ref} {citation.written!r}: {citation.sentence[:100]}")
    summary = [f"{len(texts)} texts of the share; citations found by document and kind:"]
    summary += [f"  {doc} {kind}: {n}" for (doc, kind), n in sorted(counts.items())]
    return "\n".join(summary + ["", "each one not external, to read:"] + lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=JUDGED)
    parser.add_argument("--misses", action="store_true", help="list each wrong or missed citation")
    parser.add_argument("--sweep", action="store_true", help="run over the whole real share instead, to read")
    args = parser.parse_args(argv)
    try:
        documents, entries = load(args.file)
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as error:
        print(f"citations_judged: cannot read {args.file}: {error}", file=sys.stderr)
        return 1
    if args.sweep:
        if not REALDATA.is_dir():
            print(f"citations_judged: no real share at {REALDATA}", file=sys.stderr)
            return 1
        print(sweep(documents, share_texts()))
        return 0
    print(report(score(documents, entries), len(entries), misses=args.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
