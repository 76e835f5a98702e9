"""The fast paths of the SDK Python writer give what the general code gives.

`_lit` writes an exact-type tree with `repr`; `_str_list_block` writes a list of strs (a script one line
per literal, whole runs of lines without a repr escape at once); `_lines_of` indexes the source map by
field. Each is compared with the plain implementation it replaced, on generated input full of quotes,
backslashes, line breaks, control and non-ASCII characters.
"""

from __future__ import annotations

import ast
import enum
import re

from hypothesis import given, strategies as st

import strategies as S

from kf_helpers import plan
from translator.diagnostics import Finding
from translator.emit import sdk_python, trainjob_yaml
from translator.emit.sdk_python import _line_literals, _lines_of, _lit, _list_block, _Writer
from translator.emit.trainjob_yaml import ascii_printable_lines
from translator.plan.model import SourceMap


def _reference_lit(value) -> str:
    """`_lit` as it was written first: one isinstance dispatch per value."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_reference_lit(str(k))}: {_reference_lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_reference_lit(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(float(value))
    return repr(str(value))


class _Str(str):
    def __repr__(self) -> str:
        return "not-a-literal"


class _Num(enum.IntEnum):
    ONE = 1


_pieces = st.sampled_from(["'", '"', "\\", "\n", "\r", "\t", "\x00", "\x7f", "\x85", "\u2028", "é", "\U0001f600"])
texts = st.lists(st.one_of(_pieces, st.text(max_size=8), st.text(alphabet="ab $'\"\\", max_size=8)), max_size=12).map(
    "".join
)
leaves = st.one_of(
    texts,
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    texts.map(_Str),
    st.just(_Num.ONE),
)
trees = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(texts, st.integers(), st.booleans()), inner, max_size=4),
    ),
    max_leaves=20,
)


@S.fuzz_settings(375)
@given(trees)
def test_lit_is_the_reference_literal(value):
    assert _lit(value) == _reference_lit(value)


plain_trees = st.recursive(
    st.one_of(texts, st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=20,
)


@S.fuzz_settings(250)
@given(plain_trees)
def test_lit_of_a_plain_tree_reads_back(value):
    assert ast.literal_eval(_lit(value)) == value


# ---- scripts: one literal per line ---------------------------------------------------------------
script_lines = st.lists(
    st.one_of(
        st.sampled_from(["", "set -e", "echo 'hi'", 'echo "$X"', "a\\b", "tab\there", "cr\r", "é ü", "\x1b[0m"]),
        st.text(max_size=20).filter(lambda t: "\n" not in t),
    ),
    min_size=1,
    max_size=20,
)
scripts = st.tuples(script_lines, st.booleans()).map(lambda x: "\n".join(x[0]) + ("\n" if x[1] else ""))


@S.fuzz_settings(500)
@given(st.one_of(scripts, texts))
def test_line_literals_are_the_repr_of_each_line(text):
    sep = "\n" + " " * 12
    want = sep.join(repr(piece) for piece in re.findall(r"[^\n]*\n|[^\n]+", text))
    assert _line_literals(text, sep) == want


@S.fuzz_settings(250)
@given(st.lists(st.one_of(scripts, texts, st.sampled_from(["bash", "-c", "x" * 70, "x\n" * 40])), max_size=5))
def test_string_lists_as_the_general_block_writes_them(items):
    """`_list_block` takes its str-list path for a list, its general path for the same items in a tuple."""
    for tail in (",", "),  # line 3", "),  # lines 1\n2"):
        fast, general = _Writer(), _Writer()
        _list_block(fast, 3, "TrainerArgs(", list(items), tail=tail)
        _list_block(general, 3, "TrainerArgs(", tuple(items), tail=tail)
        assert "\n".join(fast.lines) == "\n".join(general.lines)


@S.fuzz_settings(500)
@given(st.one_of(scripts, texts))
def test_ascii_printable_lines(text):
    assert ascii_printable_lines(text) == (text.isascii() and text.replace("\n", "").isprintable())


# ---- the source-line index --------------------------------------------------------------------------
def _reference_lines_of(source_map, field: str) -> tuple:
    """The index as first written: every entry adds its lines to its field and to each parent (`a.b`
    for `a.b.c`, then `a`; a leading dot starts no parent)."""
    index: dict[str, set] = {}
    for sm in source_map:
        lines = [int(n) for n in sm.lines if isinstance(n, int)]
        name = sm.field
        index.setdefault(name, set()).update(lines)
        dot = name.rfind(".")
        while dot > 0:
            name = name[:dot]
            index.setdefault(name, set()).update(lines)
            dot = name.rfind(".")
    return tuple(sorted(index.get(field, ())))


_fields = st.sampled_from(
    ["spec", "spec.trainer", "spec.trainer.image", "spec.trainer.resourcesPerNode.nvidia.com/gpu", "(body)", "a.", ".a"]
)
source_maps = st.lists(
    st.builds(SourceMap, _fields, st.lists(st.integers(0, 50), max_size=4).map(tuple), st.just("mapped")), max_size=12
)


@S.fuzz_settings(250)
@given(source_maps)
def test_lines_of_matches_a_scan_of_the_source_map(source_map):
    p = plan(source_map=tuple(source_map))
    for field in ("spec", "spec.trainer", "spec.trainer.image", "spec.trainer.resourcesPerNode", "a", "", "(body)"):
        assert _lines_of(p, field) == _reference_lines_of(source_map, field)


def test_finding_texts_follow_the_plan():
    """Both emitters share the finding texts of the last plan; a different plan gets its own."""
    one = plan(findings=(Finding("warning", "P401", "first", 3, None),))
    two = plan(findings=(Finding("info", "P402", "second", None, "do it"),))
    for p, want in ((one, "P401 warning line 3: first"), (two, "P402 info script: second (fix: do it)")):
        assert want in trainjob_yaml.render([p], findings_comment=True)
        assert want in sdk_python.render([p])
    assert "first" not in sdk_python.render([two]) and "second" not in trainjob_yaml.render(
        [one], findings_comment=True
    )
