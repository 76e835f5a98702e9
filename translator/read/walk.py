"""Flat views of a script body, listed once per body.

Several later stages (the plan's environment, the site-profile scan, the review report) each walk the
same body for its commands or its assignments. The body is an immutable tuple of immutable statements,
so the flat tuples of the last body seen are kept (one entry each, keyed by the body's identity; the
entry holds the body, so the identity cannot be reused while it is kept). A list body is walked every
time (a list could change between calls).
"""

from __future__ import annotations

from translator.read.ast import Assignment, Block, Command

_COMMANDS: list = [None, ()]
_ASSIGNMENTS: list = [None, ()]


def _commands(statements, out: list) -> None:
    for st in statements:
        if isinstance(st, Command):
            out.append(st)
        elif isinstance(st, Block):
            if st.command is not None:
                out.append(st.command)
            _commands(st.children, out)


def _assignments(statements, out: list) -> None:
    for st in statements:
        if isinstance(st, Assignment):
            out.append(st)
        elif isinstance(st, Command):
            out.extend(st.prefix_assignments)
        elif isinstance(st, Block):
            _assignments(st.children, out)


def _listed(memo: list, body, collect) -> tuple:
    """`collect`'s flat tuple of `body`, kept in `memo` for the last tuple body seen."""
    if memo[0] is body:
        return memo[1]
    out: list = []
    collect(body, out)
    found = tuple(out)
    if type(body) is tuple:
        memo[:] = [body, found]
    return found


def commands_in(body) -> tuple:
    """Every Command of `body` in order, descending into blocks: what ast.iter_commands yields."""
    return _listed(_COMMANDS, body, _commands)


def assignments_in(body) -> tuple:
    """Every assignment of `body` in order (prefix assignments included): what ast.iter_assignments yields."""
    return _listed(_ASSIGNMENTS, body, _assignments)
