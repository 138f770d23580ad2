"""Opening the state DB (SQLite by default, PostgreSQL by URL), schema creation and upgrades."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import uuid
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import peewee
from playhouse.migrate import PostgresqlMigrator, SqliteMigrator, migrate
from psycopg2.extensions import parse_dsn

from pipeline.config import masked_url
from pipeline.counters import ROWS_WRITTEN, STATE_QUERIES, count_query, counters, note_write
from pipeline.errors import ConfigError
from pipeline.store import models, prepared
from pipeline.store.models import (
    MODELS,
    Attachment,
    Campaign,
    CampaignBand,
    CampaignMember,
    Docket,
    Item,
    ItemState,
    Meta,
    Run,
)

SCHEMA_VERSION = 24
SCHEMA_LOCK = 0x646B7473  # pg_advisory_xact_lock key of state-DB migrations ("dkts")
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
# How long a SQLite writer waits for another's transaction: longer than a derived stage's run
# over a large docket from nothing (a 20,000-comment campaign grouping: 213 s; docs/OPERATING.md).
SQLITE_BUSY_SECONDS = 900


# A test hook, never set in production: "STAGE:N" makes this process SIGKILL itself just
# before the N-th state-DB write statement of a run of STAGE (from its held output to its
# marker), so crash tests land at an exact write (``stage_writes``); "STAGE:count" logs how
# many writes a run of STAGE made (what N is drawn over).
KILL_AT_WRITE = "DOCKETEER_TEST_KILL_AT_WRITE"
_kill_countdown: list[int] = []  # the writes left before the kill, while a hooked stage runs


@contextmanager
def stage_writes(stage: str):
    """Arms ``KILL_AT_WRITE`` for this stage's run (nothing when the variable is unset)."""
    hook = os.environ.get(KILL_AT_WRITE, "")
    name, _, count = hook.partition(":")
    if not hook or name != stage:
        yield
        return
    counting = count == "count"
    _kill_countdown[:] = [0 if counting else int(count or 1)]
    try:
        yield
    finally:
        if counting:
            logging.getLogger("docketeer").warning("%s: %s made %d state-DB writes", KILL_AT_WRITE, stage,
                                                   -_kill_countdown[0])
        _kill_countdown.clear()


class _CountingMixin:
    """Counts write statements, so tests can assert that a rerun wrote nothing, and every
    statement (``state_queries``, ``item_reads``), so they can assert what a no-op read."""

    def execute_sql(self, sql, params=None, *args, **kwargs):
        count_query(sql, STATE_QUERIES)
        if sql.lstrip()[:7].upper().startswith(_WRITES):
            counters.incr(ROWS_WRITTEN)
            if _kill_countdown:
                _kill_countdown[0] -= 1
                if _kill_countdown[0] == 0:
                    os.kill(os.getpid(), signal.SIGKILL)
        cursor = super().execute_sql(sql, params, *args, **kwargs)
        note_write(sql, cursor.rowcount)
        return cursor


class StateSqlite(_CountingMixin, peewee.SqliteDatabase):
    pass


class StatePostgres(_CountingMixin, peewee.PostgresqlDatabase):
    pass


def make_database(url: str, data_dir: Path) -> peewee.Database:
    """A peewee database for ``url`` (empty: SQLite at data_dir/state.sqlite)."""
    if url.startswith(("postgresql://", "postgres://")):
        params = parse_dsn(url)
        return StatePostgres(params.pop("dbname", "postgres"), **params)
    if url and not url.startswith("sqlite:///"):
        raise ConfigError(f"state_url must be empty, sqlite:///PATH or postgresql://...: {masked_url(url)!r}")
    path = Path(url[len("sqlite:///"):]) if url else data_dir / "state.sqlite"
    # IMMEDIATE: a transaction takes the write lock when it begins. A deferred one that reads
    # and then writes cannot wait for another writer (SQLite answers "database is locked"
    # at once, busy_timeout or not), which is what two Luigi workers would hit.
    # A writer waits up to SQLITE_BUSY_SECONDS for the lock: a derived stage (campaigns,
    # topics, ...) holds it for its whole run, one transaction (DocketStageTask._one_transaction),
    # and another worker's writes then wait their turn rather than stop the run.
    return StateSqlite(
        str(path),
        lock_type="IMMEDIATE",
        pragmas={
            "journal_mode": "wal",
            "busy_timeout": SQLITE_BUSY_SECONDS * 1000,
            "foreign_keys": 1,
            "synchronous": "normal",
        },
    )


