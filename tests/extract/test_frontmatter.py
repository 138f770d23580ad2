"""combined.md's frontmatter writer: byte for byte what yaml.dump writes, for real records,
generated frontmatter, adversarial strings and random values; and the fast path is taken
for the common shapes (else it would save nothing)."""

from __future__ import annotations

import json
import random
import string

import pytest
import yaml

from pipeline.extract import frontmatter as frontmatter_module
from pipeline.extract.frontmatter import dump_frontmatter, yaml_dump
from tests.fixtures import real_records

ADVERSARIAL = [
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "off", "OFF", "y", "Y", "n", "N", "true", "False",
    "~", "null", "Null", "NULL", "1e3", "1.0e3", "1.5", ".5", "5.", "-1", "+1", "0x1F", "0o17", "017",
    "0b101", "1_000", "1:30", "12:30", "12:30:45", "190:20:30.15", "2024-01-01", "2024-01-01 12:30:00",
    "2024-01-01T12:30:00Z", "2001-12-14t21:59:43.10-05:00", "- a", "-a", "-", "--", "---", "--- a",
    "...", ". a", "a: b", "a:b", "a:", ":a", ": a", ":", "#x", "a #x", "a#x", "a# x", " lead", "trail ",
    "  ", " ", "'q'", '"q"', "it's", 'say "hi"', "é", "Café au lait", "naïve résumé", "日本語", "Ω",
    "😀", "a😀b", "\t", "a\tb", "a\nb", "a\n", "\nb", "a\r\nb", "a\rb", "", "@x", "`x", "%x", "!x", "&x",
    "*x", "[x", "]x", "{x", "}x", "x[", "x]", "x{", "x}", "a, b", ",x", "|", ">", "|x", ">x", "?x", "? x",
    "?", "x?", "=", "<<", "<", "<x", ".nan", ".NaN", ".inf", "-.inf", "+.Inf", ".Inf", "x" * 20_000,
    ("word " * 3_000).strip(), "a" * 1_999, "b" * 2_000, "c" * 2_001, "\x00", "a\x00b", "\x7f", "a\x85b",
    "\xa0", "a\xa0b", "a\u2028b", "a\u2029b", "\ufeffa", "a\ufeff", "\ue000", "\ufffd", "\ufffe",
    "a\u200bb", "a\u00adb", "\x1b[0m", "a\\b", "\\", "C:\\path", "/path/to/file.pdf", "file name.pdf",
    "attachment_1.pdf", "sha256:abc", "extract-1", "CMS-2026-0001-0002", "0123456789", "1234567890abcdef",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "0e5", "0e10", "1e", "inf", "nan",
    "time limit exceeded (30 s)", "ValueError: bad", "encrypted", "a  b", "a - b", "a -b", "(x)", "x)",
    "%", "@", "a%b", "a@b", "a&b", "a*b", "a!b", "a|b", "a>b", "a'b", 'a"b', "a`b", "TRUE", "tRUE", "Off",
    "0", "00", "-0", "+0", "0.", "-.5", "1,000", "$100", "100%", "#", "##", "a #", "a#",
]


def frontmatter(**values) -> dict:
    """A frontmatter shaped like render_combined's, with ``values`` in its fields."""
    fm = {"comment_id": "CMS-2026-0001-0002", "docket_id": "CMS-2026-0001", "title": "A title",
          "chars": 5120,
          "attachments": [{"file": "attachment_1.pdf", "status": "ok", "reason": "", "chars": 5100, "pages": 2},
                          {"file": "attachment_2.docx", "status": "failed", "reason": "corrupt DOCX",
                           "chars": 0, "pages": None,
                           "ocr": {"status": "ok", "reason": "", "chars": 3}}],
          "sources": "3f2a", "extractor": "extract-1"}
    fm.update(values)
    return fm


def assert_same(mapping) -> None:
    assert dump_frontmatter(mapping) == yaml_dump(mapping)


def places(text: str) -> list[dict]:
    """``text`` in every place a frontmatter holds a string: its fields, an attachment's
    name and reason, a nested OCR reason, a capped list, and as a key."""
    return [
        frontmatter(title=text),
        frontmatter(comment_id=text, sources=text),
        frontmatter(attachments=[{"file": text, "status": "failed", "reason": text, "chars": 0, "pages": None}]),
        frontmatter(attachments=[{"file": "a.pdf", "status": "ok", "reason": "", "chars": 1, "pages": 1,
                                  "ocr": {"status": "failed", "reason": text, "chars": 0}}]),
        frontmatter(capped=[text, "attachment_1.pdf: 10 characters"]),
        {text: 1, "b": text},
        {"a": {text: [text]}},
    ]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_strings_match_yaml_dump(text):
    for mapping in places(text):
        assert_same(mapping)


