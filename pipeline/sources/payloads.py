"""JSON from outside (the API, the mirror) parsed with a size and a depth limit.

A record is read by the standard library's parser; the limits only bound what it is given
and what it returns, so a hostile record fails its own item with a reason instead of taking
the process's memory or stack (a 200,000-deep document raises RecursionError in the parser).
"""

from __future__ import annotations

import json

from pipeline.errors import BadRecord, BadResponse, InputTooLarge

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_DEPTH = 100


def parse_json_object(data: bytes | str, what: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                      max_depth: int = DEFAULT_MAX_DEPTH) -> dict:
    """The JSON object in ``data``.

    Raises ``InputTooLarge`` (permanent) over ``max_bytes``, ``BadRecord`` (permanent) when
    nested deeper than ``max_depth``, and ``BadResponse`` (transient: a truncated or garbled
    body may come back whole) when it is not JSON or not an object.
    """
    if len(data) > max_bytes:
        raise InputTooLarge(f"{what}: JSON of {len(data)} bytes is over the limit of {max_bytes}")
    try:
        parsed = json.loads(data)
    except RecursionError:
        raise BadRecord(f"{what}: JSON nested deeper than the parser allows") from None
    except ValueError as exc:
        raise BadResponse(f"{what}: body is not JSON ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(parsed, dict):
        raise BadResponse(f"{what}: JSON is a {type(parsed).__name__}, not an object")
    depth = nesting_depth(parsed)
    if depth > max_depth:
        raise BadRecord(f"{what}: JSON nested {depth} levels deep (limit {max_depth})")
    return parsed


def nesting_depth(value: object) -> int:
    """How deep containers nest in ``value`` (iterative, a level at a time: a deep value
    cannot exhaust the stack, and every record read is walked once without a tuple per node)."""
    depth, level = 0, [value] if isinstance(value, (dict, list)) else []
    while level:
        depth += 1
        below = []
        for node in level:
            for child in (node.values() if isinstance(node, dict) else node):
                if isinstance(child, (dict, list)):
                    below.append(child)
        level = below
    return depth
