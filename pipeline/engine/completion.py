"""The one definition of "done" for a stage over a docket.

A stage's marker vouches for a set of *terms*: the stage version it was written at, the
input it saw (its input stage's output fingerprint, with every setting that shapes the
stage's output folded in), the seal it was recorded under, and, for a store that records
the stage's own output, that output. ``Completion`` holds what a stage asks of a marker
now; ``rule`` says it once, as a small expression that is evaluated in Python over one
docket's ``Probe`` (a target's ``exists()``) and compiled to SQL over every docket (a
wrapper's bulk judgement, ``docketeer verify``'s claims). Writing the rule once is what
keeps the two from disagreeing when a setting changes.

The rule, for a docket that exists:

* the marker's version is at least the one asked (``--force`` asks the next one);
* the marker's input equals the input expected now: the input stage's current output under
  the current terms (a changed setting, sealed docket or not, is a changed input);
* the stage's own recorded output is present (a run that died cleared it: not done);
* no item of the docket waits for a retry whose time has come (stages after fetch);
* sealed: the marker was recorded under the docket's current seal; open: the docket was
  pulled in the current freshness window (Luigi asks downstream first, and a finished
  downstream must not stop fetch from pulling an open docket again).

NULL semantics are SQL's in both evaluations: a comparison with an unknown value is unknown,
and only a rule that is true says done.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pipeline.fingerprints import RECORD, UNIT


@dataclass(frozen=True)
class Completion:
    """What a stage asks of its marker for a docket, settings folded in."""

    stage: str
    input_stage: str | None  # whose output the marker vouches for; None: it walks lists
    terms: str = ""  # the settings that shape the output, canonical; "" at the defaults
    after_fetch: bool = True  # a due retry of one of its items makes it incomplete
    keeps_output: bool = True  # its store records the stage's output (the state DB does)


def join_terms(parts) -> str:
    """Terms from their parts, the empty ones left out (a default adds nothing)."""
    return RECORD.join(part for part in parts if part)


def expected_input(completion: Completion, upstream_output: str | None) -> str | None:
    """The input a marker must record to vouch for ``upstream_output`` under these terms.
    Under default terms it is the output itself (markers written before a setting counted
    stay valid); a stage without an input stage vouches for its terms alone."""
    if completion.input_stage is None:
        return completion.terms or None
    if upstream_output is None or not completion.terms:
        return upstream_output
    return upstream_output + UNIT + completion.terms


def expected_input_sql(completion: Completion, upstream_output):
    """``expected_input`` as SQL over the column holding the input stage's output."""
    from peewee import Value

    if completion.input_stage is None:
        return Value(completion.terms)
    if not completion.terms:
        return upstream_output
    return upstream_output.concat(UNIT + completion.terms)  # NULL stays NULL, as None does


# --- the expression the rule is written in ----------------------------------------------------


class Term:
    """A node of the rule: ``value`` over a probe (True, False or None for unknown) and
    ``sql`` over a mapping of column name -> peewee expression."""

    def value(self, row):
        raise NotImplementedError

    def sql(self, columns: Mapping):
        raise NotImplementedError


@dataclass(frozen=True)
class Col(Term):
    name: str

    def value(self, row):
        return getattr(row, self.name)

    def sql(self, columns: Mapping):
        return columns[self.name]


@dataclass(frozen=True)
class Compare(Term):
    left: Term
    op: Callable
    right: Term | str | int  # a literal is never None: SQL would compare it with IS

    def value(self, row):
        a = self.left.value(row)
        b = self.right.value(row) if isinstance(self.right, Term) else self.right
        return None if a is None or b is None else self.op(a, b)

    def sql(self, columns: Mapping):
        b = self.right.sql(columns) if isinstance(self.right, Term) else self.right
        return self.op(self.left.sql(columns), b)


@dataclass(frozen=True)
class Null(Term):
    of: Term
    is_null: bool = True

    def value(self, row):
        return (self.of.value(row) is None) == self.is_null

    def sql(self, columns: Mapping):
        return self.of.sql(columns).is_null(self.is_null)


@dataclass(frozen=True)
class All(Term):
    terms: tuple[Term, ...]

    def value(self, row):
        values = [t.value(row) for t in self.terms]
        return False if False in values else (None if None in values else True)

    def sql(self, columns: Mapping):
        expr = self.terms[0].sql(columns)
        for term in self.terms[1:]:
            expr = expr & term.sql(columns)
        return expr


@dataclass(frozen=True)
class Any(Term):
    terms: tuple[Term, ...]

    def value(self, row):
        values = [t.value(row) for t in self.terms]
        return True if True in values else (None if None in values else False)

    def sql(self, columns: Mapping):
        expr = self.terms[0].sql(columns)
        for term in self.terms[1:]:
            expr = expr | term.sql(columns)
        return expr


def _not_null(name: str) -> Term:
    return Null(Col(name), is_null=False)


# --- the rule ---------------------------------------------------------------------------------


def docket_side(completion: Completion, window_start: str, now: str) -> Term:
    """The clauses the docket row alone decides: a retry due (after fetch; ``now`` empty:
    not asked), and an open docket's pull in this window (``window_start`` empty: any pull)."""
    clauses = [Any((_not_null("docket_sealed_at"), Compare(Col("last_pull_at"), operator.ge, window_start)))]
    if completion.after_fetch and now:
        clauses.append(Any((Null(Col("retry_due_at")), Compare(Col("retry_due_at"), operator.gt, now))))
    return All((_not_null("docket_known"), *clauses))


def marker_side(completion: Completion, version: int) -> Term:
    """The clauses the stage's marker decides, against the docket's facts."""
    clauses = [Compare(Col("marker_version"), operator.ge, version),
               Any((Null(Col("docket_sealed_at")),
                    Compare(Col("marker_sealed_at"), operator.eq, Col("docket_sealed_at"))))]
    if completion.input_stage is not None or completion.terms:
        clauses.append(Compare(Col("marker_input"), operator.eq, Col("expected_input")))
    if completion.keeps_output:
        clauses.append(_not_null("marker_output"))
    return All(tuple(clauses))


def rule(completion: Completion, version: int, window_start: str, now: str) -> Term:
    """The stage is done for the docket: true only when every clause is."""
    return All((docket_side(completion, window_start, now), marker_side(completion, version)))


def is_done(probe, completion: Completion, version: int, window_start: str, now: str) -> bool:
    """The rule over one docket's probe (``pipeline.engine.markers.Probe``)."""
    return rule(completion, version, window_start, now).value(probe) is True


# What ``docketeer verify`` asks: does the marker say done, whatever the clock says? (No
# window, no retry time: verify sorts those out from the docket rows itself.)
VERIFY_WINDOW, VERIFY_NOW = "", ""
