"""Organisations: each comment's organisation, one id across spellings and dockets.

Runs after backfill (the record's ``organization``, its title and its body are backfill's).
A field naming several organisations ("AMA and AHA") is split first
(``pipeline.organisations.splitting``): a comment has one member row per organisation. The
record's field always wins; a name guessed from the title or a signature block
(``pipeline.organisations.names``) keeps the line it was read from (``evidence``), which
``docketeer orgs`` shows.
An item's fingerprint is its list summary's and detail record's hashes, the resolver's
version and what the alias file says about the field it was written with, so only new or
changed comments, and those whose name the alias file now lists differently, are resolved;
the rest are never read. A name is resolved by ``pipeline.organisations.matching`` against
the variants every earlier run learnt (``organisation_variant``): the alias file first, then
an acronym the docket pairs with a full name, the same name in normal form, a close spelling,
or else a new organisation whose id is a digest of its name.
"""

from __future__ import annotations

import re
from collections import Counter

from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.fingerprints import digest
from pipeline.organisations import consistency, queries
from pipeline.organisations.aliases import Aliases, alias_terms, load_aliases
from pipeline.organisations.names import (
    Candidate,
    acronym_key,
    candidate,
    is_acronym,
    normalise,
    unpair,
)
from pipeline.organisations.splitting import split_names
from pipeline.store import item_states
from pipeline.store.models import Docket

STAGE = "organisations"
RESOLVER_VERSION = "organisations-3"  # 2: a field naming several organisations is split; 3: a guessed
# name must look like an organisation (no person, address or sentence), comma lists split, evidence kept
UNDECIDED = (item_states.PENDING, "stale")  # backfill has not decided these yet


def item_fingerprint(summary_hash: str | None, detail_hash: str | None, alias_entry: str) -> str:
    return digest(RESOLVER_VERSION, summary_hash or "", detail_hash or "", alias_entry)


def plan(docket_id: str, aliases: Aliases, force: bool) -> dict[str, tuple[str | None, str | None]]:
    """comment key -> (summary hash, detail hash), for the comments to resolve, from state
    rows and item facts."""
    upstream = item_states.states_for_docket("backfill", docket_id)
    mine = item_states.states_for_docket(STAGE, docket_id)
    facts = queries.item_facts(docket_id)
    variants = queries.member_variants(docket_id)
    todo = {}
    for key, row in upstream.items():
        kind, summary, detail = facts.get(key, ("comment", None, None))
        if row.state in UNDECIDED or kind != "comment":
            continue
        whole, names = variants.get(key, ("", []))
        fingerprint = item_fingerprint(summary, detail, aliases.field_digest(whole, names))
        done = mine.get(key)
        if force or done is None or done.fingerprint != fingerprint or done.state == "stale":
            todo[key] = (summary, detail)
    return todo


def unfinished(runtime, docket_id: str) -> int:
    return len(plan(docket_id, load_aliases(runtime.settings), False))


def resolve_docket(ctx: StageContext, docket: Docket) -> StageResult:
    result = StageResult()
    aliases = load_aliases(ctx.settings)
    todo = plan(docket.id, aliases, ctx.force)
    if not todo:
        return result
    ctx.check_time()
    ctx.progress.start(len(todo))
    fields = queries.comment_fields(todo)
    found = {key: candidate(*fields[key]) for key in sorted(todo) if key in fields}
    named = {key: c for key, c in found.items() if c is not None}
    parts = {(key, position): part for key, cand in named.items()
             for position, part in enumerate(split_candidate(cand, aliases))}
    resolved = Resolution(docket.id, aliases).resolve(parts)

    assigned: dict[str, list[tuple]] = {}
    for (key, position), part in sorted(parts.items()):
        organisation, variant = resolved[(key, position)]
        assigned.setdefault(key, []).append((organisation, variant, part.raw, part.source, normalise(named[key].raw),
                                             part.evidence))
    leaving = [key for key in todo if key not in named]
    queries.save_members(docket.id, assigned, leaving)
    # Each fingerprint holds what the alias file says about the field now resolved (the plan
    # knew only the names stored before), so the next plan finds it current.
    rows = [{"stage": STAGE, "item": k, "docket": docket.id, "state": "ok" if k in named else "skipped",
             "run_id": ctx.run_id,
             "fingerprint": item_fingerprint(*todo[k], aliases.field_digest(
                 normalise(named[k].raw), [row[1] for row in assigned[k]]) if k in assigned else ""),
             "reason": None if k in named else "names no organisation"} for k in sorted(todo)]
    item_states.transition_many(rows)
    ctx.progress.advance("resolved", len(todo))
    several = sum(1 for rows in assigned.values() if len(rows) > 1)
    for outcome, n in (("assigned", len(named)), ("several_organisations", several),
                       ("no_organisation", len(leaving))):
        if n:
            result.add(outcome, n)
    return result


