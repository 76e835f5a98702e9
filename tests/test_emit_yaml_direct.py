"""The direct TrainJob YAML writer writes exactly what PyYAML writes.

`trainjob_yaml.dump` writes the TrainJob shape itself and hands anything it cannot prove to PyYAML
(`pyyaml_dump`, the Dumper with `_str_style`). Here both writers get the same objects (generated
strings full of YAML's special cases, generated TrainJob-shaped trees, and the TrainJobs of the fixture
corpus) and must give the same bytes; the text must load back to the object.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

import strategies as S

from kf_helpers import sample_plans
from translator.emit import trainjob_yaml
from translator.emit.trainjob import trainjob_dict
from translator.plan.model import EnvVar, PodPatch, TrainerPlan

FIXTURES = Path(__file__).parent / "fixtures"


def _direct(obj) -> str | None:
    """The direct writer's text, or None when it hands the document to PyYAML."""
    trainjob_yaml._resolver()
    out: list[str] = []
    try:
        trainjob_yaml._mapping(obj, 0, out, "")
    except trainjob_yaml._Fallback:
        return None
    return "".join(out)


def _same(obj) -> str:
    want = trainjob_yaml.pyyaml_dump(obj)
    got = trainjob_yaml.dump(obj)
    assert got == want
    direct = _direct(obj)
    assert direct is None or direct == want
    return got


def _round_trips(obj, text: str) -> None:
    assert yaml.safe_load(text) == obj


# YAML's special cases, as pieces to glue together
_TOKENS = [
    ": ",
    ":",
    " #",
    "#",
    "- ",
    "-",
    "--- ",
    "---",
    "...",
    "? ",
    "?",
    "'",
    '"',
    "''",
    "\\",
    "|",
    ">",
    "!",
    "&a",
    "*a",
    "%",
    "@",
    "`",
    ",",
    "[",
    "]",
    "{",
    "}",
    "~",
    "null",
    "Null",
    "NULL",
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "n",
    "Y",
    "N",
    "true",
    "False",
    "0o17",
    "0x1F",
    "0b101",
    "017",
    "1_000",
    "1e3",
    "1E+3",
    ".5",
    "5.",
    ".inf",
    "-.inf",
    ".NaN",
    "+1",
    "-0",
    "1:30",
    "190:20:30",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "<<",
    "=",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r",
    "\r\n",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\x00",
    "\x7f",
    "\x1b",
    "é",
    "…",
    "×",
    "\U0001f600",
    "\ud800",
    "\udcff",
    "$(NAME)",
    "$$",
    "${A:-b}",
    "w" * 40,
    "x" * 99,
    " " * 3,
]
_piece = st.one_of(
    st.sampled_from(_TOKENS),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=6),  # all of unicode, surrogates too
)
tricky = st.lists(_piece, max_size=12).map("".join)
# the same, in the characters the direct writer takes (printable ASCII and line breaks)
_ascii_piece = st.one_of(
    st.sampled_from([t for t in _TOKENS if t.isascii() and t.replace("\n", "").isprintable()]),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
)
ascii_tricky = st.lists(_ascii_piece, max_size=12).map("".join)
# long texts of words and lone spaces: the folding at the width
words = st.lists(
    st.one_of(st.text(alphabet="ab'#:-", min_size=1, max_size=30), st.sampled_from([" ", "  ", ": ", "\n"])),
    min_size=1,
    max_size=40,
).map(lambda xs: "w " + " ".join(xs))
strings = st.one_of(ascii_tricky, words, tricky, st.text(max_size=30))

scalars = st.one_of(strings, st.integers(-(10**20), 10**20), st.booleans(), st.none())
keys = st.one_of(
    ascii_tricky.filter(lambda k: "\n" not in k),
    strings,
    st.sampled_from(["name", "value", "image", "y", "on", "1", "a b", "'", "- x"]),
)
ascii_keys = st.one_of(ascii_tricky.filter(lambda k: k and "\n" not in k), st.sampled_from(["name", "value", "y", "1"]))
ascii_scalars = st.one_of(ascii_tricky, words, st.integers(), st.booleans(), st.none())
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(keys, inner, max_size=4),
        st.lists(st.dictionaries(keys, inner, min_size=1, max_size=3), max_size=3),  # TrainJob-like lists
    ),
    max_leaves=16,
)


@S.fuzz_settings(250)
@given(st.dictionaries(keys, scalars, min_size=1, max_size=3))
def test_scalars_as_pyyaml_writes_them(doc):
    text = _same(doc)
    _round_trips(doc, text)


