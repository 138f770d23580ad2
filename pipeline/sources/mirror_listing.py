"""Change detection from a mirror listing: which objects are new, changed or gone since the
docket's last listing.

S3's ListObjectsV2 gives every object's size, ETag and LastModified, a folder walk its size
and mtime (``pipeline.sources.mirror.ListedObject``); the state DB keeps what the last
listing showed (``pipeline.store.mirror_objects``). Comparing the two is all a rerun needs
to know which objects to GET: an unchanged docket costs its LIST pages and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.sources.mirror import ListedObject
from pipeline.store.mirror_objects import LISTED, StoredObject


@dataclass
class ListingDiff:
    new: list[ListedObject] = field(default_factory=list)
    changed: list[ListedObject] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    unchanged: int = 0

    def fresh_keys(self) -> set[str]:
        """Keys to read: new or changed."""
        return {entry.key for entry in self.new} | {entry.key for entry in self.changed}

    def is_empty(self) -> bool:
        return not (self.new or self.changed or self.gone)


def diff_listing(listed: dict[str, ListedObject], stored: dict[str, StoredObject]) -> ListingDiff:
    """Compare a listing with the stored rows. An object listed again after it was gone is
    new; one whose size or version differs is changed; a stored one not listed is gone."""
    diff = ListingDiff()
    for key, entry in listed.items():
        before = stored.get(key)
        if before is None or before.state != LISTED:
            diff.new.append(entry)
        elif before.size != entry.size or before.version != entry.version:
            diff.changed.append(entry)
        else:
            diff.unchanged += 1
    diff.gone = sorted(key for key, before in stored.items() if before.state == LISTED and key not in listed)
    return diff
