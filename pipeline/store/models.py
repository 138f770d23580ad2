"""The state DB schema: peewee models shared by SQLite and PostgreSQL.

Timestamps are ISO-8601 UTC text (``2026-09-08T12:00:00.123456Z``): they compare correctly
as strings, and a dump of the tables is byte-identical on both databases.
"""

from __future__ import annotations

from peewee import (
    AutoField,
    BigIntegerField,
    BooleanField,
    CompositeKey,
    DatabaseProxy,
    FloatField,
    IntegerField,
    Model,
    TextField,
)

database = DatabaseProxy()


class BaseModel(Model):
    class Meta:
        database = database
        legacy_table_names = False


class Meta(BaseModel):
    """Key/value facts about the store itself (schema version, instance id)."""

    key = TextField(primary_key=True)
    value = TextField()


class Docket(BaseModel):
    id = TextField(primary_key=True)
    agency = TextField(null=True)
    title = TextField(null=True)
    # JSON list of comment-bearing documents: [{"id", "object_id", "start", "end", "opens_at",
    # "closes_at"}]: start/end are Eastern dates (the deadline's day), *_at the UTC instants.
    documents = TextField(null=True)
    comment_start_date = TextField(null=True)  # YYYY-MM-DD, US Eastern
    comment_end_date = TextField(null=True)  # YYYY-MM-DD, US Eastern: the latest window's deadline day
    discovered_by = TextField(null=True)  # list | fr | mirror | fetch
    resolved_at = TextField(null=True)  # documents and object ids known
    pull_watermark = TextField(null=True)  # max lastModifiedDate seen by a clean walk (UTC)
    last_pull_at = TextField(null=True)  # end of the last clean walk
    last_pull_new = IntegerField(null=True)  # comments created or updated by that walk
    sealed_at = TextField(null=True)
    seal_reason = TextField(null=True)  # auto | manual
    counts_at_seal = TextField(null=True)  # JSON
    # The earliest next attempt of any item of the docket waiting to retry: the
    # targets of the stages after fetch turn incomplete when it has come.
    retry_due_at = TextField(null=True)
    # The Regulation Identifier Number the docket's record gives (schema v15): the rule its
    # documents belong to, across dockets.
    rin = TextField(null=True, index=True)
    # 1: the docket was resolved from the API before its documents were stored (schema v17
    # marks it), so fetch reads its documents and RIN once, alone; the read clears it, even
    # when the docket has no documents at all, so it is never asked again.
    documents_unread = IntegerField(null=True)


class Item(BaseModel):
    """A comment or a document; fields change only when the source changed."""

    key = TextField(primary_key=True)
    docket = TextField(index=True)
    kind = TextField()  # comment | document
    title = TextField(null=True)
    object_id = TextField(null=True)
    comment_on_document_id = TextField(null=True)
    posted_date = TextField(null=True)
    last_modified = TextField(null=True)
    withdrawn = BooleanField(default=False)
    summary_hash = TextField(null=True)  # hash of the normalized list summary
    detail_hash = TextField(null=True)  # hash of the normalized detail record
    detail_summary_hash = TextField(null=True)  # summary_hash the detail was fetched for
    body = TextField(null=True)  # inline comment text (plain text, from HTML when it was HTML)
    body_html = TextField(null=True)  # the original body when it held markup
    submitter = TextField(null=True)
    organization = TextField(null=True)
    received_date = TextField(null=True)
    # What people filter and count by, as the detail record says (schema v12).
    duplicate_comments = IntegerField(null=True)  # more submissions this record stands for
    subtype = TextField(null=True)  # "Public Comment", "Mass Mail Campaign", ...
    category = TextField(null=True)
    state_province_region = TextField(null=True)
    country = TextField(null=True)
    gov_agency = TextField(null=True)
    gov_agency_type = TextField(null=True)
    tracking_nbr = TextField(null=True)
    # More of what the detail record says (schema v19): the submitter's city and
    # representative, why the item was withdrawn or restricted, its content's page count.
    city = TextField(null=True)
    submitter_rep = TextField(null=True)
    reason_withdrawn = TextField(null=True)
    restrict_reason = TextField(null=True)
    restrict_reason_type = TextField(null=True)
    page_count = IntegerField(null=True)
    # Whether the detail said which attachments the item has (its attachment rows are then
    # all of them); False: it did not (older mirror JSON), so their number is unknown unless
    # the mirror's binary folder showed files; None: no detail read yet.
    attachments_listed = BooleanField(null=True)
    created_at = TextField()
    updated_at = TextField()


