"""Campaigns: the docket's comments in groups of the same or nearly the same text.

Runs after the index. Its input is extract's output (the text each comment has); an item's
fingerprint is extract's content hash, its submitter (left out of the compared text), the
threshold and the grouping version, so an unchanged comment is never read again and a new or
changed one is placed by ``pipeline.campaigns.grouping`` against the stored groups. A comment
whose body only says "see attached" is grouped by its attachments' text (``combined.md``).

A comment is compared by the words its commenter wrote: the docket's own documents' text (the
rule, the notice, the agency's forms, as extract read them) is removed from it
(``text.DocketText``), so a comment's fingerprint holds the documents' content hashes too: a
document extracted again (new or changed) places every comment again. One with too few words
of its own is skipped with the reason.
"""

from __future__ import annotations

import logging

from pipeline.campaigns import consistency
from pipeline.campaigns.text import MIN_OWN_WORDS, DocketText, points_to_attachment
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.extract.combined import INLINE_HEADING, combined_sections
from pipeline.extract.stage import read_combined
from pipeline.failures import RETRY
from pipeline.fingerprints import digest
from pipeline.store import item_states, items
from pipeline.store.models import Docket

log = logging.getLogger("docketeer")
STAGE = "campaigns"
INPUT = "extract"  # the stage whose output is its input (OCR, when on, merges into it)
# campaigns-2: compared by the commenter's own words (no placeholders, no documents' text),
# too short ones skipped, a letter held with a long addition joins its campaign.
GROUPING_VERSION = "campaigns-2"
GROUPABLE = ("ok", "ocr_needed", "failed", "unsupported", "too_large", "gone")
METADATA_FIELDS = ("kind", "submitter", "posted_date")


def config_id(threshold: float) -> str:
    return f"{GROUPING_VERSION}:{threshold:g}"


def item_fingerprint(extract_hash: str | None, submitter: str | None, config: str) -> str:
    return digest(config, extract_hash or "", submitter or "")


def plan(docket_id: str, config: str, force: bool) -> tuple[dict[str, tuple[str, dict]], list[str]]:
    """(comment key -> (fingerprint, metadata) for the comments to place, the keys of the
    docket's documents with text), from state rows."""
    comments, documents = {}, {}
    for key, extract_hash, extract_state, done_fingerprint, done_state, *fields in item_states.beside_upstream(
            STAGE, INPUT, docket_id, METADATA_FIELDS):
        meta = {name: value for name, value in zip(METADATA_FIELDS, fields, strict=True) if value}
        if meta.get("kind", "comment") == "document":
            if extract_state == "ok" and extract_hash:
                documents[key] = extract_hash
        elif extract_state in GROUPABLE and meta.get("kind", "comment") == "comment":
            comments[key] = (extract_hash, meta, done_fingerprint, done_state)
    # the documents' text is removed from every comment: their hashes are in each fingerprint
    config = digest(config, *(f"{key}={documents[key]}" for key in sorted(documents)))
    todo = {}
    for key, (extract_hash, meta, done_fingerprint, done_state) in comments.items():
        fingerprint = item_fingerprint(extract_hash, meta.get("submitter"), config)
        if force or done_state is None or done_fingerprint != fingerprint or done_state == "stale":
            todo[key] = (fingerprint, meta)
    return todo, sorted(documents)


def unfinished(docket_id: str, threshold: float) -> int:
    return len(plan(docket_id, config_id(threshold), False)[0])


