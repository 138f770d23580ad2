"""Change detection from a mirror listing: which objects are new, changed or gone since the
docket's last listing.

S3's ListObjectsV2 gives every object's size, ETag and LastModified, a folder walk its size
and mtime (``pipeline.sources.mirror.ListedObject``); the state DB keeps what the last
listing showed (``pipeline.store.mirror_objects``). Comparing the two is all a rerun needs
to know which objects to GET: an unchanged docket costs its LIST pages and nothing else.

A listing is compared a page at a time (``diff_page``: the page's objects against the
stored rows of the same keys), so no comparison holds a docket's listing. What is gone is
known by count first (``ListingTally.some_gone``: fewer stored objects seen than stored),
and only then by key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pipeline.sources.mirror import ListedObject
from pipeline.store.mirror_objects import LISTED, StoredObject


@dataclass
class PageDiff:
    new: list[ListedObject] = field(default_factory=list)
    changed: list[ListedObject] = field(default_factory=list)
    unchanged: int = 0

    @property
    def seen(self) -> int:
        """Stored (listed) objects this page showed again: changed or unchanged."""
        return len(self.changed) + self.unchanged

    def fresh(self) -> list[ListedObject]:
        """The objects to read: new or changed."""
        return [*self.new, *self.changed]


def diff_page(entries: Iterable[ListedObject], stored: dict[str, StoredObject]) -> PageDiff:
    """Compare listed objects with the stored rows of their keys. An object listed again
    after it was gone is new; one whose size or version differs is changed."""
    diff = PageDiff()
    for entry in entries:
        before = stored.get(entry.key)
        if before is None or before.state != LISTED:
            diff.new.append(entry)
        elif before.size != entry.size or before.version != entry.version:
            diff.changed.append(entry)
        else:
            diff.unchanged += 1
    return diff


@dataclass
class ListingTally:
    """A whole listing's counts, page by page; ``stored`` is how many objects the last
    listing showed (``mirror_objects.count_listed``, read before this one is recorded)."""

    stored: int
    listed: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0

    def add(self, size: int, diff: PageDiff) -> None:
        self.listed += size
        self.new += len(diff.new)
        self.changed += len(diff.changed)
        self.unchanged += diff.unchanged

    @property
    def some_gone(self) -> bool:
        """A stored object this listing did not show (each shown one was counted once)."""
        return self.changed + self.unchanged < self.stored
