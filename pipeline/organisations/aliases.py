"""The user's alias file: organisation names as the user wants them, which always win.

``organisations.yaml`` in the data folder (or the file the ``organisations_file`` setting
names)::

    organisations:
      - name: American Medical Association      # the canonical name shown
        variants: [AMA, Amer. Med. Assn.]        # merged into it
      - name: American Hospital Association of Ohio   # its own organisation: never merged
                                                       # into American Hospital Association
    split:
      - name: AMA/AHA                                  # a field naming several organisations
        into: [American Medical Association, American Hospital Association]
      - name: Smith and Jones                          # one organisation: never split

Every name and variant is compared in its normal form (``names.normalise``). A comment whose
name is listed goes to that entry's organisation whatever the matching would say; the file's
digest is one of the stage's terms, and each listed name's entry is part of the fingerprint
of the comments written with that name (and the ``split:`` entry of the whole field they
wrote), so a changed file redoes exactly those comments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pipeline.errors import ConfigError
from pipeline.fingerprints import digest
from pipeline.organisations.matching import Known, organisation_id
from pipeline.organisations.names import normalise

FILE_NAME = "organisations.yaml"


@dataclass(frozen=True)
class Aliases:
    listed: dict[str, Known] = field(default_factory=dict)  # normalised name -> its organisation
    text_digest: str = ""  # "" without a file: the stage's terms at their default
    splits: dict[str, tuple[str, ...]] = field(default_factory=dict)  # normalised field -> its parts

    def field_digest(self, field_normalised: str | None, variants: list[str]) -> str:
        """What the file says about a comment's field: its ``split:`` entry and the entry of
        every name it was split into ("" when it says nothing)."""
        parts = [self.entry_digest(v) for v in variants]
        split = self.splits.get(field_normalised or "")
        if split is None and not any(parts):
            return ""
        return digest("split", repr(split), *parts)

    def entry_digest(self, normalised: str | None) -> str:
        """What the file says about this name ("" when it says nothing)."""
        known = self.listed.get(normalised or "")
        return digest(known.organisation, known.name) if known else ""


def alias_path(settings) -> Path:
    named = getattr(settings, "organisations_file", "") or ""
    return Path(named).expanduser() if named else settings.data_path / FILE_NAME


def load_aliases(settings) -> Aliases:
    path = alias_path(settings)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if getattr(settings, "organisations_file", ""):
            raise ConfigError(f"organisations_file {path} does not exist") from None
        return Aliases()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"organisations file {path} cannot be read: {exc}") from None
    return parse_aliases(text, str(path))


def parse_aliases(text: str, where: str = FILE_NAME) -> Aliases:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise ConfigError(f"{where}: not valid YAML" + (f" (line {line + 1})" if line is not None else "")) from None
    entries = data.get("organisations", []) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: expected 'organisations:' with a list of entries (name, variants)")
    listed: dict[str, Known] = {}
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            raise ConfigError(f"{where}: entry {n} needs a 'name' (the canonical organisation name)")
        variants = entry.get("variants") or []
        if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
            raise ConfigError(f"{where}: entry {n} ({entry['name']}): 'variants' must be a list of names")
        name = entry["name"].strip()
        known = Known(organisation_id(normalise(name)), name)
        for written in [name, *variants]:
            key = normalise(written)
            if not key:
                continue
            if key in listed and listed[key] != known:
                raise ConfigError(f"{where}: {written!r} is listed under both {listed[key].name!r} and {name!r}")
            listed[key] = known
    return Aliases(listed, digest("organisations-aliases", text), parse_splits(data.get("split", []), where))


def parse_splits(entries, where: str) -> dict[str, tuple[str, ...]]:
    """``split:`` entries: a field as written (``name``) and the organisations it names
    (``into``; none or empty: the field is one organisation, never split)."""
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: expected 'split:' with a list of entries (name, into)")
    splits: dict[str, tuple[str, ...]] = {}
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not normalise(entry["name"]):
            raise ConfigError(f"{where}: split entry {n} needs a 'name' (the field as written)")
        into = entry.get("into") or []
        if not isinstance(into, list) or not all(isinstance(v, str) and normalise(v) for v in into):
            raise ConfigError(f"{where}: split entry {n} ({entry['name']}): 'into' must be a list of names")
        splits[normalise(entry["name"])] = tuple(v.strip() for v in into)
    return splits


def alias_terms(settings) -> str:
    """The stage's terms: the alias file's digest, "" when there is none. Never raises: a bad
    or missing file still changes the terms, and the stage's run reports it in one line (a
    target asked from Luigi's scheduling would show a traceback instead)."""
    path = alias_path(settings)
    try:
        return digest("organisations-aliases", path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"missing {path}" if getattr(settings, "organisations_file", "") else ""
    except (OSError, UnicodeDecodeError) as exc:
        return f"unreadable {path}: {type(exc).__name__}"