class Attachment(BaseModel):
    """One file the item's record declares (or the mirror's binary folder holds): a row from
    the record as soon as it is read; ``sha256`` and ``size`` once its bytes are stored."""

    id = AutoField()
    item = TextField()
    filename = TextField()  # attachment_1.pdf, content.pdf
    ordinal = IntegerField(default=0)
    format = TextField(null=True)
    source_url = TextField(null=True)
    declared_size = IntegerField(null=True)
    sha256 = TextField(null=True)
    size = IntegerField(null=True)
    title = TextField(null=True)  # the included attachment's title

    class Meta:
        indexes = ((("item", "filename"), True),)


class ItemState(BaseModel):
    """One row per (stage, item), transitioned in place: the per-item decision and audit."""

    stage = TextField()
    item = TextField()
    docket = TextField()
    fingerprint = TextField(null=True)
    content_hash = TextField(null=True)
    state = TextField()
    reason = TextField(null=True)
    detail = TextField(null=True)
    run_id = TextField(null=True)
    written_at = TextField()
    # Transient failures (state ``retry``): how often, since when, and when next.
    attempts = IntegerField(null=True)
    first_failed_at = TextField(null=True)
    next_attempt_at = TextField(null=True)

    class Meta:
        primary_key = CompositeKey("stage", "item")
        indexes = ((("docket", "stage", "state"), False),)


class DocketStage(BaseModel):
    """The completion marker of one stage over one docket."""

    docket = TextField()
    stage = TextField()
    version = IntegerField()
    sealed_at = TextField(null=True)  # the docket's seal this completion was recorded under
    input_fingerprint = TextField(null=True)
    output_fingerprint = TextField(null=True)
    completed_at = TextField()
    run_id = TextField(null=True)

    class Meta:
        primary_key = CompositeKey("docket", "stage")


class DocketFailure(BaseModel):
    """Why a stage could not produce its output for a docket: the unexpected error of its last
    attempt (one line, masked), kept until the stage next runs clean for that docket (schema
    version 20). A docket-level state, beside the items' own failures in ``item_state``."""

    docket = TextField()
    stage = TextField()
    reason = TextField()
    failed_at = TextField()  # the last attempt that failed
    first_failed_at = TextField()  # the first of the failures in a row
    attempts = IntegerField(default=1)  # failed attempts in a row
    run_id = TextField(null=True)

    class Meta:
        primary_key = CompositeKey("docket", "stage")


class Lease(BaseModel):
    stage = TextField()
    docket = TextField()
    token = TextField()
    holder = TextField()
    expires_at = TextField()

    class Meta:
        primary_key = CompositeKey("stage", "docket")


class Run(BaseModel):
    """One row per task run."""

    id = AutoField()
    run_id = TextField(unique=True)
    task = TextField()
    stage = TextField(null=True)
    docket = TextField(null=True, index=True)
    started_at = TextField()
    finished_at = TextField(null=True)
    clean = BooleanField(null=True)
    counters = TextField(null=True)  # JSON
    message = TextField(null=True)
    budget_spent = BooleanField(default=False)  # added in schema version 2


class MirrorObject(BaseModel):
    """One mirror object as the docket's last listing showed it: what a rerun
    compares the next listing with, so only new or changed objects are read."""

    key = TextField(primary_key=True)  # relative to the mirror root
    docket = TextField(index=True)
    size = IntegerField()
    etag = TextField(null=True)  # S3 only
    modified = TextField()  # S3 LastModified, or a folder file's mtime in ns
    state = TextField()  # "listed" or "gone" (no longer in the listing; rows are never deleted)
    reason = TextField(null=True)
    seen_at = TextField()
    # The JSON as fetch read it, until backfill has used it: the object is
    # read once, not by fetch and again by backfill.
    body = TextField(null=True)
    # The comment or document the object belongs to ("" none: the docket's JSON, a key the
    # pipeline does not read), as fetch filed it backfill reads a todo page's
    # objects by item. None: recorded by an older fetch, filed by the first backfill that reads it.
    item = TextField(null=True)

    class Meta:
        indexes = ((("docket", "item"), False),)