def _redacted(url: str) -> str:
    return url.split("@")[-1] if "@" in url else url


def open_state_db(url: str, data_dir: Path) -> peewee.Database:
    """Bind the models to the state DB, create or upgrade its schema; one clear error if unusable.

    An existing SQLite file is checked first (``unusable_sqlite``): a file that is empty,
    not a SQLite database, another program's database or damaged is refused with the way
    back, never taken for a new store (that would forget every seal, forget and retry, and
    refetch everything). Only a path where no file exists becomes a new store, made aside
    and moved into place whole (``_create_sqlite_store``), so no failed or killed first run
    leaves a half-made file there to be refused."""
    path = sqlite_path(url, data_dir)
    if path is not None and not path.exists():
        _create_sqlite_store(path, data_dir)
    if path is not None:
        reason = unusable_sqlite(path)
        if reason:
            raise UnusableStateDB(path, reason)
    db = make_database(url, data_dir)
    try:
        db.connect(reuse_if_open=True)
    except peewee.OperationalError as exc:
        raise ConfigError(f"cannot open state DB {_redacted(url) or data_dir}: {_first_line(exc)}") from None
    models.database.initialize(db)
    try:
        ensure_schema(db)
    except peewee.DatabaseError as exc:
        # Damaged past what quick_check saw: said as such. Anything else (a full disk during
        # an upgrade) is what it is.
        reason = unusable_sqlite(path) if path is not None else None
        if reason is None:
            raise
        db.close()
        raise UnusableStateDB(path, reason) from exc
    return db