@S.fuzz_settings(250)
@given(st.lists(strings, min_size=1, max_size=3), st.integers(0, 12))
def test_strings_in_sequences_at_every_depth(items, depth):
    doc: dict = {"k": items}
    for i in range(depth):
        doc = {f"level{i}": doc} if i % 2 else {"list": [doc]}
    _round_trips(doc, _same(doc))


ascii_trees = st.recursive(
    ascii_scalars,
    lambda inner: st.one_of(
        st.dictionaries(ascii_keys, inner, max_size=4),
        st.lists(st.one_of(ascii_scalars, st.dictionaries(ascii_keys, inner, max_size=3)), max_size=3),
    ),
    max_leaves=16,
)


@S.fuzz_settings(250)
@given(st.dictionaries(keys, trees, min_size=1, max_size=4))
def test_trees_as_pyyaml_writes_them(doc):
    _round_trips(doc, _same(doc))


@S.fuzz_settings(250)
@given(st.dictionaries(ascii_keys, ascii_trees, min_size=1, max_size=4))
def test_ascii_trees_as_pyyaml_writes_them(doc):
    """Trees the direct writer mostly takes itself."""
    _round_trips(doc, _same(doc))


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "",
        "a b",
        "a  b",
        "y",
        "yes",
        "0o17",
        "1_000",
        ".5",
        "~",
        "null",
        "- x",
        "-x",
        "a: b",
        "a:b",
        "a #b",
        "a#b",
        "it's",
        "'",
        "x" * 150,
        "w " * 80,
        "w  " * 60,
        ("word " * 30).strip(),
        ("'q' " * 40).strip(),
        "y " + "z " * 60 + "y",
        "a\nb",
        "a\nb\n",
        "a\n\nb\n",
        "a\n  b\n",
        'set -e\nexec "$@"\n',
        " a\nb",
        "a\nb\n\n",
        "a \nb",
        "a\nb ",
        "\n",
        "é",
        "a\tb",
        "\ud800",
        "\u2028",
    ],
)
def test_known_cases(value):
    for doc in (
        {"k": value},
        {"spec": {"trainer": {"args": [value, "x"], "env": [{"name": "A", "value": value}]}}},
        {"list": [{"k": value}]},
    ):
        _round_trips(doc, _same(doc))
    if "\n" not in value and 0 < len(value) <= 100 and value.isascii() and value.isprintable():
        doc = {value: value}
        _round_trips(doc, _same(doc))


def test_the_direct_writer_takes_the_common_documents():
    """The fast path is the one taken: every sample TrainJob (scripts, env, patches) goes through it."""
    for name, plan in sample_plans().items():
        obj = trainjob_dict(plan)
        assert _direct(obj) == trainjob_yaml.pyyaml_dump(obj), name


def test_fixture_corpus_trainjobs_byte_for_byte():
    from translator.pipeline import ConvertSettings
    from translator.plan.build import build_plans
    from translator.read import read_script
    from translator.slurm.resolve import resolve

    paths = sorted((FIXTURES / "sbatch").rglob("*.sbatch"))
    assert paths
    checked = 0
    for path in paths:
        script = read_script(path.read_bytes(), path.name)
        for plan in build_plans(script, resolve(script, env={}, cli_args=()), ConvertSettings()):
            obj = trainjob_dict(plan)
            text = _same(obj)
            assert yaml.safe_load(text) == obj
            checked += 1
    assert checked > 20


def test_non_trainjob_shapes_fall_back():
    for doc in ({1: "a"}, {"a": 1.5}, {"a": [[1]]}, {"": 1}, {"k" * 200: 1}, {"a\nb": 1}, {"a": ("t",)}):
        assert _direct(doc) is None
        assert trainjob_yaml.dump(doc) == trainjob_yaml.pyyaml_dump(doc)


# ---- plan_text: the TrainJob written from the plan, its keys and indents as constants ----------------
def _plan_same(plan) -> str:
    """`plan_text(plan)` is what PyYAML writes for `trainjob_dict(plan)`; returns the text."""
    want = trainjob_yaml.pyyaml_dump(trainjob_dict(plan))
    got = trainjob_yaml.plan_text(plan)
    assert got == want
    assert trainjob_yaml.dump(trainjob_dict(plan)) == want
    return got