class MirrorScan(BaseModel):
    """A docket's mirror objects as one run found them, each filed under the item
    it belongs to (``pipeline.sources.mirror.item_of``), so that the run looks up a page's
    objects by item instead of holding the docket's listing: a backfill's walk of the mirror
    (without a listing a mirror fetch stored), or the new and changed objects of a mirror
    fetch's walk (read once the docket is resolved), or a whole second walk of a fetch that
    found objects gone. ``scan`` is that run's own, so two runs never share rows; dropped
    when the run ends, and a killed run's rows by a later run of the docket."""

    scan = TextField()
    key = TextField()
    docket = TextField()
    item = TextField()
    size = IntegerField()
    etag = TextField(null=True)
    modified = TextField()
    taken_at = TextField()

    class Meta:
        primary_key = CompositeKey("scan", "key")
        indexes = ((("scan", "item"), False), (("docket", "taken_at"), False))


class CampaignMember(BaseModel):
    """One comment's place in the campaign groups of its docket: the text it was
    grouped by, its MinHash signature, and what it adds to its group's representative."""

    item = TextField(primary_key=True)
    docket = TextField()
    campaign = TextField()  # Campaign.id
    order_key = TextField()  # posted date + key: the order groups are built in
    posted_date = TextField(null=True)
    exact_hash = TextField()  # digest of the normalised text
    text = TextField()  # the text it was grouped by (body, or combined text when "see attached")
    normalised = TextField()
    signature = TextField()  # MinHash hash values, hex
    added_sentences = TextField(null=True)  # JSON list: sentences the representative lacks
    # The LSH bands its campaign_band keys were made with ("25x5"), when later comments are
    # compared with it: removing it makes them again from the signature. None: a member no
    # later comment is compared with (it has no band rows).
    banding = TextField(null=True)

    class Meta:
        # (campaign, banding): a group's compared members counted from the index alone
        indexes = ((("docket", "exact_hash"), False), (("campaign", "order_key"), False),
                   (("campaign", "banding"), False))


class CampaignBand(BaseModel):
    """One LSH band key of a member's signature (``pipeline.store.campaign_bands``): a new
    comment's candidates are the members sharing a band key with it, one read of the
    primary key's index. A 64-bit integer, and that index the only one: a docket grouped
    from scratch writes about 20 of these rows per member."""

    docket = TextField()
    key = BigIntegerField()
    item = TextField()

    class Meta:
        primary_key = CompositeKey("docket", "key", "item")


class Campaign(BaseModel):
    """A group of comments with the same or nearly the same text. Its id comes
    from its earliest member, so a rebuild of the same data gives the same ids."""

    id = TextField(primary_key=True)
    docket = TextField(index=True)
    size = IntegerField()
    representative = TextField()  # the most central member's item key
    first_seen = TextField(null=True)
    last_seen = TextField(null=True)


class ItemClaim(BaseModel):
    """One item of a (stage, docket) run offered to the workers that share it (used on
    PostgreSQL only): ``session`` is the token of the lease whose run offered it,
    ``claimer`` the worker working it until ``expires_at`` ('' = free), ``done`` once its
    state is written. Claimed with FOR UPDATE SKIP LOCKED (pipeline/engine/claims.py)."""

    stage = TextField()
    item = TextField()
    docket = TextField()
    session = TextField()
    claimer = TextField(null=True)
    expires_at = TextField(default="")
    done = BooleanField(default=False)

    class Meta:
        primary_key = CompositeKey("stage", "item")
        indexes = ((("stage", "docket", "session"), False),)


class Organisation(BaseModel):
    """An organisation comments are from, across spellings and dockets. Its id is a digest
    of its canonical name in normal form, so a rebuild of the same data gives the same ids."""

    id = TextField(primary_key=True)
    name = TextField()  # the canonical name shown (the alias file's, or the commonest spelling)
    normalised = TextField()


class OrganisationVariant(BaseModel):
    """A name in normal form and the organisation it stands for, in every docket: how a new
    comment's organisation is found without resolving the others again."""

    normalised = TextField(primary_key=True)
    organisation = TextField(index=True)
    source = TextField()  # alias | matched | new


class OrganisationMember(BaseModel):
    """One of a comment's organisations (a field may name several: ``position`` is its place
    in the field), and the name it was written with."""

    item = TextField()
    position = IntegerField(default=0)
    docket = TextField(index=True)
    organisation = TextField(index=True)
    variant = TextField()  # the written name in normal form
    written = TextField()  # as written ("Amer. Med. Assn.")
    source = TextField()  # organization | title | signature
    whole = TextField(default="")  # the whole field in normal form ("ama and aha"): what split: is keyed by
    # The line the name was read from as written: the field, the title or the signature's line
    # (NULL: resolved before state DB v20, until the stage resolves the comment again).
    evidence = TextField(null=True)

    class Meta:
        primary_key = CompositeKey("item", "position")


