"""The ``org`` filter's one rule: which comments "a part of the submitter or organisation
name, any case" matches, for browsing, the organisation facet, the search's check and the
search itself (which is sent the resolved part as a list of keys).

A comment matches when its organisation or submitter field as written holds the text (any
case), or when it is a member of a resolved organisation one of whose names in normal form
(its canonical one or any variant pointing to it) holds the text in normal form: the
organisations stage also finds an organisation in a comment's title and signature, and
folds spellings ("Amer. Med. Assn." is "american medical association"). Before that stage
has run there are no members, and the rule is the written fields' alone.
"""

from __future__ import annotations

from peewee import fn

from pipeline.store.models import Item, Organisation, OrganisationMember, OrganisationVariant

# A name is compared by its first MAX_NAME_CHARS characters (the index DB's search too): no
# real name is longer, and one stored name of 100,000 characters must not make every
# request filtering by organisation slow for everyone. MAX_FILTER_CHARS bounds the text looked for.
MAX_NAME_CHARS = 1000
MAX_FILTER_CHARS = 200


def _head(field):
    return fn.SUBSTR(field, 1, MAX_NAME_CHARS)


def written_matches(text: str):
    """The comments whose organisation or submitter field holds ``text`` (any case; a % or _
    is a character, not a wildcard)."""
    text = text[:MAX_FILTER_CHARS]
    return _head(Item.organization).contains(text) | _head(Item.submitter).contains(text)


def resolved_members(text: str, docket: str | None = None):
    """A subquery of the comment keys of the resolved organisations one of whose names holds
    ``text`` in normal form (of ``docket``'s comments when given); None when ``text`` has no
    normal form ("Inc", "The", punctuation), which would otherwise hold every name."""
    from pipeline.organisations.names import normalise

    wanted = normalise(text[:MAX_FILTER_CHARS])
    if not wanted:
        return None
    canonical = Organisation.select(Organisation.id).where(_head(Organisation.normalised).contains(wanted))
    variants = (OrganisationVariant.select(OrganisationVariant.organisation)
                .where(_head(OrganisationVariant.normalised).contains(wanted)))
    members = OrganisationMember.select(OrganisationMember.item).where(
        OrganisationMember.organisation.in_(canonical) | OrganisationMember.organisation.in_(variants))
    return members.where(OrganisationMember.docket == docket) if docket else members


def matches(text: str):
    """The condition on an Item row: the comments the ``org`` filter with ``text`` matches."""
    members = resolved_members(text)
    written = written_matches(text)
    return written if members is None else written | Item.key.in_(members)


def member_keys(text: str, docket: str | None = None) -> list[str]:
    """The keys ``resolved_members`` stands for, in order: what a search request carries (the
    index DB cannot see the state DB's organisations); [] when there are none."""
    members = resolved_members(text, docket)
    if members is None:
        return []
    return sorted({key for (key,) in members.tuples()})
