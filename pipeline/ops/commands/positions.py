"""``docketeer positions``: an analyst's codes in, a docket's positions out.

* ``positions import FILE.csv [--coder NAME]``: codes from a sheet (``comment_id,position``);
  one transaction, so a bad line (an unknown id or position, a bad header) writes nothing.
* ``positions sample D [--n 50] [--out FILE] [--seed S]``: a coding sheet of uncoded comments
  drawn in proportion to submissions (a campaign once, through its letter).
* ``positions code D [--coder NAME]``: the same comments one at a time in the terminal, a key
  press a code (s/o/m/n/x; q quits, ? helps); keys are read from standard input, so a file
  of keys codes too.
* ``positions D [--json]``: the docket's shares with their intervals (design-based and
  model-based, each said), the classifier's state, the language-model judge's (its agreement
  with the codes, its quotes checked and flagged), and counts by campaign, organisation, topic.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from pipeline.ops.commands.command_line import command, open_runtime, table

ACTIONS = ("import", "sample", "code")
SHOWN_CHARS = 2000  # of a comment's text on the coding screen
TEXT_CHARS = 32000  # of a comment's text in a sheet cell (spreadsheets cut cells near 32,767)
BATCH = 20  # comments drawn at a time by the coding screen
HELP = ("keys: s support, o oppose, m mixed, n no_position, x off_topic (a press records the code); "
        "q quit, ? this help. \"Supports the rule's goal but not the rule\" is oppose or mixed.")


def register(commands) -> None:
    positions = commands.add_parser(
        "positions", help="who supports, who opposes, how sure: `positions D` shows a docket's shares with "
                          "intervals; `positions import FILE.csv`, `positions sample D`, `positions code D` "
                          "take an analyst's codes")
    positions.add_argument("what", help="a docket id, or import / sample / code")
    positions.add_argument("target", nargs="?", help="import: the CSV file; sample, code: the docket id")
    positions.add_argument("--json", action="store_true", help="one JSON document (a docket's positions)")
    positions.add_argument("--coder", help="who coded (import, code; default the OS user)")
    positions.add_argument("--n", type=_count, default=50, help="sample: comments drawn (default 50)")
    positions.add_argument("--out", help="sample: the CSV file to write (default standard output)")
    positions.add_argument("--seed", type=int, default=1, help="sample, code: the draw's seed (default 1)")


def _count(text: str) -> int:
    import argparse

    if not text.isdigit() or not 1 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"not a count from 1 to 100000: {text!r}")
    return int(text)


@command
def cmd_positions(args) -> int:
    if args.what in ACTIONS and not args.target:
        print(f"docketeer positions {args.what}: name the {'file' if args.what == 'import' else 'docket'}",
              file=sys.stderr)
        return 2
    if args.what not in ACTIONS and args.target:
        print(f"docketeer positions: unknown action {args.what!r} (one of {', '.join(ACTIONS)}, or a docket id)",
              file=sys.stderr)
        return 2
    from pipeline.positions import codes

    runtime = open_runtime()
    coder = args.coder or codes.default_coder()
    if args.what == "import":
        return _import(Path(args.target), coder)
    from pipeline.store import dockets

    docket = dockets.require_docket(args.target or args.what).id
    if args.what == "sample":
        return _sample(runtime, docket, args)
    if args.what == "code":
        return code_session(runtime, docket, coder, args.seed, sys.stdin, sys.stdout)
    return _show(docket, args.json)


def _import(path: Path, coder: str) -> int:
    from pipeline.positions import codes

    recorded = codes.record(codes.read_sheet(path), coder)
    total = sum(recorded.values())
    by_docket = ", ".join(f"{d}: {n}" for d, n in sorted(recorded.items())) or "no filled line"
    print(f"imported {total} code(s) by {coder} ({by_docket}); "
          "`luigi --module pipeline PositionsAll` estimates the positions again")
    return 0


def _sample(runtime, docket: str, args) -> int:
    from pipeline.reading import positions as reading

    units = reading.coding_sample(runtime.existing_index_db(), docket, args.n, args.seed)
    handle = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    try:
        writer = csv.writer(handle)
        writer.writerow(["comment_id", "link", "text", "position"])
        for unit in units:
            writer.writerow([unit.key, unit.link, unit.text[:TEXT_CHARS], ""])
    finally:
        if args.out:
            handle.close()
    if args.out:
        print(f"wrote {len(units)} comment(s) to code to {args.out} (fill position with one of "
              "support, oppose, mixed, no_position, off_topic; then `docketeer positions import`)")
    return 0


def code_session(runtime, docket: str, coder: str, seed: int, keys, out) -> int:
    """Show the docket's uncoded comments one at a time and record a code per key press, until
    q, the end of the keys, or nothing left to code."""
    from pipeline.positions import codes
    from pipeline.reading import positions as reading

    index_db = runtime.existing_index_db()
    read_key = _key_reader(keys)
    coded = 0
    while True:
        units = reading.coding_sample(index_db, docket, BATCH, seed)
        if not units:
            out.write(f"nothing left to code in {docket}; {coded} coded now\n")
            return 0
        for unit in units:
            _show_unit(out, unit, coded)
            position = _ask(read_key, out)
            if position is None:
                out.write(f"\n{coded} coded now; `luigi --module pipeline PositionsAll` estimates again\n")
                return 0
            codes.record([(unit.key, position)], coder)
            coded += 1
            out.write(f"{position}\n")


def _show_unit(out, unit, coded: int) -> None:
    stands = f" (a campaign's letter: {unit.members} comments, {unit.submissions} submissions)" if unit.members > 1 else ""
    text = unit.text if len(unit.text) <= SHOWN_CHARS else unit.text[:SHOWN_CHARS] + " \u2026"
    out.write(f"\n--- {unit.key}{stands}  {unit.link}  [{coded} coded now]\n{text}\n")


def _ask(read_key, out) -> str | None:
    """The position of the next key press (None: quit or no more keys); ? and other keys ask again."""
    from pipeline.positions import codes

    while True:
        out.write("position? s/o/m/n/x, q quit, ? help: ")
        out.flush()
        key = read_key()
        if key in ("", "q"):
            return None
        if key in codes.KEYS:
            return codes.KEYS[key]
        out.write(f"\n{HELP}\n" if key == "?" else f"\nunknown key {key!r}; {HELP}\n")


def _key_reader(stream):
    """A function giving the next key press: one character, unbuffered, from a terminal; from
    anything else (a pipe, a file of keys) the next character that is not white space."""
    if stream.isatty():
        import termios
        import tty

        def from_terminal() -> str:
            fd = stream.fileno()
            saved = termios.tcgetattr(fd)
            try:
                tty.setcbreak(fd)
                key = stream.read(1)
            finally:
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)
            return key.lower()
        return from_terminal

    def from_stream() -> str:
        while True:
            key = stream.read(1)
            if not key or not key.isspace():
                return key.lower()
    return from_stream


def _show(docket: str, as_json: bool) -> int:
    from pipeline.reading import positions as reading

    found = reading.summary(docket)
    if as_json:
        print(json.dumps(found, indent=1))
        return 0
    print("\n".join(summary_lines(found)))
    return 0


def summary_lines(found: dict) -> list[str]:
    from pipeline.positions.codes import POSITIONS
    from pipeline.positions.estimates import DESIGN

    lines = [f"{found['docket']}: {found['codes']['comments']} coded comment(s)"
             + (f" ({', '.join(f'{c}: {n}' for c, n in found['codes']['coders'].items())})" if found["codes"]["coders"] else "")]
    state = found["classifier"]
    if found["message"]:
        lines.append(found["message"])
    elif state:
        lines.append(f"classifier: learnt from {state['codes']} codes ({', '.join(state['classes'])}), "
                     f"cross-validated accuracy {state['cross_validated_accuracy']:.0%}"
                     + (f", macro-F1 {state['scores']['macro_f1']:.2f} over support/oppose/other"
                        if state.get("scores") else ""))
    if found.get("judge"):
        lines.append(judge_line(found["judge"]))
    figures = found["estimates"]
    for target in ("comments", "submissions") if figures else ():
        rows = [[p, *(_interval(figures[target][m][p]) for m in ("design", "model"))] for p in POSITIONS]
        lines += ["", f"share of {target} ({figures[target]['total']}):",
                  table(rows, ["position", "design-based (95% CI)", "model-based (95% CI)"])]
    if figures:
        lines += ["", f"design-based: {DESIGN.split(': ', 1)[1]}",
                  f"model-based: {figures['methods']['model'].split(': ', 1)[1]}"]
    all_counts = found["comments"].get("all")
    if all_counts:
        lines += ["", "comments by position (coded, a coded campaign member's, the judge's or the classifier's): "
                  + ", ".join(f"{p} {n}" for p, n in all_counts["comments"].items() if n)]
    for title, key in (("by campaign", "by_campaign"), ("by organisation", "by_organisation"), ("by topic", "by_topic")):
        rows = [[r["name"][:60], *(f"{r['comments'][p]}/{r['submissions'][p]}" for p in POSITIONS)]
                for r in found[key][:10]]
        if rows:
            lines += ["", f"{title} (comments/submissions):", table(rows, ["", *POSITIONS])]
    return lines


def judge_line(found: dict) -> str:
    """The language-model judge in one line: what answered, its quotes, its agreement with the codes."""
    quotes = found["quotes"]
    scored = found["scores"]
    agreement = (f"agrees with {scored['agreement']:.0%} of {scored['pairs']} codes (macro-F1 {scored['macro_f1']:.2f} "
                 "over support/oppose/other)" if scored else "no coded comment answered yet, so not scored")
    return (f"language-model judge ({found['model']}): {found['texts']} distinct text(s) answered, "
            f"quotes {quotes['checked']} checked, {quotes['flagged']} flagged (not found in the text); {agreement}")


def _interval(share: dict) -> str:
    return f"{share['share']:.0%} ({share['low']:.0%}-{share['high']:.0%})"