class OrganisationAcronym(BaseModel):
    """A docket's pairing of an acronym with a full name ("American Medical Association
    (AMA)"): a bare "AMA" in that docket is that organisation."""

    docket = TextField()
    acronym = TextField()
    normalised = TextField()  # the full name in normal form

    class Meta:
        primary_key = CompositeKey("docket", "acronym")


class DocketDocument(BaseModel):
    """One document of a docket as its resolve read it (schema v15): what a rule's timeline
    is made of. Written by fetch's resolve, from the record normaliser's ``document_lineage``."""

    document = TextField(primary_key=True)
    docket = TextField(index=True)
    document_type = TextField(null=True)  # Notice | Proposed Rule | Rule | Supporting & Related Material
    fr_doc_num = TextField(null=True, index=True)  # the Federal Register document number, 2022-05629
    posted_at = TextField(null=True)  # UTC instant, as the record gives it
    opens_at = TextField(null=True)
    closes_at = TextField(null=True)
    start = TextField(null=True)  # the window's first and last days, US Eastern
    end = TextField(null=True)


class LineageComment(BaseModel):
    """The document one comment answers (``commentOnDocumentId``) and the phase of the rule
    that document stands for (proposed, final, notice, ...)."""

    item = TextField(primary_key=True)
    docket = TextField()
    document = TextField(null=True)  # None: the record names no document
    phase = TextField()

    class Meta:
        indexes = ((("docket", "phase"), False), (("document",), False))


class LineageLink(BaseModel):
    """Two dockets of one rule: the same RIN, or a Federal Register document that names both."""

    docket = TextField()
    other = TextField()
    via = TextField()  # rin | federal_register
    value = TextField()  # the RIN or the FR document number that links them

    class Meta:
        primary_key = CompositeKey("docket", "other", "via")
        indexes = ((("other",), False),)


class FederalRegisterDocument(BaseModel):
    """A Federal Register document as its record named its dockets and RINs (asked once, when
    ``lineage_federal_register`` is on): what links a docket to the others of its rule."""

    number = TextField(primary_key=True)
    docket_ids = TextField()  # JSON list
    rins = TextField()  # JSON list


class Topic(BaseModel):
    """One topic of a docket's topic map: what many comments raise, its distinctive terms,
    representative passages and counts. Its id survives re-clustering when a new cluster
    matches it (``pipeline.topics.clustering.match_ids``)."""

    id = TextField(primary_key=True)  # "<docket>:t<number>"
    docket = TextField(index=True)
    label = TextField()  # its distinctive terms, joined
    terms = TextField()  # JSON list of (term, weight)
    representatives = TextField()  # JSON list of {"item", "text"}
    centroid = TextField()  # JSON list of floats: the mean of its members' unit vectors
    comments = IntegerField()
    submissions = IntegerField()  # comments weighted by campaign submissions
    organisations = IntegerField()
    first_seen = TextField(null=True)
    last_seen = TextField(null=True)
    share = FloatField()  # of the docket's submissions


class TopicMember(BaseModel):
    """One comment's place on its docket's topic map: its main topic (None: unplaced) and
    every topic one of its passages is nearest to."""

    item = TextField(primary_key=True)
    docket = TextField(index=True)
    topic = TextField(null=True, index=True)
    similarity = FloatField()
    topics = TextField()  # JSON list of topic ids, the main one first
    placed = BooleanField(default=False)  # placed against stored topics, not clustered


class TopicMap(BaseModel):
    """A docket's topic map as a whole: when it was last clustered, over how many comments,
    the next topic number, and what it says when it has no topics."""

    docket = TextField(primary_key=True)
    clustered_at = TextField(null=True)
    clustered_units = IntegerField(default=0)
    next_number = IntegerField(default=1)
    message = TextField(default="")


class PositionCode(BaseModel):
    """An analyst's position on one comment: the ground truth the positions stage learns from
    and never overrides. Its own table, keyed by the comment, so re-fetching or re-indexing the
    comment leaves it; only ``forget --purge`` of its docket deletes it."""

    item = TextField(primary_key=True)
    docket = TextField(index=True)
    position = TextField()  # pipeline.positions.codes.POSITIONS
    coder = TextField()
    coded_at = TextField()  # UTC