def group_docket(ctx: StageContext, docket: Docket) -> StageResult:
    # datasketch and numpy load here, not when the tasks are declared: every luigi command
    # and `docketeer` start would pay for them otherwise.
    from pipeline.campaigns.grouping import Comment, Grouper

    result = StageResult()
    threshold = ctx.settings.campaign_threshold
    todo, documents = plan(docket.id, config_id(threshold), ctx.force)
    if not todo:
        return result
    ctx.check_time()
    ctx.progress.start(len(todo))
    texts = grouping_texts(ctx, docket.id, sorted(todo))
    comments = [Comment(k, todo[k][1].get("posted_date"), texts[k], todo[k][1].get("submitter"))
                for k in sorted(todo) if texts[k].strip()]
    empty = [k for k in sorted(todo) if not texts[k].strip()]
    grouper = Grouper(docket.id, threshold, docket_text=docket_text(ctx, docket.id, documents),
                      progress=lambda n: ctx.progress.advance("placed", n))
    placement = grouper.place(comments, leaving=empty)
    ctx.progress.advance("placed", len(placement.too_short))
    rows = [{"stage": STAGE, "item": k, "docket": docket.id, "state": "ok", "run_id": ctx.run_id,
             "fingerprint": todo[k][0], "content_hash": placement.exact[k]} for k in placement.placed]
    rows += [{"stage": STAGE, "item": k, "docket": docket.id, "state": "skipped", "run_id": ctx.run_id,
              "fingerprint": todo[k][0], "reason": "no text to compare"} for k in empty]
    rows += [{"stage": STAGE, "item": k, "docket": docket.id, "state": "skipped", "run_id": ctx.run_id,
              "fingerprint": todo[k][0], "reason": too_short_reason(n)} for k, n in sorted(placement.too_short.items())]
    item_states.transition_many(rows)
    for outcome, n in (("placed", len(placement.placed)), ("groups_started", len(placement.started)),
                       ("held_a_letter", len(placement.contained)), ("no_text", len(empty)),
                       ("too_short", len(placement.too_short))):
        if n:
            result.add(outcome, n)
    return result


def too_short_reason(own_words: int) -> str:
    return (f"too short to compare: {own_words} words of its own (fewer than {MIN_OWN_WORDS} once "
            f"placeholders and the docket's documents' text are left out)")


def docket_text(ctx: StageContext, docket_id: str, documents: list[str]) -> DocketText:
    """The docket's documents' text as extract read them (every section of their combined.md:
    the record, the content file, the forms attached), to be left out of the comments."""
    texts = []
    for key in documents:
        try:
            _, combined = read_combined(ctx.blobs, docket_id, key)
        except Exception as exc:  # noqa: BLE001 - a document not readable: its text stays in
            log.warning("campaigns %s %s: document text not read (%s)", docket_id, key, type(exc).__name__)
            continue
        texts += [text for _, text in combined_sections(combined, skip_placeholders=True) if text.strip()]
    return DocketText(texts)


def grouping_texts(ctx: StageContext, docket_id: str, keys: list[str]) -> dict[str, str]:
    """Each comment's body, or its attachments' text when the body only points at them. A
    comment whose body points at files that still wait for the mirror has nothing to compare
    yet (grouped by "See attached file(s)" alone, every such comment would look like one form
    letter): it is placed once a file arrives, which changes its extract hash."""
    bodies = items.bodies_of(docket_id, keys)
    waiting = set(item_states.rows_in_states("backfill", docket_id, (RETRY,)))
    texts = {}
    for key in keys:
        body = bodies.get(key) or ""
        if not points_to_attachment(body):
            texts[key] = body
        else:
            texts[key] = attachment_text(ctx, docket_id, key) or ("" if key in waiting else body)
    return texts


def attachment_text(ctx: StageContext, docket_id: str, key: str) -> str:
    try:
        _, combined = read_combined(ctx.blobs, docket_id, key)
    except Exception as exc:  # noqa: BLE001 - a missing combined.md: grouped by the body alone
        log.warning("campaigns %s %s: no combined text (%s)", docket_id, key, type(exc).__name__)
        return ""
    sections = combined_sections(combined, skip_placeholders=True)
    return "\n\n".join(text for heading, text in sections if heading != INLINE_HEADING and text.strip())


# --- the declaration ---------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="index", run=group_docket, task="CampaignGroups", wrapper="CampaignsAll",
    doc="Form-letter campaign groups of new or changed comments (exact and near-duplicate text).",
    unfinished=lambda runtime, docket_id, now: unfinished(docket_id, runtime.settings.campaign_threshold),
    input=INPUT, terms=lambda settings: config_id(settings.campaign_threshold),
    atomic=True, rows_agree=consistency.problems,
)