def split_candidate(cand: Candidate, aliases: Aliases) -> list[Candidate]:
    """The organisations one written field names (``pipeline.organisations.splitting``), each
    a candidate of its own; a part written "Full Name (FN)" pairs its acronym too."""
    names = split_names(cand.raw, aliases.splits)
    if names == [cand.raw]:
        return [cand]
    return [Candidate(full, cand.source, short, cand.evidence) for full, short in map(unpair, names)]


class Resolution:
    """One run's names resolved against what the store knows, in a fixed order (names seen
    more often first), so the same comments give the same organisations and ids."""

    def __init__(self, docket_id: str, aliases: Aliases):
        self.docket_id = docket_id
        self.aliases = aliases

    def resolve(self, named: dict) -> dict:
        """key (an item and a position in its field) -> (organisation id, the written name in
        normal form)."""
        from pipeline.organisations.matching import Known, VariantIndex, organisation_id

        stored = queries.known_variants()
        # An alias the file no longer lists is forgotten: its names are matched afresh.
        dropped = [n for n, (known, source) in stored.items()
                   if source == "alias" and self.aliases.listed.get(n) != known]
        queries.forget_variants(dropped)
        index = VariantIndex({n: known for n, (known, _) in stored.items() if n not in dropped})
        for name, known in self.aliases.listed.items():
            index.add(name, known)

        acronyms = queries.acronyms_of(self.docket_id)
        paired = {c.acronym: normalise(c.raw) for c in named.values() if c.acronym}
        queries.save_acronyms(self.docket_id, {a: n for a, n in paired.items() if acronyms.get(a) != n})
        acronyms.update(paired)

        spellings: dict[str, Counter] = {}
        for cand in named.values():
            spellings.setdefault(normalise(cand.raw), Counter())[cand.raw] += 1
        # A bare acronym by its letters as written ("FDN" is no abbreviation of "foundation").
        bare = {n: acronym_key(raw) for n in spellings for raw in spellings[n] if is_acronym(raw)}
        order = sorted(spellings, key=lambda n: (n in bare, -sum(spellings[n].values()), -len(n), n))

        chosen: dict[str, Known] = {}
        learnt: dict[str, tuple[str, str]] = {}
        # The alias file's organisations exist as it names them (a renamed one is renamed).
        new_orgs = {(k.organisation, k.name, normalise(k.name)) for k in self.aliases.listed.values()}
        for name in order:
            known = self.aliases.listed.get(name)
            if known is None and name in bare and bare[name] in acronyms:
                full = acronyms[bare[name]]
                known = self.aliases.listed.get(full) or index.exact(full) or chosen.get(full)
            if known is None:
                known = index.exact(name) or index.closest(name)
                if known is not None and name not in index.variants:
                    learnt[name] = (known.organisation, "matched")
            if known is None:
                display = shown_name(name, spellings[name])
                known = Known(organisation_id(name), display)
                learnt[name] = (known.organisation, "new")
                new_orgs.add((known.organisation, known.name, name))
            elif name in self.aliases.listed:
                learnt[name] = (known.organisation, "alias")
            if name not in bare or name in learnt:
                index.add(name, known)
            chosen[name] = known
        queries.save_organisations(new_orgs)
        queries.save_variants(learnt)
        return {key: (chosen[normalise(c.raw)].organisation, normalise(c.raw)) for key, c in named.items()}


def shown_name(normalised: str, spellings: Counter) -> str:
    """The spelling an organisation is shown by: the commonest; among equals, one in mixed
    case, then the one nearest its normal form ("American Hospital Association" rather than
    "American Hospital Assn." or "The American Hospital Association, Inc.")."""
    def rank(raw: str):
        letters = re.sub(r"[^a-z0-9 ]", "", raw.lower())
        return (-spellings[raw], raw.isupper() or raw.islower(), abs(len(letters) - len(normalised)), raw)
    return min(spellings, key=rank)


# --- the declaration ---------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="backfill", run=resolve_docket, task="ResolveOrganisations",
    wrapper="OrganisationsAll",
    doc="Each new or changed comment's organisation, one id across spellings and dockets.",
    unfinished=lambda runtime, docket_id, now: unfinished(runtime, docket_id),
    terms=alias_terms, atomic=True, rows_agree=consistency.problems,
    enabled=lambda settings: settings.organisations,  # off: the stages reading it do without
)