def _create_sqlite_store(path: Path, data_dir: Path) -> None:
    """A new SQLite store with its schema, made under a name of its own and linked into
    place only when whole (``os.link`` never replaces: a store another process made
    meanwhile wins, and this one is dropped). A failure (a full disk) leaves nothing."""
    making = path.with_name(f".{path.name}.new-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    companions = [making, making.with_name(making.name + "-wal"), making.with_name(making.name + "-shm")]
    db = make_database(f"sqlite:///{making}", data_dir)
    try:
        db.connect()
        models.database.initialize(db)
        ensure_schema(db)
        db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file
        db.close()
        try:
            os.link(making, path)
        except FileExistsError:
            pass  # another process made the store first: theirs is opened
        except OSError:  # a file system without hard links: a rename, unless one appeared
            if not path.exists():
                os.replace(making, path)
    finally:
        if not db.is_closed():
            db.close()
        for leftover in companions:
            leftover.unlink(missing_ok=True)


class UnusableStateDB(ConfigError):
    """An existing state DB file that cannot be used as it is: one line, the way back named."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"state DB {path} is not usable ({reason}): restore it from a snapshot "
            f"(`docketeer restore`), or start a new, empty store on purpose with "
            f"`docketeer --reinitialise dockets` (the file is moved aside, not deleted)")
        self.path = path


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def sqlite_path(url: str, data_dir: Path) -> Path | None:
    """The SQLite file a state URL names (None for PostgreSQL)."""
    if url.startswith(("postgresql://", "postgres://")):
        return None
    return Path(url[len("sqlite:///"):]) if url else data_dir / "state.sqlite"


SQLITE_HEADER = b"SQLite format 3\x00"


def unusable_sqlite(path: Path, *, full: bool = False) -> str | None:
    """Why the existing file at ``path`` cannot be this store's state DB, or None when it can:
    empty, not SQLite, damaged (``quick_check``; ``integrity_check`` with ``full``, as
    ``verify`` asks), or tables of another program's without docketeer's ``meta``. A SQLite
    file holding no table at all (a first open killed before its schema) is usable."""
    with open(path, "rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if not header:
        return "an empty file"
    if header != SQLITE_HEADER:
        return "not a SQLite database"
    pragma = "integrity_check" if full else "quick_check"
    try:
        # Read-only, by URI: the check never writes, creates a journal or repairs anything.
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as check:
            found = [row[0] for row in check.execute(f"PRAGMA {pragma}(5)").fetchall()]
            if found != ["ok"]:
                return f"{pragma}: {'; '.join(found)[:200]}"
            tables = {row[0] for row in check.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        return _first_line(exc)
    if tables and Meta._meta.table_name not in tables:
        return f"another program's database (tables: {', '.join(sorted(tables)[:5])})"
    return None


def set_aside_unusable(url: str, data_dir: Path) -> Path | None:
    """``--reinitialise``: move an unusable SQLite state DB (and its -wal/-shm) aside as
    ``<name>.unusable-<UTC time>``, so the next open starts a new store; None when there was
    nothing unusable to move. A usable store is never touched."""
    path = sqlite_path(url, data_dir)
    if path is None or not path.exists() or unusable_sqlite(path) is None:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.unusable-{stamp}")
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.rename(aside.with_name(aside.name + suffix))
    path.rename(aside)
    return aside


def schema_version(db: peewee.Database) -> int:
    if not db.table_exists(Meta._meta.table_name):
        return 0
    row = Meta.get_or_none(Meta.key == "schema_version")
    return int(row.value) if row else 0


def ensure_schema(db: peewee.Database) -> None:
    """Create every table at the latest version, or upgrade an older store in place."""
    current = schema_version(db)
    if current == SCHEMA_VERSION:
        return
    with db.atomic():
        if is_postgres(db):
            # Hosts starting at once on a new shared state DB: one creates or upgrades the
            # schema, the others wait here and find it done.
            db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            current = schema_version(db)
            if current == SCHEMA_VERSION:
                return
        if current == 0:
            db.create_tables(MODELS, safe=True)
            _create_judging_indexes(db)
            Meta.insert(key="instance_id", value=uuid.uuid4().hex).on_conflict_ignore().execute()
        else:
            for version in range(current + 1, SCHEMA_VERSION + 1):
                UPGRADES[version](db)
        (
            Meta.insert(key="schema_version", value=str(SCHEMA_VERSION))
            .on_conflict(conflict_target=[Meta.key], update={Meta.value: str(SCHEMA_VERSION)})
            .execute()
        )


def is_postgres(db: peewee.Database) -> bool:
    return isinstance(db, peewee.PostgresqlDatabase)


def integrity_check(db: peewee.Database) -> tuple[str, list[str]]:
    """(what was checked, the problems found): SQLite's integrity_check, or on PostgreSQL a
    full read of every table, which meets any unreadable page."""
    if is_postgres(db):
        for model in MODELS:
            db.execute_sql(f'SELECT count(*) FROM "{model._meta.table_name}"').fetchone()
        return f"postgresql: {len(MODELS)} tables read through", []
    try:
        rows = [r[0] for r in db.execute_sql("PRAGMA integrity_check").fetchall()]
    except peewee.DatabaseError as exc:  # damaged past what the check can read
        return "sqlite integrity_check", [_first_line(exc)]
    return "sqlite integrity_check: ok", [] if rows == ["ok"] else rows


def _migrator(db: peewee.Database):
    return PostgresqlMigrator(db) if is_postgres(db) else SqliteMigrator(db)


def _upgrade_to_2(db: peewee.Database) -> None:
    """v2: runs record whether they stopped because their budget was spent."""
    columns = {c.name for c in db.get_columns(Run._meta.table_name)}
    if "budget_spent" not in columns:
        migrate(_migrator(db).add_column(Run._meta.table_name, "budget_spent", Run.budget_spent))


def _upgrade_to_3(db: peewee.Database) -> None:
    """v3: items waiting to retry (attempts, first failure, next attempt) and the docket's
    earliest next attempt."""
    _add_columns(db, {
        ItemState: (ItemState.attempts, ItemState.first_failed_at, ItemState.next_attempt_at),
        Docket: (Docket.retry_due_at,),
    })


def _upgrade_to_4(db: peewee.Database) -> None:
    """v4: an item's original HTML body beside its text, and each attachment's title."""
    _add_columns(db, {Item: (Item.body_html,), Attachment: (Attachment.title,)})


def _add_columns(db: peewee.Database, wanted: dict) -> None:
    """Add the fields' columns that a table lacks (a half-done upgrade is finished, not redone)."""
    operations = []
    for model, fields in wanted.items():
        columns = {c.name for c in db.get_columns(model._meta.table_name)}
        operations += [_migrator(db).add_column(model._meta.table_name, f.column_name, f)
                       for f in fields if f.column_name not in columns]
    if operations:
        migrate(*operations)


def _upgrade_to_5(db: peewee.Database) -> None:
    """v5: the mirror objects each docket's listing showed (change detection from the listing)."""
    db.create_tables([models.MirrorObject], safe=True)


def _upgrade_to_6(db: peewee.Database) -> None:
    """v6: campaign groups (members, their LSH band keys, the groups)."""
    db.create_tables([CampaignMember, CampaignBand, Campaign], safe=True)


def _upgrade_to_7(db: peewee.Database) -> None:
    """v7: item claims, so that two workers on one docket stage split it (PostgreSQL)."""
    db.create_tables([models.ItemClaim], safe=True)


def _upgrade_to_8(db: peewee.Database) -> None:
    """v8: a mirror JSON fetch read, kept for backfill (read once, not twice)."""
    columns = {c.name for c in db.get_columns(models.MirrorObject._meta.table_name)}
    if "body" not in columns:
        migrate(_migrator(db).add_column(models.MirrorObject._meta.table_name, "body", models.MirrorObject.body))


# The wrappers' one statement over every known docket (``markers.input_lines``) reads these
# two indexes and never the tables: in a state DB of 100,000 dockets their rows lie all over
# a file of 200 MB, and a new process read them cold (0.45 s, against 0.15 s from these).
DOCKET_JUDGED_INDEX = "docket_judged"
DOCKET_STAGE_OUTPUT_INDEX = "docket_stage_output"


def _create_judging_indexes(db: peewee.Database) -> None:
    """A docket's seal, pull, retry and discovery beside its id (in byte order on PostgreSQL,
    the order the checksum's lines take), and a marker's output beside its key."""
    if is_postgres(db):
        db.execute_sql(f'CREATE INDEX IF NOT EXISTS "{DOCKET_JUDGED_INDEX}" ON "docket" '
                       '("id" COLLATE "C") INCLUDE ("sealed_at", "retry_due_at", "last_pull_at", "discovered_by")')
        db.execute_sql(f'CREATE INDEX IF NOT EXISTS "{DOCKET_STAGE_OUTPUT_INDEX}" ON "docket_stage" '
                       '("docket", "stage") INCLUDE ("output_fingerprint")')
        return
    db.execute_sql(f'CREATE INDEX IF NOT EXISTS "{DOCKET_JUDGED_INDEX}" ON "docket" '
                   '("id", "sealed_at", "retry_due_at", "last_pull_at", "discovered_by")')
    db.execute_sql(f'CREATE INDEX IF NOT EXISTS "{DOCKET_STAGE_OUTPUT_INDEX}" ON "docket_stage" '
                   '("docket", "stage", "output_fingerprint")')


def _upgrade_to_9(db: peewee.Database) -> None:
    """v9: the covering indexes of the wrappers' judgement over every docket."""
    _create_judging_indexes(db)


def _upgrade_to_10(db: peewee.Database) -> None:
    """v10: a backfill run's mirror objects by item (a todo page looks up its own alone)."""
    db.create_tables([models.MirrorScan], safe=True)


def _upgrade_to_11(db: peewee.Database) -> None:
    """v11: each mirror object's item, so that a backfill after a mirror fetch reads a todo
    page's objects from the stored listing by item (the rows are filed lazily, docket by
    docket, by the first backfill that reads them: no pass over every row here)."""
    table = models.MirrorObject._meta.table_name
    _add_columns(db, {models.MirrorObject: (models.MirrorObject.item,)})
    if not any(index.columns == ["docket", "item"] for index in db.get_indexes(table)):
        migrate(_migrator(db).add_index(table, ("docket", "item"), False))


# The item columns schema v12 adds: the kept attributes of a detail record.
KEPT_COLUMNS = (Item.duplicate_comments, Item.subtype, Item.category, Item.state_province_region, Item.country,
                Item.gov_agency, Item.gov_agency_type, Item.tracking_nbr, Item.attachments_listed)
# The stages whose markers vouch for backfill's output in the state DB (the index's, in the
# index DB, vouches for extract's output, which is cleared with them).
REREAD_MARKERS = ("backfill", "extract", "ocr", "campaigns")
NO_DETAIL = ("gone", "failed")  # pipeline.store.items.NO_DETAIL: no record read, none to read again


def _upgrade_to_12(db: peewee.Database) -> None:
    """v12: the attributes people filter and count by (``duplicate_comments``, ``subtype``,
    ``category``, ``state_province_region``, ``country``, ``gov_agency``,
    ``gov_agency_type``, ``tracking_nbr``) and whether the record listed its attachments.
    Every item whose detail is stored is read once more (its detail no longer current for its
    summary), so that it gets them and a row per declared attachment; files already stored
    are not fetched again. The markers of backfill and the stages after it are dropped, so
    that the next run does that read for sealed dockets too."""
    _add_columns(db, {Item: KEPT_COLUMNS})
    _read_records_again()


def _read_records_again() -> None:
    """Every item whose detail is stored is read once more by the next backfill (its detail
    no longer current for its summary); files already stored are not fetched again. The
    markers of backfill and the stages after it are dropped, so sealed dockets are read too."""
    (Item.update(detail_summary_hash=None)
     .where(Item.detail_hash.is_null(False) & Item.detail_hash.not_in(NO_DETAIL)).execute())
    models.DocketStage.delete().where(models.DocketStage.stage.in_(REREAD_MARKERS)).execute()


def _upgrade_to_13(db: peewee.Database) -> None:
    """v13: organisations (their names in every spelling seen, each comment's, the acronyms a
    docket pairs with full names)."""
    db.create_tables([models.Organisation, models.OrganisationVariant, models.OrganisationMember,
                      models.OrganisationAcronym], safe=True)


def _upgrade_to_14(db: peewee.Database) -> None:
    """v14: a comment may have several organisations (a field naming several is split), so
    ``organisation_member`` is keyed by (item, position). Its rows are rebuilt: the resolver's
    version changed, so the next run resolves every comment once; the organisations markers
    are dropped so that sealed dockets are run too."""
    db.drop_tables([models.OrganisationMember], safe=True)
    db.create_tables([models.OrganisationMember], safe=True)
    models.DocketStage.delete().where(models.DocketStage.stage == "organisations").execute()


def _upgrade_to_15(db: peewee.Database) -> None:
    """v15: rule lineage (each docket's documents with their type, Federal Register number
    and window; the docket's RIN; each comment's document and phase; dockets linked). A
    docket resolved before learns its documents from the records the store already holds
    (the mirror's docket and documents JSON), never from the network; lineage's markers are
    new, so every docket's comments are tied by the next run."""
    _add_columns(db, {Docket: (Docket.rin,)})
    db.create_tables([models.DocketDocument, models.LineageComment, models.LineageLink,
                      models.FederalRegisterDocument], safe=True)
    from pipeline.store.documents import reread_stored_records

    reread_stored_records()


def _upgrade_to_16(db: peewee.Database) -> None:
    """v16: topic maps (each docket's topics, each comment's place on them, the map's state)."""
    db.create_tables([models.Topic, models.TopicMember, models.TopicMap], safe=True)


def _upgrade_to_17(db: peewee.Database) -> None:
    """v17: a docket resolved from the API before its documents were stored (it has no
    ``docket_document`` row, and no mirror listing the v15 upgrade could read them from) is
    marked ``documents_unread``: the next fetch reads its documents and RIN once, with no
    walk of its comments. Its fetch and lineage markers are dropped, so that the next run
    does that read even for a sealed docket, and then ties its comments to their phases."""
    _add_columns(db, {Docket: (Docket.documents_unread,)})
    from pipeline.store.documents import mark_documents_unread

    mark_documents_unread()


def _upgrade_to_18(db: peewee.Database) -> None:
    """v18: campaign band keys as 64-bit integers (``pipeline.store.campaign_bands``) under one
    index, the primary key (docket, key, item), instead of text keys under three; each
    compared member keeps the bands they were made with (``campaign_member.banding``), so
    that removing it makes them again. The stored members are rekeyed from their signatures, so every group stays
    as it is and a later run finds the same candidates."""
    import numpy as np

    from pipeline.store.campaign_bands import band_keys, banding, hashranges_of_v17

    table = CampaignBand._meta.table_name
    if "banding" in {c.name for c in db.get_columns(CampaignMember._meta.table_name)}:
        return  # made at this version already (the v6 upgrade creates the tables as they are now)
    banded: dict[str, list[str]] = {}  # docket -> its compared members, read before the old table goes
    sampled: dict[str, list[str]] = {}  # docket -> one member's v17 keys
    if table in db.get_tables():
        for docket, item in db.execute_sql(f"SELECT DISTINCT docket, item FROM {table} ORDER BY docket, item"):
            banded.setdefault(docket, []).append(item)
        for docket, items in banded.items():
            sampled[docket] = [key for (key,) in db.execute_sql(
                f"SELECT key FROM {table} WHERE item = {db.param}", (items[0],))]
        db.drop_tables([CampaignBand])
    _add_columns(db, {CampaignMember: (CampaignMember.banding,)})
    CampaignMember._schema.create_indexes(safe=True)  # (campaign, banding)
    db.create_tables([CampaignBand], safe=True)
    for docket, items in sorted(banded.items()):
        keys = sampled[docket]
        member = CampaignMember.get_or_none(CampaignMember.item == items[0])
        band_zero = next((k for k in keys if k.startswith("0:")), "")
        ranges = member and hashranges_of_v17(member.signature, band_zero, len(keys), len(member.signature) // 8, 4)
        if ranges is None:  # not keyed as v17 keyed them: the docket is grouped again, from scratch
            _forget_campaigns(docket)
            continue
        for start in range(0, len(items), 5000):
            chunk = items[start:start + 5000]
            signatures = dict(CampaignMember.select(CampaignMember.item, CampaignMember.signature)
                              .where(CampaignMember.item.in_(chunk)).tuples())
            chunk = [item for item in chunk if item in signatures]  # a band row left without its member
            if not chunk:
                continue
            keys = band_keys(np.stack([np.frombuffer(bytes.fromhex(signatures[i]), dtype="<u4") for i in chunk]),
                             ranges)
            prepared.run_many("campaign_member.banding", _banding_update, [(banding(ranges), item) for item in chunk])
            prepared.run_many("campaign_band.insert_v18", _band_insert, sorted(
                (docket, key, item) for item, row in zip(chunk, keys.tolist(), strict=True) for key in row))


def _banding_update(row: tuple):
    return CampaignMember.update(banding=row[0]).where(CampaignMember.item == row[1])


def _band_insert(row: tuple):
    return CampaignBand.insert_many([row], fields=[CampaignBand.docket, CampaignBand.key, CampaignBand.item])


def _forget_campaigns(docket_id: str) -> None:
    """The docket's campaign groups and the stage's states and markers: its next run groups
    every comment from scratch (the same groups and ids: they are built in a fixed order)."""
    CampaignMember.delete().where(CampaignMember.docket == docket_id).execute()
    Campaign.delete().where(Campaign.docket == docket_id).execute()
    ItemState.delete().where((ItemState.stage == "campaigns") & (ItemState.docket == docket_id)).execute()
    models.DocketStage.delete().where((models.DocketStage.stage == "campaigns")
                                      & (models.DocketStage.docket == docket_id)).execute()


# The item columns schema v19 adds: more of what a detail record says.
RECORD_COLUMNS = (Item.city, Item.submitter_rep, Item.reason_withdrawn, Item.restrict_reason,
                  Item.restrict_reason_type, Item.page_count)


def _upgrade_to_19(db: peewee.Database) -> None:
    """v19: the submitter's city and representative, why an item was withdrawn or restricted,
    and its content's page count (the record gave them; the normaliser did not keep them).
    Records are not read again for them: unlike v12's attributes they are empty in most
    records, and a read of every record would also extract every item again. A record read
    from now on (new, or changed upstream) fills them; a forced backfill fills a docket's."""
    _add_columns(db, {Item: RECORD_COLUMNS})


def _upgrade_to_20(db: peewee.Database) -> None:
    """v20: each organisation member keeps the line its name was read from (``evidence``).
    Nothing is read again here: the resolver's version changed (a guessed name must look like
    an organisation, comma lists are split), so the next run resolves every comment once from
    its record's fields (no file is read), which fills it; the organisations markers are
    dropped so that sealed dockets are run too."""
    _add_columns(db, {models.OrganisationMember: (models.OrganisationMember.evidence,)})
    models.DocketStage.delete().where(models.DocketStage.stage == "organisations").execute()


def _upgrade_to_21(db: peewee.Database) -> None:
    """v21: a docket stage's failure (an unexpected error of the stage as a whole) is a row
    with its reason, shown until the stage runs clean again. A new, empty table."""
    db.create_tables([models.DocketFailure], safe=True)


def _upgrade_to_22(db: peewee.Database) -> None:
    """v22: a rule document's sections and the comments tied to them (the sections stage).
    New, empty tables: the next run of the stage splits every document and links every
    comment."""
    db.create_tables([models.DocumentSection, models.SectionLink], safe=True)


def _upgrade_to_23(db: peewee.Database) -> None:
    """v23: an analyst's position codes, the positions stage's members and each docket's
    classifier. New, empty tables: the next IndexAll estimates each docket's positions."""
    db.create_tables([models.PositionCode, models.PositionMember, models.PositionModel], safe=True)


def _upgrade_to_24(db: peewee.Database) -> None:
    """v24: the language-model judge of positions: its answers, one per distinct text (a new,
    empty table), and each position member's judged position, evidence and quote check (empty
    columns). Nothing is redone: without ``llm_url`` the stage's fingerprints are as they were;
    with it, the next run asks the judge."""
    db.create_tables([models.PositionJudgement], safe=True)
    _add_columns(db, {models.PositionMember: (models.PositionMember.judged, models.PositionMember.evidence,
                                              models.PositionMember.quote)})


UPGRADES = {2: _upgrade_to_2, 3: _upgrade_to_3, 4: _upgrade_to_4, 5: _upgrade_to_5,
            6: _upgrade_to_6, 7: _upgrade_to_7, 8: _upgrade_to_8, 9: _upgrade_to_9,
            10: _upgrade_to_10, 11: _upgrade_to_11, 12: _upgrade_to_12,
            13: _upgrade_to_13, 14: _upgrade_to_14, 15: _upgrade_to_15, 16: _upgrade_to_16,
            17: _upgrade_to_17, 18: _upgrade_to_18, 19: _upgrade_to_19,
            20: _upgrade_to_20, 21: _upgrade_to_21, 22: _upgrade_to_22, 23: _upgrade_to_23,
            24: _upgrade_to_24}
