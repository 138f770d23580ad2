"""Small named facts of the store (``meta`` rows): when discovery last ran, the schema version."""

from __future__ import annotations

from pipeline.store.models import Meta


def read_value(key: str) -> str | None:
    row = Meta.get_or_none(Meta.key == key)
    return row.value if row is not None else None


def write_value(key: str, value: str) -> None:
    Meta.insert(key=key, value=value).on_conflict(
        conflict_target=[Meta.key], update={Meta.value: value}
    ).execute()
