"""The block parser (translator/read/block_parser.py) and its generated tables (block_table.py).

grammars/sbatch.lark is the source of truth: the checked-in tables must be exactly what
tools/gen_block_table.py makes of it today, and the small LALR driver must build exactly the trees
Lark builds from the grammar (the reference), on the corpus and on generated token streams.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies as S
from translator.read import block_parser, block_table
from translator.read.body import _compress_runs
from translator.read.shell_lexer import ShellLexer

REPO = Path(__file__).resolve().parents[1]
GEN = REPO / "tools" / "gen_block_table.py"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_block_table", GEN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()
LARK = gen.lark_parser()


def lark_tree(types):
    """Lark's tree for the token types, in the driver's form (tokens as their int index)."""

    def norm(node):
        if hasattr(node, "data"):
            return block_parser.Node(str(node.data), [norm(c) for c in node.children])
        return int(node)

    return norm(LARK.parse(list(types)))


def driver_tree(types):
    return block_parser.parse(list(types))


def same_outcome(types):
    """Both accept with the same tree, or both reject: returns the tree (None when rejected)."""
    try:
        expected = lark_tree(types)
    except Exception:  # lark.exceptions.UnexpectedInput: not a sentence of the grammar
        expected = None
    if expected is None:
        with pytest.raises(block_parser.BlockSyntaxError):
            driver_tree(types)
        return None
    assert driver_tree(types) == expected, types
    return expected


# ---- the tables are up to date -------------------------------------------------------------------


def test_checked_in_tables_are_generated_from_the_grammar():
    current = (REPO / "translator" / "read" / "block_table.py").read_text(encoding="utf-8")
    assert current == gen.render(), "run: python tools/gen_block_table.py"


def test_check_mode_and_hash_seed_independence():
    # the generator's output must not depend on Lark's internal state numbering or hash order
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [sys.executable, str(GEN), "--check"], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr


def test_a_grammar_change_makes_the_check_fail():
    grammar = (REPO / "grammars" / "sbatch.lark").read_text(encoding="utf-8")
    changed = grammar.replace("group: LBRACE _stmt* RBRACE", "group: LBRACE _stmt+ RBRACE")
    assert changed != grammar
    assert gen.render(changed) != gen.render()


def test_tables_are_consistent():
    # every shift/goto target is a state, every reduce names a rule, every rule name has gotos
    n_states = len(block_table.ACTIONS)
    names = {name for name, _, _ in block_table.RULES}
    for row in block_table.ACTIONS:
        for symbol, action in row.items():
            assert symbol in block_table.TERMINALS or symbol in names
            if action >= 0:
                assert action < n_states
            else:
                assert symbol in block_table.TERMINALS and -1 - action < len(block_table.RULES)
    assert block_table.START_STATE == 0 and 0 <= block_table.END_STATE < n_states


# ---- the driver builds Lark's trees ----------------------------------------------------------------


def test_hand_derived_trees():
    N = block_parser.Node
    # `if c; then a; fi` -> if_block(IF CMD THEN CMD FI); _stmt and the star helpers are spliced
    assert driver_tree(["IF", "CMD", "THEN", "CMD", "FI"]) == N("start", [N("if_block", [0, 1, 2, 3, 4])])
    # empty input: `start` with no children
    assert driver_tree([]) == N("start", [])
    # a function whose body is a group, after a comment line: func_def(FUNC COMMENT group(...))
    assert driver_tree(["FUNC", "COMMENT", "LBRACE", "CMD", "RBRACE", "CMD"]) == N(
        "start", [N("func_def", [0, 1, N("group", [2, 3, 4])]), 5]
    )
    # case with two items, the last without `;;`
    assert driver_tree(["CASE", "PATTERN", "CMD", "DSEMI", "PATTERN", "ESAC"]) == N(
        "start", [N("case_block", [0, N("case_item", [1, 2, 3]), N("case_item", [4]), 5])]
    )
    # if / elif / else nested in a loop
    assert driver_tree(["LOOP", "DO", "IF", "CMD", "THEN", "ELIF", "CMD", "THEN", "CMD", "ELSE", "FI", "DONE"]) == N(
        "start",
        [N("loop_block", [0, 1, N("if_block", [2, 3, 4, N("elif_part", [5, 6, 7, 8]), N("else_part", [9]), 10]), 11])],
    )


@pytest.mark.parametrize(
    "types",
    [["FI"], ["IF", "CMD"], ["LBRACE", "RPAREN"], ["FUNC", "CMD"], ["CASE", "CMD", "ESAC"], ["DO"], ["LOOP", "DONE"]],
)
def test_non_sentences_are_rejected_like_lark(types):
    assert same_outcome(types) is None


def _corpus_files():
    out = []
    for folder in ("tests", "examples", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*")):
            if (
                path.is_file()
                and path.suffix in (".sbatch", ".sh", ".slurm", ".job")
                and path.stat().st_size < 1_000_000
            ):
                out.append(path)
    return out


def test_corpus_trees_match_lark():
    files = _corpus_files()
    assert len(files) > 100  # the fixture corpus, examples and benchmark scripts
    with_blocks = 0
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")
        lexer = ShellLexer(text, 1).run()
        runs = _compress_runs(lexer.tokens)
        types = [t.type for t in runs]
        if any(t not in ("CMD", "COMMENT") for t in types):
            with_blocks += 1
        assert same_outcome(types) is not None, path  # the lexer balances every stream
    assert with_blocks >= 10


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(S.body_block(), min_size=1, max_size=6))
def test_generated_script_bodies_match_lark(blocks):
    # the real lexer's streams for generated bodies (loops, ifs, functions, case, heredocs, unclosed blocks)
    lexer = ShellLexer("\n".join(blocks), 1).run()
    assert same_outcome([t.type for t in _compress_runs(lexer.tokens)]) is not None


# Sentences of the grammar, written from grammars/sbatch.lark's rules.
def _stmts(inner):
    return st.lists(inner, max_size=3).map(lambda parts: [t for p in parts for t in p])


def _compound(stmt):
    stmts = _stmts(stmt)
    elif_part = st.tuples(stmts, stmts).map(lambda p: ["ELIF", *p[0], "THEN", *p[1]])
    else_part = stmts.map(lambda s: ["ELSE", *s])
    if_block = st.tuples(stmts, stmts, st.lists(elif_part, max_size=2), st.none() | else_part).map(
        lambda p: ["IF", *p[0], "THEN", *p[1], *[t for e in p[2] for t in e], *(p[3] or []), "FI"]
    )
    loop_block = st.tuples(stmts, stmts).map(lambda p: ["LOOP", *p[0], "DO", *p[1], "DONE"])
    case_item = st.tuples(stmts, st.booleans()).map(lambda p: ["PATTERN", *p[0], *(["DSEMI"] if p[1] else [])])
    case_block = st.lists(case_item, max_size=3).map(lambda items: ["CASE", *[t for i in items for t in i], "ESAC"])
    group = stmts.map(lambda s: ["LBRACE", *s, "RBRACE"])
    subshell = stmts.map(lambda s: ["LPAREN", *s, "RPAREN"])
    return st.one_of(if_block, loop_block, case_block, group, subshell)


def _stmt(inner):
    func_def = st.tuples(st.integers(0, 2), _compound(inner)).map(lambda p: ["FUNC", *["COMMENT"] * p[0], *p[1]])
    return st.one_of(_compound(inner), func_def)


SENTENCES = _stmts(st.recursive(st.sampled_from([["CMD"], ["COMMENT"]]), _stmt, max_leaves=25))
TERMINALS = [t for t in block_table.TERMINALS if t != "$END"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SENTENCES)
def test_generated_sentences_match_lark(types):
    assert same_outcome(types) is not None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TERMINALS), max_size=14))
def test_random_token_streams_match_lark(types):
    same_outcome(types)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SENTENCES, st.data())
def test_mutated_sentences_match_lark(types, data):
    # one token dropped or replaced: mostly non-sentences, which both must reject
    if types:
        i = data.draw(st.integers(0, len(types) - 1))
        if data.draw(st.booleans()):
            types = types[:i] + types[i + 1 :]
        else:
            types = types[:i] + [data.draw(st.sampled_from(TERMINALS))] + types[i + 1 :]
    same_outcome(types)