def _frame_direct(plan) -> str | None:
    """The fixed-frame writer's text, or None when it hands the plan to `dump`."""
    trainjob_yaml._resolver()
    try:
        return trainjob_yaml._plan_text(plan)
    except trainjob_yaml._Fallback:
        return None


_small_text = st.one_of(ascii_tricky, words, st.sampled_from(["node", "dshm", "", "y", "1", "a: b", "x" * 120]))
# what the fixed frame writes itself: printable ASCII on one line, and patches of mappings and scalars
_framed_text = st.one_of(
    ascii_tricky.filter(lambda t: "\n" not in t), words.filter(lambda t: "\n" not in t), st.sampled_from(["node", "y"])
)
_framed_scalars = st.one_of(_framed_text, st.integers(), st.booleans(), st.none())
_framed_trees = st.recursive(
    _framed_scalars,
    lambda inner: st.one_of(
        st.dictionaries(ascii_keys, inner, max_size=3),
        st.lists(st.one_of(_framed_scalars, st.dictionaries(ascii_keys, inner, min_size=1, max_size=2)), max_size=2),
    ),
    max_leaves=8,
)


def _plans(text, patch_dicts):
    """TrainerPlans with every user value drawn from ``text`` and the patch dicts from ``patch_dicts``."""
    pairs = st.lists(st.tuples(text, text), max_size=3).map(tuple)
    env_vars = st.lists(
        st.builds(
            EnvVar,
            st.one_of(st.sampled_from(["A", "B", "y", "PATH"]), text),
            text,
            st.one_of(st.none(), st.integers(1, 99)),
            st.one_of(st.none(), st.none(), text),
            st.one_of(st.none(), text),
        ),
        max_size=4,
    ).map(tuple)
    pod_patches = st.lists(
        st.builds(
            PodPatch,
            job=st.one_of(st.just("node"), text),
            container=st.one_of(st.just("node"), text),
            node_selector=pairs,
            tolerations=st.lists(patch_dicts, max_size=2).map(tuple),
            affinity=st.one_of(st.none(), patch_dicts),
            volumes=st.lists(patch_dicts, max_size=2).map(tuple),
            volume_mounts=st.lists(patch_dicts, max_size=2).map(tuple),
            image_pull_secrets=st.lists(text, max_size=2).map(tuple),
            service_account_name=st.one_of(st.none(), text),
        ),
        max_size=3,
    ).map(tuple)
    return st.builds(
        TrainerPlan,
        name=text,
        source_path=st.just("job.sbatch"),
        job_name=st.just("job"),
        namespace=st.one_of(st.none(), text),
        labels=pairs,
        annotations=pairs,
        runtime=st.one_of(st.just("torch-distributed"), text),
        runtime_kind=st.one_of(st.just("ClusterTrainingRuntime"), text),
        image=st.one_of(st.none(), text),
        command=st.lists(text, max_size=3).map(tuple),
        args=st.lists(st.one_of(text, _small_text), max_size=4).map(tuple),
        packages=st.one_of(st.just(()), st.lists(_small_text, max_size=2).map(tuple)),
        env=env_vars,
        num_nodes=st.integers(0, 1000),
        resources_per_node=st.lists(
            st.tuples(st.sampled_from(["cpu", "GPU", "memory", "mig-1g.5gb", "y", "a b", "nvidia.com/gpu"]), text),
            max_size=4,
        ).map(tuple),
        active_deadline_seconds=st.one_of(st.none(), st.integers(0, 10**12)),
        patches=pod_patches,
    )


framed_plans = _plans(_framed_text, st.dictionaries(ascii_keys, _framed_trees, max_size=3))
any_plans = _plans(st.one_of(_small_text, tricky), st.dictionaries(keys, trees, max_size=3))


@S.fuzz_settings(100)
@given(framed_plans)
def test_plan_text_of_framed_plans(plan):
    """Plans the fixed frame mostly writes itself (printable ASCII values, YAML's special cases)."""
    text = _plan_same(plan)
    assert yaml.safe_load(text) == trainjob_dict(plan)


@S.fuzz_settings(60)
@given(any_plans)
def test_plan_text_as_pyyaml_writes_the_trainjob(plan):
    text = _plan_same(plan)
    assert yaml.safe_load(text) == trainjob_dict(plan)


def test_plan_text_takes_the_common_plans():
    """The fixed frame is the path taken for every sample plan, and it writes PyYAML's bytes."""
    for name, plan in sample_plans().items():
        assert _frame_direct(plan) == trainjob_yaml.pyyaml_dump(trainjob_dict(plan)), name


