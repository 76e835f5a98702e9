"""The fast paths of the SDK Python writer give what the general code gives.

`_lit` writes an exact-type tree with `repr`; `_str_list_block` writes a list of strs (a script one line
per literal, whole runs of lines without a quote at once); `_lines_of` indexes the source map by
field; `_finding_block` joins a finding's word lines; `plan_parts` keeps the last plan's shared parts.
Each is compared with the plain implementation it replaced, on generated input full of quotes,
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


# ---- finding comment blocks: one join of the word lines ---------------------------------------------
comment_texts = st.lists(
    st.one_of(
        st.sampled_from([" ", "  ", "w" * 94, "w" * 95, "w" * 96, "w" * 97, "x" * 150, "é", "(fix:", "line"]),
        st.text(alphabet="ab -", min_size=1, max_size=30),
    ),
    max_size=20,
).map("".join)


@S.fuzz_settings(400)
@given(comment_texts)
def test_finding_block_is_the_wrapped_comment(text):
    """`_finding_block` (the word-line join) writes what `_comment_text` (the general wrap) writes."""
    text = trainjob_yaml.sanitize_comment(text)
    assert sdk_python._finding_block(text) == sdk_python._comment_text(text, 1, clean=True)


def test_finding_block_known_cases():
    for text in ("", " ", "a", "a ", " a", "a  b", "w" * 96, "w" * 97, ("word " * 40).strip(), "x" * 200 + " y"):
        assert sdk_python._finding_block(text) == sdk_python._comment_text(text, 1, clean=True), text


# ---- the parts both emitters share -------------------------------------------------------------------
def test_plan_parts_are_the_emitters_inputs_of_that_plan():
    from translator.emit.command import container_command
    from translator.emit.trainjob import env_entries, patches_by_job, plan_parts, resources_map
    from translator.plan.model import EnvVar, PodPatch

    shm = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    one = plan(
        env=(EnvVar("A", "1", 3), EnvVar("S", "", 4, "sec", "key"), EnvVar("A", "2", 5)),
        resources_per_node=(("gpu", "8"), ("CPU", "4")),
        patches=(PodPatch(volumes=(shm,)), PodPatch(job="launcher", node_selector=(("k", "v"),))),
        packages=("numpy",),
    )
    two = plan(name="other", env=(EnvVar("B", "x"),))
    for p in (one, two, one):
        parts = plan_parts(p)
        assert (parts.command, parts.args) == container_command(p)
        assert parts.resources == resources_map(p)
        assert parts.jobs == patches_by_job(p)
        entries = [
            {"name": k, "valueFrom": {"secretKeyRef": {"name": v.secret_name, "key": v.secret_key}}}
            if v.secret_name
            else {"name": k, "value": v.value}
            for k, v in parts.env.items()
        ]
        assert entries == env_entries(p)
    assert plan_parts(one) is plan_parts(one)
    assert [v.line for v in plan_parts(one).env.values()] == [5, 4]  # the last export of a name


@S.fuzz_settings(100)
@given(st.one_of(scripts, texts).map(lambda t: t * 40))
def test_ascii_printable_lines_of_long_texts(text):
    """The answer kept for the last long text is the answer for that text, and only for it."""
    want = text.isascii() and text.replace("\n", "").isprintable()
    assert ascii_printable_lines(text) == want
    assert ascii_printable_lines(text) == want  # kept
    other = text + "\x00"
    assert ascii_printable_lines(other) is False
    assert ascii_printable_lines("".join(list(text))) == want  # an equal text, another object


def test_kept_runtime_patch_block_is_the_plans_own():
    """The RuntimePatch option of a patches key is kept: a plan with equal patches gets the same code,
    with the same imports."""
    from translator.plan.model import PodPatch

    shm = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    mount = {"name": "dshm", "mountPath": "/dev/shm"}
    patches = (PodPatch(volumes=(shm,), volume_mounts=(mount,)), PodPatch(job="launcher", volumes=(dict(shm),)))
    one = plan(name="one", patches=patches)
    two = plan(name="two", patches=tuple(PodPatch(**{**p.__dict__}) for p in patches))
    sdk_python._PATCH_BLOCKS.clear()
    fresh = sdk_python.render([two])
    sdk_python._PATCH_BLOCKS.clear()
    sdk_python.render([one])
    assert len(sdk_python._PATCH_BLOCKS) == 1
    assert sdk_python.render([two]) == fresh
    assert "ContainerPatch," in fresh and "volume_mounts=[" in fresh
