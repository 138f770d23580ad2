"""Campaign groups of one docket, built and kept incrementally.

A comment to place (new, or changed since it was placed) goes, in (posted date, id) order:

1. to the group of a member with the same normalised text (exact hash), else
2. to the group of the most similar candidate whose exact Jaccard similarity of word shingles
   is at least the threshold — candidates being the stored members sharing an LSH band key
   with its MinHash signature (one indexed read for the batch) and the members placed in
   this run (``datasketch.MinHashLSH``) — else
3. to the campaign of a letter it holds: a comment with no such match whose shingles hold at
   least ``CONTAINED_AT`` of a letter's (the founder of a group of two or more comments, of
   ``MIN_LETTER_SHINGLES`` or more shingles), the letter plus a long addition of its own that
   Jaccard similarity never reaches; it is not compared with later comments (its addition
   would draw other letters into the campaign), else
4. it starts a group, whose id is its own id.

A comment with too few words of its own (``text.too_short``) joins nothing: it is skipped.

Nothing else is recomputed: a stored member is read only as a candidate or when its group's
representative changes. Groups are built in a fixed order, so a rebuild of the same data from
scratch gives the same groups and ids.

Only a bounded set of each group's members is compared with later comments (they enter the
LSH and have their band keys stored): its founder, then members that no compared member
resembles at ``REPRESENTED_AT`` or more, at most ``COMPARED_PER_GROUP`` of them. A form
letter's 15,000 copies and near copies are represented by a few members, so placing a
comment costs the same in a group of 20 as in a group of 20,000: linear in the docket.

The representative is the most central of a group's earliest ``REPRESENTATIVE_SAMPLE``
members (highest mean Jaccard to the others): once a group is that large, later members
leave it as it is, so a member joining a big campaign costs no rereading of the group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from datasketch import MinHash, MinHashLSH
from datasketch.hashfunc import sha1_hash32

from pipeline.campaigns import queries as store
from pipeline.campaigns import text as campaign_text
from pipeline.collector import collector_paused
from pipeline.counters import counters
from pipeline.store.campaign_bands import band_keys, banding

NUM_PERM = 128
SCHEME = "affine32"  # datasketch's hash scheme: part of what a stored signature means
REPRESENTATIVE_SAMPLE = 25
CHECKS_PER_GROUP = 8
# A member whose best checked Jaccard to its group is at least this adds nothing to compare
# with; at most this many members of a group are compared with. 256: on the planted corpus
# of 20,000 comments (campaigns of up to 4,000 members), 32 or 64 left one comment of 14,000
# out of its campaign that comparing with every member placed; 256 gives the same groups.
REPRESENTED_AT = 0.9
COMPARED_PER_GROUP = 256
# A comment holding this share of a letter's shingles holds the letter (a real one edits a
# word or drops a sentence of it); a letter this short is a slogan many comments hold.
CONTAINED_AT = 0.75
MIN_LETTER_SHINGLES = 30
SIGNATURE_DTYPE = MinHash(num_perm=1).hashvalues.dtype  # as the scheme stores them
SIGNATURE_BATCH = 5000  # comments whose distinct shingles are hashed together (bounds the memory)
CAMPAIGN_COMPARES = "campaign_compares"  # comments placed (each compared with candidates)
CAMPAIGN_CANDIDATES = "campaign_candidates"  # exact Jaccard checks made
CAMPAIGN_ESTIMATES = "campaign_estimates"  # candidates' signatures compared with a comment's


@dataclass(frozen=True)
class Comment:
    """One comment to place: its id, posted date, the text it is grouped by, its submitter."""

    key: str
    posted_date: str | None
    text: str
    submitter: str | None = None

    @property
    def order_key(self) -> str:
        return f"{self.posted_date or ''}\x1f{self.key}"


@dataclass
class Prepared:
    comment: Comment
    normalised: str
    exact: str
    shingles: set[str]
    signature: MinHash
    bands: list[int] = field(default_factory=list)


@dataclass
class Placement:
    """What one run did: comments placed, groups joined, started and left."""

    placed: dict[str, str] = field(default_factory=dict)  # item -> campaign
    exact: dict[str, str] = field(default_factory=dict)  # item -> exact hash of its text
    started: set[str] = field(default_factory=set)
    contained: set[str] = field(default_factory=set)  # items that joined a letter they hold
    too_short: dict[str, int] = field(default_factory=dict)  # item -> its own words: joined nothing
    left: set[str] = field(default_factory=set)  # campaigns a changed comment was taken out of
    merged: set[str] = field(default_factory=set)  # campaigns another group was merged into
    touched: set[str] = field(default_factory=set)  # every campaign whose members changed


@lru_cache(maxsize=8)
def lsh_params(threshold: float) -> tuple[int, int]:
    """(bands, rows) datasketch's MinHashLSH picks for ``threshold`` (its default weights),
    made once a process: it integrates for them (1,290 calls of scipy's ``quad``), which
    was a twentieth of a run placing 40 new comments."""
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    return lsh.b, lsh.r


class Grouper:
    """Places comments of one docket into its stored groups."""

    def __init__(self, docket_id: str, threshold: float, *, docket_text: campaign_text.DocketText | None = None,
                 progress: Callable[[int], None] | None = None) -> None:
        self.docket_id, self.threshold = docket_id, threshold
        self.docket_text = docket_text
        self.letters: _Letters | None = None  # this run's: the letters a comment may hold
        self.progress = progress or (lambda n: None)
        self.lsh = MinHashLSH(num_perm=NUM_PERM, params=lsh_params(threshold))  # this run's members
        self.founded: dict[str, str] = {}  # campaign -> its founder's order key
        self.compared: dict[str, int] = {}  # campaign -> its members compared with (LSH, bands)
        self.banding = banding(self.lsh.hashranges)  # kept with a compared member's row

    # --- signatures -------------------------------------------------------------------------
    def set_band_keys(self, prepared: list[Prepared]) -> None:
        """The LSH band keys of each one's signature, as the run's MinHashLSH bands it
        (``pipeline.store.campaign_bands``), stored so a later run finds the member with one
        indexed read: made for all of them at once."""
        if not prepared:
            return
        keys = band_keys(np.stack([p.signature.hashvalues for p in prepared]), self.lsh.hashranges)
        for p, row in zip(prepared, keys.tolist(), strict=True):
            p.bands = row

    def prepare(self, comments: list[Comment], *, with_bands: bool) -> list[Prepared]:
        """Each comment's normalised text, exact hash, shingles and signature; its band keys
        too when stored members are looked up by them (``with_bands``), else only once it
        enters the compared set (a docket grouped from scratch: fewer than half do)."""
        normalised = [campaign_text.normalise(c.text, c.submitter, self.docket_text) for c in comments]
        shingle_sets = [campaign_text.shingles(n) for n in normalised]
        signatures = signatures_of(shingle_sets)
        prepared = [Prepared(c, n, campaign_text.exact_hash(n), sh, sig)
                    for c, n, sh, sig in zip(comments, normalised, shingle_sets, signatures, strict=True)]
        if with_bands:
            self.set_band_keys(prepared)
        return prepared

    # --- placing ----------------------------------------------------------------------------
    def place(self, comments: list[Comment], leaving: list[str] = ()) -> Placement:
        """Place ``comments`` (new or changed); ``leaving`` are comments that no longer have
        a text to compare and leave their groups."""
        with collector_paused():
            return self._place(comments, leaving)

    def _place(self, comments: list[Comment], leaving: list[str]) -> Placement:
        comments = sorted(comments, key=lambda c: c.order_key)
        placement = Placement()
        stored_any = store.count_members(self.docket_id) > 0
        if stored_any:  # a docket with no members yet has none to take out
            placement.left = self._take_out([c.key for c in comments] + list(leaving))
            placement.touched |= placement.left
            stored_any = store.count_members(self.docket_id) > 0
        prepared = self.prepare(comments, with_bands=stored_any)
        placement.too_short = {p.comment.key: len(p.normalised.split()) for p in prepared
                               if campaign_text.too_short(p.normalised)}
        prepared = [p for p in prepared if p.comment.key not in placement.too_short]
        stored_exact = (store.campaigns_by_exact_hash(self.docket_id, [p.exact for p in prepared])
                        if stored_any else {})
        stored_bands = (store.members_by_band(self.docket_id, [b for p in prepared for b in p.bands])
                        if stored_any else {})
        candidates = _Candidates(stored_bands)
        letters = self.letters = _Letters(self.docket_id, candidates)
        letters.stored_read = not stored_any  # a docket with no members yet has no letters
        exact = dict(stored_exact)  # normalised text -> campaign, stored and this run's
        entering: set[str] = set()  # the members compared with from now on
        for p in prepared:
            campaign, best = exact.get(p.exact), 1.0
            if campaign is None:
                campaign, best = self._join(p, candidates, placement, exact)
            if campaign is None and (campaign := self._holds_letter(p)):
                placement.contained.add(p.comment.key)
            if campaign is None:
                campaign = p.comment.key
                placement.started.add(campaign)
            if p.comment.key not in placement.contained and self._enters(campaign, best, stored_any):
                entering.add(p.comment.key)
                self.compared[campaign] = self.compared.get(campaign, 0) + 1
                self.lsh.insert(p.comment.key, p.signature, check_duplication=False)
            placement.placed[p.comment.key] = campaign
            placement.exact[p.comment.key] = p.exact
            placement.touched.add(campaign)
            exact.setdefault(p.exact, campaign)
            self.founded.setdefault(campaign, p.comment.order_key)
            candidates.add_run_member(p, campaign)
            if campaign in placement.started and campaign == p.comment.key:
                letters.started(campaign)
            letters.joined(campaign, p.comment.key)
            counters.incr(CAMPAIGN_COMPARES)
            self.progress(1)
        compared = [p for p in prepared if p.comment.key in entering]
        self.set_band_keys([p for p in compared if not p.bands])  # a docket's first run made none
        store.add_members(self.docket_id,
                          [_row(p, placement.placed[p.comment.key], self.banding if p.comment.key in entering else None)
                           for p in prepared],
                          _by_key([p.bands for p in compared], [p.comment.key for p in compared]))
        self._refresh(placement, {p.comment.key: p for p in prepared})
        return placement

    def _take_out(self, keys: list[str]) -> set[str]:
        """Remove changed comments from their groups; a group whose founder left takes its
        next earliest member's id now, before that comment may start a group of its own id."""
        left = store.remove_members(keys)
        for campaign in sorted(left & set(keys)):
            earliest = store.earliest_members(campaign, 1)
            if earliest:
                store.rename_campaign(campaign, earliest[0].item)
                left = (left - {campaign}) | {earliest[0].item}
            else:
                store.delete_campaign(campaign)
                left.discard(campaign)
        return left

    def _enters(self, campaign: str, best: float | None, stored_any: bool) -> bool:
        """Whether a member placed in ``campaign`` is compared with from now on: a founder
        always; a joining member when no member checked resembles it at REPRESENTED_AT and
        its group has fewer than COMPARED_PER_GROUP compared members (a stored group's are
        counted once, when first asked)."""
        if best is not None and best >= REPRESENTED_AT:
            return False
        return self._count_compared(campaign, stored_any) < COMPARED_PER_GROUP

    def _count_compared(self, campaign: str, stored_any: bool = True) -> int:
        if campaign not in self.compared:
            self.compared[campaign] = store.banded_count(campaign) if stored_any else 0
        return self.compared[campaign]

    def _join(self, p: Prepared, candidates: _Candidates, placement: Placement,
              exact: dict[str, str]) -> tuple[str | None, float | None]:
        """The group the comment joins and its best checked similarity there (None, None:
        none): of the groups it is similar enough to, the earliest founded; the others are
        merged into it (the comment bridges them, as a member written between two variants
        does)."""
        matches = self._matches(p, candidates)
        if not matches:
            return None, None
        into, *others = sorted(matches, key=self._founder_order)
        for other in others:
            self._merge(other, into, candidates, placement, exact)
        return into, max(matches.values())

    def _matches(self, p: Prepared, candidates: _Candidates) -> dict[str, float]:
        """The campaigns with a candidate at or above the threshold, each with its best
        checked similarity. A big campaign could bring many candidates: of each group's, the
        ``CHECKS_PER_GROUP`` closest by their signatures get the exact Jaccard check."""
        keys = set(self.lsh.query(p.signature))
        if p.bands:
            keys |= candidates.stored_for(p.bands)
        if not keys:
            return {}
        keys = sorted(keys)
        counters.incr(CAMPAIGN_ESTIMATES, len(keys))
        chosen = candidates.closest(keys, p.signature.hashvalues, CHECKS_PER_GROUP)
        shingles = candidates.shingles([k for group_keys in chosen.values() for k in group_keys])
        matches = {}
        enough = max(REPRESENTED_AT, self.threshold)
        checked = 0
        for campaign, group_keys in sorted(chosen.items()):
            best = 0.0
            for key in group_keys:  # past REPRESENTED_AT the rest cannot change a decision
                checked += 1
                best = max(best, campaign_text.jaccard(p.shingles, shingles[key]))
                if best >= enough:
                    break
            if best >= self.threshold:
                matches[campaign] = best
        counters.incr(CAMPAIGN_CANDIDATES, checked)
        return matches

    def _holds_letter(self, p: Prepared) -> str | None:
        """The campaign of the letter the comment holds (``CONTAINED_AT``), None when none.
        The letters are the docket's groups of two or more comments, each by its founder's
        shingles: the same text whether the group was stored or made in this run, so a
        rebuild from scratch decides as an incremental run did."""
        if len(p.shingles) < MIN_LETTER_SHINGLES:
            return None
        return self.letters.held_by(p.shingles, self._founder_order)

    def _founder_order(self, campaign: str) -> str:
        if campaign not in self.founded:  # a stored group: founded by its earliest member
            row = store.campaign_rows([campaign]).get(campaign)
            self.founded[campaign] = f"{row.first_seen or '' if row else ''}\x1f{campaign}"
        return self.founded[campaign]

    def _merge(self, other: str, into: str, candidates: _Candidates, placement: Placement,
               exact: dict[str, str]) -> None:
        compared = self._count_compared(other) + self._count_compared(into)  # before the move
        store.merge_campaign(other, into)  # its stored members
        self.compared.pop(other)
        self.compared[into] = compared
        for mapping in (placement.placed, exact):
            mapping.update({k: into for k, c in mapping.items() if c == other})
        candidates.moved(other, into)
        self.letters.merged(other, into)
        placement.touched.discard(other)
        placement.left.discard(other)
        placement.touched.add(into)
        placement.merged.add(into)

    # --- the groups' facts ------------------------------------------------------------------
    def _refresh(self, placement: Placement, prepared: dict[str, Prepared]) -> None:
        alone = self._new_singletons(placement)
        store.save_singletons(self.docket_id, [(key, prepared[key].comment.posted_date) for key in alone])
        rows = store.campaign_rows(placement.touched - alone)
        for campaign in sorted(placement.touched - alone):
            size, first, last = store.group_facts(campaign)
            if not size:
                store.delete_campaign(campaign)
                continue
            known = rows.get(campaign)
            earliest = store.earliest_members(campaign, 1)[0].item
            if earliest != campaign:  # an earlier comment joined: the group takes its id
                store.rename_campaign(campaign, earliest)
                placement.placed.update({k: earliest for k, c in placement.placed.items() if c == campaign})
                campaign = earliest
            representative = self._representative(campaign, known, placement, prepared)
            store.save_campaign(campaign, self.docket_id, size=size, representative=representative,
                                first_seen=first, last_seen=last)

    @staticmethod
    def _new_singletons(placement: Placement) -> set[str]:
        """Groups this run started that nobody else joined: their facts are known without a
        read (most independent comments), and are written in one statement."""
        sizes: dict[str, int] = {}
        for campaign in placement.placed.values():
            sizes[campaign] = sizes.get(campaign, 0) + 1
        return {c for c in placement.started & placement.touched
                if sizes.get(c) == 1 and placement.placed.get(c) == c and c not in placement.merged}

    def _representative(self, campaign: str, known, placement: Placement,
                        prepared: dict[str, Prepared]) -> str:
        sample = store.earliest_members(campaign, REPRESENTATIVE_SAMPLE)
        changed_sample = known is None or campaign in placement.left | placement.merged \
            or any(m.item in prepared for m in sample)
        if not changed_sample:
            representative = known.representative
        else:
            representative = most_central(sample, {k: p.shingles for k, p in prepared.items()})
        rep_text = next((m.text for m in sample if m.item == representative), None)
        if rep_text is None:
            rep_text = store.members([representative])[representative].text
        if known is None or representative != known.representative:
            texts = store.member_texts(campaign)  # every member's signal is against the new one
        else:  # this run's members: their texts are at hand
            texts = [(k, prepared[k].comment.text) for k, c in placement.placed.items() if c == campaign]
        known_sentences, seen = campaign_text.known_sentences(rep_text), {}
        added = {item: campaign_text.sentences_not_in(text, known_sentences, seen) for item, text in texts}
        # this run's members were written with none: only those adding a sentence are updated
        store.set_added_sentences({item: said for item, said in added.items() if said or item not in prepared})
        return representative


class _Letters:
    """The docket's letters in an inverted index, shingle -> campaigns: a comment's shared
    shingles with each letter are counted from its own shingles, never by comparing it with
    every letter.

    A group of two or more comments is a letter: the shingles its two earliest members share
    (what two copies have in common is the letter, without either one's own note). A group
    this run started is one once its second member joins; the stored ones are read when a
    comment is first looked up (one query, in a run where some comment matched no group):
    the same two comments whether the group was stored or made in this run, so a rebuild
    from scratch decides as an incremental run did."""

    def __init__(self, docket_id: str, candidates: _Candidates) -> None:
        self.docket_id, self.candidates = docket_id, candidates
        self.campaigns: dict[str, set[str]] = {}  # campaign -> its letter's shingles
        self.by_shingle: dict[str, set[str]] = {}
        self.earliest: dict[str, list[str]] = {}  # a group this run started -> its first two members
        self.joiner: dict[str, str] = {}  # a stored group -> the first member this run placed in it
        self.stored_read = False

    def _add(self, campaign: str, first: str, second: str) -> None:
        found = self.candidates.shingles([first, second])
        shingles = found[first] & found[second]
        if len(shingles) < MIN_LETTER_SHINGLES or campaign in self.campaigns:
            return
        self.campaigns[campaign] = shingles
        for s in shingles:
            self.by_shingle.setdefault(s, set()).add(campaign)

    def started(self, campaign: str) -> None:
        self.earliest[campaign] = []

    def joined(self, campaign: str, item: str) -> None:
        """``item`` was placed in ``campaign`` (members are placed in their order)."""
        earliest = self.earliest.get(campaign)
        if earliest is None:  # a stored group: its founder is its id
            self.joiner.setdefault(campaign, item)
            if self.stored_read and campaign not in self.campaigns:  # it had one member
                self._add(campaign, campaign, self.joiner[campaign])
        elif len(earliest) < 2:
            earliest.append(item)
            if len(earliest) == 2:
                self._add(campaign, *earliest)

    def merged(self, other: str, into: str) -> None:
        """``other`` joined ``into``, the earlier founded (``other``'s founder is after
        ``into``'s: the merged group's second member when ``into`` had one)."""
        for s in self.campaigns.pop(other, ()):
            self.by_shingle[s].discard(other)
        self.earliest.pop(other, None)
        self.joiner.pop(other, None)
        if into not in self.campaigns:
            self.joined(into, other)

    def held_by(self, shingles: set[str], founder_order: Callable[[str], str]) -> str | None:
        """The letter ``shingles`` hold the largest share of, at least ``CONTAINED_AT`` (on a
        tie the longer letter, then the earlier founded), None when none."""
        if not self.stored_read:
            self.stored_read = True
            pairs = store.letter_members(self.docket_id)
            pairs += [(campaign, item) for campaign, item in self.joiner.items()]  # groups of one, joined now
            self.candidates.shingles([key for pair in pairs for key in pair])  # read in one query
            for campaign, second in pairs:
                self._add(campaign, campaign, second)
        shared: dict[str, int] = {}
        for s in shingles:
            for campaign in self.by_shingle.get(s, ()):
                shared[campaign] = shared.get(campaign, 0) + 1
        held = [(n / len(self.campaigns[c]), len(self.campaigns[c]), c) for c, n in shared.items()
                if n >= CONTAINED_AT * len(self.campaigns[c])]
        if not held:
            return None
        return min(held, key=lambda h: (-h[0], -h[1], founder_order(h[2])))[2]


class _Candidates:
    """Members a comment may join: stored ones (found by band key with their campaign and
    signature; their normalised text read only when chosen for an exact check) and the
    ones this run placed. Their signatures are rows of one matrix and their campaigns one
    code per row, so a comment's candidates are estimated and ranked by numpy, not a
    Python loop over them."""

    def __init__(self, stored_bands: dict[int, list[tuple[str, str, str]]]) -> None:
        self.stored_bands = stored_bands
        self.row: dict[str, int] = {}  # item -> its row in the matrix and the codes
        self.matrix = np.empty((1024, NUM_PERM), dtype=SIGNATURE_DTYPE)
        self.codes = np.empty(1024, dtype=np.int64)  # row -> its campaign's code
        self.code: dict[str, int] = {}  # campaign -> code
        self.campaign: list[str] = []  # code -> campaign
        self.shingle_sets: dict[str, set[str]] = {}

    def _add(self, item: str, campaign: str, values: np.ndarray) -> None:
        n = len(self.row)
        if n == len(self.matrix):
            self.matrix = np.concatenate([self.matrix, np.empty_like(self.matrix)])
            self.codes = np.concatenate([self.codes, np.empty_like(self.codes)])
        code = self.code.get(campaign)
        if code is None:
            code = self.code[campaign] = len(self.campaign)
            self.campaign.append(campaign)
        self.matrix[n] = values
        self.codes[n] = code
        self.row[item] = n

    def stored_for(self, bands: list[int]) -> set[str]:
        found = set()
        for band in bands:
            for item, campaign, signature in self.stored_bands.get(band, ()):
                if item not in self.row:
                    self._add(item, campaign, signature_values(signature))
                found.add(item)
        return found

    def add_run_member(self, p: Prepared, campaign: str) -> None:
        self._add(p.comment.key, campaign, p.signature.hashvalues)
        self.shingle_sets[p.comment.key] = p.shingles

    def moved(self, other: str, into: str) -> None:
        if other not in self.code:
            return
        n = len(self.row)
        if into not in self.code:  # the merged group takes the other's code
            code = self.code.pop(other)
            self.code[into], self.campaign[code] = code, into
            return
        old, new = self.code.pop(other), self.code[into]
        codes = self.codes[:n]
        codes[codes == old] = new

    def closest(self, keys: list[str], values: np.ndarray, per_group: int) -> dict[str, list[str]]:
        """campaign -> its ``per_group`` candidates among ``keys`` (sorted) whose signatures
        agree most with ``values``, best first, the earlier key first on a tie."""
        row = self.row
        rows = np.fromiter([row[k] for k in keys], dtype=np.int64, count=len(keys))
        # the share of equal hash values (an exact count over NUM_PERM: what .mean() gives)
        agree = np.count_nonzero(self.matrix[rows] == values, axis=1)
        codes = self.codes[rows]
        # by campaign, then most agreeing, then key (``keys`` are sorted: their position)
        order = np.lexsort((np.arange(len(keys)), -agree, codes)).tolist()
        codes = codes.tolist()
        chosen: dict[str, list[str]] = {}
        last, taken = None, 0
        for i in order:
            code = codes[i]
            if code != last:
                last, taken, group = code, 0, chosen.setdefault(self.campaign[code], [])
            if taken < per_group:
                group.append(keys[i])
                taken += 1
        return chosen

    def shingles(self, keys: list[str]) -> dict[str, set[str]]:
        missing = [k for k in keys if k not in self.shingle_sets]
        for key, normalised in store.normalised_texts(missing).items():
            self.shingle_sets[key] = campaign_text.shingles(normalised)
        return {k: self.shingle_sets[k] for k in keys}


def signatures_of(shingle_sets: list[set[str]]) -> list[MinHash]:
    """The MinHash signature of each set of shingles, as ``MinHash.bulk`` makes them from
    the shingles' bytes with its SHA-1 hash, but each distinct shingle of a batch hashed
    once: a form letter's copies share most of theirs, and the hashing is most of the cost."""
    found: list[MinHash] = []
    for start in range(0, len(shingle_sets), SIGNATURE_BATCH):
        part = shingle_sets[start:start + SIGNATURE_BATCH]
        hashed = {s: sha1_hash32(s.encode()) for s in set().union(*part)}
        found += MinHash.bulk(part, num_perm=NUM_PERM, hashfunc=hashed.__getitem__)
        hashed.clear()  # the signatures are final (never updated): the batch's hashes can go
    return found


def signature_values(hex_text: str) -> np.ndarray:
    """A stored signature back as MinHash hash values (``_row`` wrote their bytes as hex)."""
    return np.frombuffer(bytes.fromhex(hex_text), dtype=SIGNATURE_DTYPE)


def most_central(sample: list[store.Member], known: dict[str, set[str]] | None = None) -> str:
    """The member with the highest mean Jaccard similarity to the others (the earliest on a
    tie); ``known``: shingles already made (this run's members), by item."""
    if len(sample) <= 2:
        return sample[0].item
    known = known or {}
    sets = [known.get(m.item) or campaign_text.shingles(m.normalised) for m in sample]
    pair = {}  # Jaccard is symmetric: each pair once (each sum still adds in member order)
    for i, a in enumerate(sets):
        for j in range(i + 1, len(sets)):
            pair[i, j] = pair[j, i] = campaign_text.jaccard(a, sets[j])
    scores = [sum(pair[i, j] for j in range(len(sets)) if j != i) for i in range(len(sets))]
    best = int(np.argmax(scores))  # argmax keeps the first of equal scores: the earliest
    return sample[best].item


def _by_key(bands: list[list[int]], items: list[str]) -> tuple[list[int], list[str]]:
    """Every (band key, item) of the compared members, as two lists in key order."""
    if not items:
        return [], []
    keys = np.array(bands, dtype=np.int64)
    order = np.argsort(keys, axis=None, kind="stable")
    return keys.ravel()[order].tolist(), np.repeat(np.array(items, dtype=object), keys.shape[1])[order].tolist()


def _row(p: Prepared, campaign: str, made_with: str | None) -> store.MemberRow:
    return store.MemberRow(p.comment.key, campaign, p.comment.order_key, p.comment.posted_date, p.exact,
                           p.comment.text, p.normalised, p.signature.hashvalues.tobytes().hex(), made_with)