class PositionMember(BaseModel):
    """One comment's position as the positions stage left it: its own code, a coded member
    of its campaign's, the language-model judge's (with its evidence) or the classifier's
    (with its probability). ``judged``, ``evidence`` and ``quote`` are the judge's answer for
    its unit whatever the source (a coded comment's too: what the judge is scored by)."""

    item = TextField(primary_key=True)
    docket = TextField(index=True)
    position = TextField()
    source = TextField()  # coded | campaign | llm | model
    probability = FloatField()  # 1.0 for a code (and for the judge's, which gives none)
    unit = TextField()  # the comment judged for it: itself, or its campaign's letter
    submissions = IntegerField()  # what its record stands for (1 + duplicateComments)
    judged = TextField(default="")  # the judge's position for its unit ("": no judge)
    evidence = TextField(default="")  # the judge's verbatim quote of the unit's text
    quote = TextField(default="")  # checked (found in the text) | flagged (not found) | ""


class PositionJudgement(BaseModel):
    """The language-model judge's answer for one distinct text of a docket: asked once per
    text, judge (its url, model and prompt) and docket, so a run with nothing new asks
    nothing and a changed model asks again. The key is never stored."""

    docket = TextField(index=True)
    text = TextField()  # the fingerprint of the text judged
    judge = TextField()  # the fingerprint of the url, model and prompt that judged it
    unit = TextField()  # the comment whose text it is (a campaign's letter)
    position = TextField()
    evidence = TextField()
    quote = TextField()  # checked | flagged
    model = TextField()  # the model's name, as set (llm_model)
    judged_at = TextField()  # UTC

    class Meta:
        table_name = "position_judgement"
        primary_key = CompositeKey("docket", "text", "judge")


class PositionModel(BaseModel):
    """A docket's classifier as last fitted (coefficients as JSON, so new comments are
    predicted without a refit), its cross-validated predictions, its prevalence estimates,
    and what it says when it has too few codes."""

    docket = TextField(primary_key=True)
    fingerprint = TextField(default="")  # the codes, settings and embedder it was fitted on
    message = TextField(default="")  # "not estimated yet: code N more"; "" when fitted
    model = TextField(default="")  # JSON: classes, coef, intercept
    cross_validated = TextField(default="")  # JSON list of [true, predicted] of the codes
    estimates = TextField(default="")  # JSON: the prevalence figures with their intervals
    codes = IntegerField(default=0)  # codes it learnt from
    fitted_at = TextField(null=True)


class DocumentSection(BaseModel):
    """One section of a rule document's text, as ``pipeline.sections.splitter`` found it: its
    id (stable across re-extraction: its number path, "II.B", "§200.1", "q1.a"), heading,
    text, first page and parent, in reading order."""

    document = TextField()
    docket = TextField(index=True)
    section = TextField()  # the section's id within its document
    ordinal = IntegerField()  # its place in reading order
    heading = TextField()
    text = TextField()
    page = IntegerField(null=True)
    parent = TextField(null=True)
    kind = TextField()

    class Meta:
        table_name = "document_section"
        primary_key = CompositeKey("document", "section")


class SectionLink(BaseModel):
    """A comment tied to a section of the document it answers: a citation it makes ("cited",
    the section None when no section matches it, kept as written) with the sentence citing
    it, or a passage nearest the section by the index's vectors ("nearest", its similarity)."""

    comment = TextField(index=True)
    docket = TextField(index=True)
    document = TextField(index=True)
    section = TextField(null=True)
    kind = TextField()  # cited | nearest
    citation = TextField(null=True)  # as written, for a citation
    evidence = TextField()  # the citing sentence, or the comment's nearest passage
    similarity = FloatField(null=True)


MODELS = (Meta, Docket, Item, Attachment, ItemState, DocketStage, Lease, Run, MirrorObject,
          CampaignMember, CampaignBand, Campaign, ItemClaim, MirrorScan,
          Organisation, OrganisationVariant, OrganisationMember, OrganisationAcronym,
          DocketDocument, LineageComment, LineageLink, FederalRegisterDocument, Topic, TopicMember, TopicMap,
          DocketFailure, PositionCode, PositionMember, PositionModel, PositionJudgement, DocumentSection,
          SectionLink)
