"""Change detection from a mirror listing: the diff, and the rows it is compared with, on
SQLite and PostgreSQL."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.fetch.mirror_listing import ListingTally, diff_page
from pipeline.sources.mirror import ListedObject
from pipeline.store import mirror_objects
from pipeline.store.models import MirrorObject

DOCKET = "EPA-HQ-2026-0001"
NOW = "2026-02-01T00:00:00Z"


def diff_listing(listed: dict[str, ListedObject]) -> SimpleNamespace:
    """A listing small enough for one page, compared as the mirror fetch compares each page
    (``diff_page`` against the stored rows of its keys), and its gone objects found as the
    fetch finds them once the count falls short (a scan of the walk, ``unseen_listed``)."""
    objects = list(listed.values())
    page = diff_page(objects, mirror_objects.stored_of([o.key for o in objects]))
    tally = ListingTally(mirror_objects.count_listed(DOCKET))
    tally.add(len(objects), page)
    gone: list[str] = []
    if tally.some_gone:
        scan = mirror_objects.new_scan(DOCKET, NOW)
        mirror_objects.record_scan(scan, DOCKET, [("", o) for o in objects], NOW)
        gone = [key for keys in mirror_objects.unseen_listed(DOCKET, scan) for key in keys]
        mirror_objects.drop_scan(scan)
    return SimpleNamespace(new=page.new, changed=page.changed, gone=gone, unchanged=page.unchanged,
                           is_empty=lambda: not (page.new or page.changed or gone))


def listed(*objects: ListedObject) -> dict[str, ListedObject]:
    return {o.key: o for o in objects}


def obj(name: str, size: int = 10, etag: str | None = '"e1"', modified: str = "2026-01-01T00:00:00+00:00"):
    return ListedObject(f"raw-data/EPA/{DOCKET}/text-{DOCKET}/comments/{name}", size, etag, modified)


def test_new_changed_unchanged_and_gone(state):
    first = listed(obj("a.json"), obj("b.json"), obj("c.json"))
    diff = diff_listing(first)
    assert len(diff.new) == 3 and not diff.changed and not diff.gone
    assert mirror_objects.record_listed(DOCKET, diff.new, "2026-01-01T00:00:00Z") == 3

    # b's bytes changed (new ETag), c is gone, d is new; a same-ETag rewrite of a is no change.
    second = listed(obj("a.json", modified="2026-02-01T00:00:00+00:00"), obj("b.json", etag='"e2"'),
                    obj("d.json"))
    diff = diff_listing(second)
    assert [o.key for o in diff.new] == [obj("d.json").key]
    assert [o.key for o in diff.changed] == [obj("b.json").key]
    assert diff.gone == [obj("c.json").key] and diff.unchanged == 1

    mirror_objects.record_listed(DOCKET, [*diff.new, *diff.changed], "2026-02-01T00:00:00Z")
    mirror_objects.record_gone(diff.gone, "2026-02-01T00:00:00Z", "no longer in the mirror listing")
    gone = MirrorObject.get_by_id(obj("c.json").key)
    assert (gone.state, gone.reason) == ("gone", "no longer in the mirror listing")
    assert MirrorObject.get_by_id(obj("b.json").key).etag == '"e2"'
    assert diff_listing(second).is_empty()

    # Listed again after it was gone: new again.
    diff = diff_listing(listed(*second.values(), obj("c.json")))
    assert [o.key for o in diff.new] == [obj("c.json").key]


def test_a_folder_object_changes_with_its_size_or_mtime(state):
    mirror_objects.record_listed(DOCKET, [obj("a.json", etag=None, modified="100")], "2026-01-01T00:00:00Z")
    assert diff_listing(listed(obj("a.json", etag=None, modified="100"))).unchanged == 1
    assert len(diff_listing(listed(obj("a.json", etag=None, modified="200"))).changed) == 1
    assert len(diff_listing(listed(obj("a.json", size=11, etag=None, modified="100"))).changed) == 1


@pytest.mark.parametrize("value", [
    "2026-12-01T20:08:44.000Z", "2026-12-01T20:08:44.123Z", "2026-12-01T20:08:44Z",  # listings
    "Tue, 01 Dec 2026 20:08:44 GMT",  # headers
    "2026-12-01T20:08:44+01:00", "1700000000", "2026-12-01 20:08:44",  # anything else: botocore's
])
def test_s3_timestamps_parse_as_botocores_own_parser_parses_them(value):
    """The S3 clients' faster timestamp parser (pipeline.sources.s3.s3_timestamp) gives what
    botocore's default gives, to the microsecond and the zone: stored listings compare equal."""
    from botocore.utils import parse_timestamp

    from pipeline.sources.s3 import s3_timestamp

    ours, theirs = s3_timestamp(value), parse_timestamp(value)
    assert ours == theirs and ours.isoformat() == theirs.isoformat() and ours.utcoffset() == theirs.utcoffset()