def test_plan_text_of_the_fixture_corpus():
    from translator.pipeline import ConvertSettings
    from translator.plan.build import build_plans
    from translator.read import read_script
    from translator.slurm.resolve import resolve

    checked = 0
    for path in sorted((FIXTURES / "sbatch").rglob("*.sbatch")):
        script = read_script(path.read_bytes(), path.name)
        for plan in build_plans(script, resolve(script, env={}, cli_args=()), ConvertSettings()):
            _plan_same(plan)
            checked += 1
    assert checked > 20


def test_plan_text_known_cases():
    shm = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    base = sample_plans()["torch_multinode"]
    cases = [
        dataclasses.replace(base, image=None, command=(), args=(), env=(), num_nodes=0, resources_per_node=()),
        dataclasses.replace(base, image="", num_nodes=0),
        dataclasses.replace(base, name="y", namespace="1_000", labels=(("a", "1"), ("a", "2"), ("b", "on"))),
        dataclasses.replace(
            base, env=(EnvVar("A", "1"), EnvVar("B", "x"), EnvVar("A", "", secret_name="s", secret_key="k"))
        ),
        dataclasses.replace(base, env=(EnvVar("A", "", secret_name="s", secret_key="k"), EnvVar("A", "back"))),
        dataclasses.replace(base, args=("w " * 80, "a\nb\n", "a\n\nb", " lead", "\u2028", "é")),
        dataclasses.replace(base, resources_per_node=(("GPU", "8"), ("gpu", "4"), ("Memory", "1Gi"), ("é", "1"))),
        dataclasses.replace(
            base, patches=(PodPatch(), PodPatch(job="launcher", volumes=(shm,)), PodPatch(volumes=(shm,)))
        ),
        dataclasses.replace(base, patches=(PodPatch(job="x" * 120, node_selector=(("k", "v"),)),)),
        dataclasses.replace(base, patches=(PodPatch(job="- x", affinity={"a": [[1]]}),)),  # the patch falls back
        dataclasses.replace(
            base, packages=("numpy==1.26", "-r requirements.txt"), pip_index_urls=("https://x/simple",)
        ),
        dataclasses.replace(base, name="n" * 200, runtime="r" * 99, runtime_kind="k: v"),
    ]
    for plan in cases:
        text = _plan_same(plan)
        assert yaml.safe_load(text) == trainjob_dict(plan)
    assert _frame_direct(cases[9]) is None


# ---- pod patches: the text of a patches key is kept ----------------------------------------------------
class _Text(str):
    pass


def test_patches_key_tells_apart_what_renders_differently():
    from translator.emit.trainjob import patches_key

    vol = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    base = (PodPatch(volumes=(vol,), volume_mounts=({"name": "dshm", "mountPath": "/dev/shm"},)),)
    assert patches_key(base) is not None
    assert patches_key(base) == patches_key((dataclasses.replace(base[0], volumes=(dict(vol),)),))
    different = [
        (dataclasses.replace(base[0], volumes=({"emptyDir": {"medium": "Memory"}, "name": "dshm"},)),),  # order
        (dataclasses.replace(base[0], job="launcher"),),
        (dataclasses.replace(base[0], container=""),),
        (dataclasses.replace(base[0], node_selector=(("a", "b"),)),),
        base + base,
        (),
    ]
    keys = [patches_key(p) for p in different]
    assert None not in keys and len(set(keys + [patches_key(base)])) == len(keys) + 1
    for p in (
        {"name": "dshm", "emptyDir": {"sizeLimit": 1}},
        {"name": "dshm", "emptyDir": {"sizeLimit": True}},
        {"name": _Text("dshm")},
        {"name": "dshm", "items": ["a"]},
        {1: "a"},
    ):
        assert patches_key((dataclasses.replace(base[0], volumes=(p,)),)) is None, p
    assert patches_key((dataclasses.replace(base[0], job=_Text("node")),)) is None


@S.fuzz_settings(100)
@given(framed_plans, framed_plans)
def test_kept_patch_text_is_the_plans_own(one, two):
    """A plan whose patches have the key of an earlier plan's gets that plan's text: the same bytes."""
    two = dataclasses.replace(two, patches=one.patches)
    trainjob_yaml._PATCH_TEXTS.clear()
    trainjob_yaml.plan_text(one)
    _plan_same(two)  # from the kept text when the patches have a key