def test_every_string_of_the_real_records_matches_yaml_dump(realdata):
    strings = set()

    def walk(value):
        if isinstance(value, str):
            strings.add(value)
        elif isinstance(value, dict):
            for key, inner in value.items():
                strings.add(key)
                walk(inner)
        elif isinstance(value, list | tuple):
            for inner in value:
                walk(inner)

    for path in realdata.rglob("*.json"):
        walk(json.loads(path.read_text(encoding="utf-8")))
    walk(real_records.DOCKETS)
    walk(real_records.ITEMS)
    strings.update(path.name for path in realdata.rglob("*"))
    assert len(strings) > 200
    for text in sorted(strings):
        for mapping in places(text):
            assert_same(mapping)


def test_the_common_shapes_take_the_fast_path(monkeypatch):
    """The frontmatter of an ordinary item never reaches yaml.dump (else nothing is saved)."""
    def refuse(mapping):
        raise AssertionError(f"fell back for {mapping}")

    monkeypatch.setattr(frontmatter_module, "yaml_dump", refuse)
    for mapping in [frontmatter(), frontmatter(title="Comment from Café Nurses’ Forum (2nd)"),
                    frontmatter(attachments=[], capped=["inline body capped at 100 characters (of 250)"]),
                    frontmatter(sources="sha256:0123abc", chars=0)]:
        assert dump_frontmatter(mapping) == yaml.dump(mapping, Dumper=frontmatter_module._DUMPER,
                                                      sort_keys=False, allow_unicode=True, width=10_000)


def test_values_it_does_not_vouch_for_go_through_yaml_dump():
    shared = {"status": "ok"}
    for mapping in [{}, {"a": 1.5}, {"a": [[1]]}, {"a": [shared, shared]}, {"a": shared, "b": shared},
                    {"a": ("t",)}, {1: "a"}, {"a": b"x"}, {"a": [{}]}, {"a": [[]]}]:
        assert_same(mapping)


ALPHABET = (string.ascii_letters[:6] + string.digits[:4] + " :#-?.,'\"!&*[]{}|>%@`~=<\\/_()\t\n"
            + "éΩ日\xa0\x85\u2028\ufeff😀\x00\x7f")


TAME = string.ascii_letters[:8] + string.digits[:5] + "  ._-/()é'\"#:,"


def random_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.15:  # a word YAML might resolve, with a twist
        base = rng.choice(ADVERSARIAL[:120])
        return base if rng.random() < 0.5 else base + rng.choice(ALPHABET)
    alphabet = ALPHABET if roll < 0.3 else TAME  # mostly text that may well be plain
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def random_value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if roll < 0.45:
        return random_text(rng)
    if roll < 0.6:
        return rng.choice([0, 1, -7, 10**20, rng.randint(-10**6, 10**6)])
    if roll < 0.68:
        return rng.choice([None, True, False])
    if roll < 0.84 and depth < 3:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3:
        return random_mapping(rng, depth + 1)
    return random_text(rng)


def random_mapping(rng: random.Random, depth: int = 0) -> dict:
    return {random_text(rng) if rng.random() < 0.5 else rng.choice(["file", "status", "reason", "chars"]):
            random_value(rng, depth) for _ in range(rng.randint(depth == 0, 5))}


def test_random_frontmatter_matches_yaml_dump(monkeypatch):
    fallbacks = []
    monkeypatch.setattr(frontmatter_module, "yaml_dump", lambda mapping: fallbacks.append(1) or yaml_dump(mapping))
    rng = random.Random(20261205)
    for _ in range(20_000):
        mapping = random_mapping(rng)
        assert dump_frontmatter(mapping) == yaml_dump(mapping)
    assert 2_000 < len(fallbacks) < 18_000  # both paths well exercised
    plain = string.ascii_letters + string.digits + " .-_/():'\"#"
    for _ in range(20_000):  # mostly plain-looking strings in the real frontmatter's shape
        text = "".join(rng.choice(plain) for _ in range(rng.randint(1, 30)))
        assert_same(frontmatter(title=text, sources=text.strip() or "x"))
