"""What the derived stages found: ``docketeer orgs`` (organisations across spellings),
``rule`` (a rule's timeline), ``topics`` (a docket's topic map), ``campaigns`` (its form
letters) and ``digest`` (the feeds' news as text).

The stages' query modules and the feeds are imported inside the commands: they bring peewee
and psycopg2, which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

import argparse
import json
import sys

from pipeline.clock import eastern_date
from pipeline.lineage.phases import (  # light: the parser checks --phases with it
    BadPhases,
    parse_phases,
)
from pipeline.ops.commands.command_line import command, open_runtime, table


def register(commands) -> None:
    orgs = commands.add_parser("orgs", help="organisations resolved across spellings: comments, dockets, campaigns "
                                            "joined, the variants seen, where each came from (the record's field, "
                                            "or the title or signature line it was guessed from)")
    orgs.add_argument("--docket", help="only this docket's comments")
    orgs.add_argument("--json", action="store_true",
                      help="one JSON document (id, organisation, comments, dockets, campaigns joined, every variant, "
                           "every origin with its evidence line)")
    orgs.add_argument("--rule", help="a RIN or a docket: the organisations that commented in every phase --phases names")
    orgs.add_argument("--phases", default="proposed,final",
                      help="with --rule: comma-separated phases (notice, proposed, final, supporting, other, unknown; "
                           "default proposed,final)")
    rule = commands.add_parser("rule", help="a rule's timeline by RIN or docket: its documents, phases, comment windows "
                                            "(Eastern dates) and the comments each phase drew")
    rule.add_argument("rule", help="a RIN (1400-AE27) or a docket id")
    rule.add_argument("--json", action="store_true", help="one JSON document")
    topics = commands.add_parser("topics", help="a docket's topic map: the issues raised, how many raised each, "
                                                "who, representative passages")
    topics.add_argument("docket", help="the docket id")
    topics.add_argument("--json", action="store_true",
                        help="one JSON document (each topic's terms, counts, share, dates, representatives)")
    campaigns = commands.add_parser("campaigns", help="a docket's form-letter campaigns, largest first: comment "
                                                      "records, submissions, members, the letter's first words")
    campaigns.add_argument("docket", help="the docket id")
    campaigns.add_argument("--json", action="store_true",
                           help="one JSON document (each campaign's id, size, submissions, members, dates, opening)")
    digest = commands.add_parser("digest", help="comments added or changed since a time, per docket (the feeds' news, for cron mail)")
    digest.add_argument("--since", type=parse_since, default="1d",
                        help="30m, 12h, 1d, 2w back from now, an Eastern day YYYY-MM-DD, or a UTC instant (default 1d)")
    digest.add_argument("--docket", help="comma-separated docket ids (default: every known docket)")
    digest.add_argument("--limit", type=parse_limit, default=20, help="comments listed per docket (default 20; all are counted)")
    digest.add_argument("--link-base", default=None,
                        help="the address `docketeer serve` is read at (e.g. http://127.0.0.1:8080): links to its "
                             "pages instead of regulations.gov")


ORGS_VARIANTS_SHOWN = 3  # spellings in the table's cell; --json lists every one
ORGS_EVIDENCE_SHOWN = 60  # characters of the line a guessed name was read from; --json has it whole
ORGS_SOURCES = {"organization": "field", "title": "title", "signature": "signature"}


def _org_origin(origins) -> str:
    """Where an organisation's name came from, for the table: "field" (the record's), and
    each kind of guess with the first line it was read from ("signature: Ohio Farm Bureau
    Federation"), "(+N)" for the other lines guessed from."""
    shown, guesses = [], [o for o in origins if o[0] != "organization"]
    if len(guesses) < len(origins):
        shown.append("field")
    for source in dict.fromkeys(o[0] for o in guesses):
        line = " ".join((next(e for s, e, _ in guesses if s == source) or "").split())
        cut = line if len(line) <= ORGS_EVIDENCE_SHOWN else line[:ORGS_EVIDENCE_SHOWN - 1] + "…"
        shown.append(f"{ORGS_SOURCES.get(source, source)}: {cut}")
    more = len(guesses) - (len(shown) - (len(guesses) < len(origins)))
    return "; ".join(shown) + (f" (+{more})" if more > 0 else "")


def _unknown_docket(command_name: str, docket_id: str) -> bool:
    """True, said in one line on stderr, when the store knows no such docket."""
    from pipeline.reading import reports

    if reports.find_docket(docket_id) is not None:
        return False
    print(f"docketeer {command_name}: unknown docket: {docket_id}", file=sys.stderr)
    return True


@command
def cmd_orgs(args) -> int:
    from pipeline.reading import organisations as queries

    open_runtime()
    if args.docket and _unknown_docket("orgs", args.docket):
        return 2
    if args.rule:
        return _orgs_of_rule(args)
    found = queries.organisations_summary(args.docket)
    joined = queries.campaigns_joined([o.id for o in found])
    if args.json:
        print(json.dumps({"docket": args.docket, "organisations": [
            {"id": o.id, "organisation": o.name, "comments": o.comments, "dockets": o.dockets,
             "campaigns_joined": joined.get(o.id, 0),
             "variants": [{"written": w, "comments": n} for w, n in o.variants],
             "origins": [{"source": ORGS_SOURCES.get(source, source), "evidence": evidence, "comments": n}
                         for source, evidence, n in o.origins]} for o in found]}, indent=1))
        return 0
    if not found:
        print("no organisations resolved yet (luigi --module pipeline OrganisationsAll resolves them)")
        return 0
    rows = [[o.name, o.comments, len(o.dockets), joined.get(o.id, 0),
             "; ".join(w for w, _ in o.variants[:ORGS_VARIANTS_SHOWN])
             + (f" (+{len(o.variants) - ORGS_VARIANTS_SHOWN})" if len(o.variants) > ORGS_VARIANTS_SHOWN else ""),
             _org_origin(o.origins)]
            for o in found]
    print(table(rows, ["organisation", "comments", "dockets", "campaigns", "variants seen", "from"]))
    return 0


def _orgs_of_rule(args) -> int:
    """``orgs --rule X --phases proposed,final``: the organisations that commented in every
    named phase of the rule."""
    from pipeline.reading import lineage

    try:
        phases = parse_phases(args.phases)
    except BadPhases as exc:
        print(f"docketeer orgs: {exc}", file=sys.stderr)
        return 2
    rin, dockets = lineage.rule_dockets(args.rule)
    if not dockets:
        print(f"docketeer orgs: unknown rule (no docket or RIN known): {args.rule}", file=sys.stderr)
        return 2
    found = lineage.organisations_in_every_phase(dockets, phases)
    if args.json:
        print(json.dumps({"rule": args.rule, "rin": rin, "dockets": dockets, "phases": phases, "organisations": [
            {"id": org, "organisation": name, "comments": counts} for org, name, counts in found]}, indent=1))
        return 0
    if not found:
        print(f"no organisation commented in every phase of {args.rule}: {', '.join(phases)}")
        return 0
    print(table([[name, *(counts[p] for p in phases)] for _org, name, counts in found], ["organisation", *phases]))
    return 0


@command
def cmd_rule(args) -> int:
    from pipeline.reading import lineage as timeline

    open_runtime()
    found = timeline.timeline(args.rule)
    if found is None:
        print(f"docketeer rule: unknown rule (no docket or RIN known): {args.rule}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(found.as_json(), indent=1))
    else:
        print("\n".join(timeline.lines(found)))
    return 0


# The map counts a comment once, under its main topic; the topic filter (browse, search) finds
# every comment with a passage on a topic. Both figures are right, so each says which it is.
MAIN_TOPIC_NOTE = ("comments (main topic): those whose main topic it is; the topic filter of search and "
                   "the browse page finds every comment with any passage on it, main topic or not")


@command
def cmd_topics(args) -> int:
    from pipeline.reading import topics as queries

    open_runtime()
    if _unknown_docket("topics", args.docket):
        return 2
    found = queries.topics_of(args.docket)
    mapped = queries.map_of(args.docket)
    message = mapped.message if mapped else "no topic map yet (luigi --module pipeline TopicsAll maps it)"
    if args.json:
        print(json.dumps({"docket": args.docket, "message": message if not found else "", "topics": [
            {"id": t.id, "label": t.label, "terms": [term for term, _ in t.terms], "comments": t.comments,
             "submissions": t.submissions, "organisations": t.organisations, "share": t.share,
             "first_seen": t.first_seen and eastern_date(t.first_seen),
             "last_seen": t.last_seen and eastern_date(t.last_seen),
             "representatives": t.representatives} for t in found]}, indent=1))
        return 0
    if not found:
        print(message or "no topics found")
        return 0
    rows = [[t.id.rsplit(":", 1)[-1], t.label, t.comments, t.submissions, f"{t.share:.0%}", t.organisations,
             eastern_date(t.first_seen) if t.first_seen else "", eastern_date(t.last_seen) if t.last_seen else ""]
            for t in found]
    print(table(rows, ["topic", "terms", "comments (main topic)", "submissions", "share", "orgs", "first", "last"]))
    print(MAIN_TOPIC_NOTE)
    for t in found:
        print(f"\n{t.id.rsplit(':', 1)[-1]} ({t.label}) representative passages:")
        for r in t.representatives:
            # the sentence that says most of the topic's terms; a map of an older version kept none
            print(f"  {r['item']}: {' '.join((r.get('sentence') or r['text']).split())[:160]}")
    return 0


CAMPAIGN_OPENING_SHOWN = 70  # characters of the letter in the table; --json has the page's opening


@command
def cmd_campaigns(args) -> int:
    from pipeline.reading import campaigns as queries

    open_runtime()
    if _unknown_docket("campaigns", args.docket):
        return 2
    found = queries.campaigns_of(args.docket)  # largest first, as the docket page lists them
    represented = queries.submissions(c.id for c in found)
    listed = [{"id": c.id, "size": c.size, "submissions": represented.get(c.id),
               "members": queries.group_facts(c.id)[0], "first_seen": c.first_seen, "last_seen": c.last_seen,
               "representative": c.representative, "opening": _opening(c.representative_text)} for c in found]
    if args.json:
        print(json.dumps({"docket": args.docket, "campaigns": listed}, indent=1, ensure_ascii=False))
        return 0
    if not listed:
        print("no campaigns")
        return 0
    rows = [[c["id"], c["size"], "-" if c["submissions"] is None else c["submissions"], c["members"],
             eastern_date(c["first_seen"]), eastern_date(c["last_seen"]), _cut(c["opening"], CAMPAIGN_OPENING_SHOWN)]
            for c in listed]
    print(table(rows, ["campaign", "comments", "submissions", "members", "first", "last", "opening"]))
    return 0


OPENING_CHARS = 240  # as the docket page's list of campaigns


def _opening(text: str) -> str:
    """The first words of a letter, its page markers and line breaks folded into spaces: the
    docket page's opening (``pipeline.reading.campaigns.opening``, a function of the web package,
    made here from the same page marker)."""
    from pipeline.index.chunking import PAGE_MARKER

    return _cut(" ".join(PAGE_MARKER.sub(" ", text or "").split()), OPENING_CHARS)


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + " \u2026"


@command
def cmd_digest(args) -> int:
    from pipeline.reading import reports
    from pipeline.web import feeds

    open_runtime()
    dockets = [d.strip() for d in (args.docket or "").split(",") if d.strip()] or None
    unknown = [d for d in dockets or [] if reports.find_docket(d) is None]
    if unknown:
        print(f"docketeer digest: unknown docket(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    print(feeds.digest_text(args.since, feeds.digest(args.since, dockets, args.limit), args.link_base), end="")
    return 0


def parse_since(text: str) -> str:
    """--since: a span back from now or an Eastern day (argparse type), as a UTC instant."""
    from pipeline.web.feeds import since_instant

    try:
        return since_instant(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_limit(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"not a count from 1 to 10000: {text!r}")
    return int(text)

