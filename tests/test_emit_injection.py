"""No input can inject YAML or Python: hostile strings in every user-controlled field round-trip as data.

YAML: the document loads back (with PyYAML, and with the oracle's kubectl-like decoder for a few)
to exactly the plan's values.  Python: the file compiles, every user string appears only as a string
constant in the AST, and a handful run through the real SDK and submit the same values.
"""

from __future__ import annotations

import ast

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from kf_helpers import oracle_compare, plan, write_outputs
from translator.diagnostics import Finding
from translator.emit import plan_json, sdk_python, trainjob_yaml
from translator.emit.command import container_command
from translator.emit.trainjob import env_map, resource_name
from translator.plan.model import EnvVar, PodPatch

NASTY = [
    "'",
    '"',
    "\\",
    "\n",
    "\r\n",
    "$(touch /tmp/x)",
    "`id`",
    ": ",
    "- ",
    "{",
    "}",
    "[",
    "&a",
    "*a",
    "!!python/object/apply:os.system ['id']",
    "#",
    '"""',
    "'''",
    "\\N{BULLET}",
    "\\x00",
    "%",
    "@",
    "|",
    ">",
    "---",
    "...",
    "\t",
    " ",
    "\u2028",
    "\x85",
    "\ufeff",
    "é",
    "\U0001f600",
    "null",
    "y",
    "0o17",
    "1e3",
    "\\u0041",
    "{{",
    "}}",
    "${HOME}",
    "\x0b",
    "\x0c",
    "\x1b[31m",
    "# -*- coding: utf-7 -*-",
    "+ACI-",
    "coding=latin-1",
    "\ud800",
]

text = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=6)), max_size=6).map("".join)
nonempty = text.filter(lambda s: s != "")


@st.composite
def hostile_plans(draw):
    env = tuple(
        EnvVar(draw(nonempty), draw(text), line=draw(st.none() | st.integers(1, 10**6)))
        for _ in range(draw(st.integers(0, 3)))
    )
    return plan(
        name=draw(nonempty),
        namespace=draw(st.none() | nonempty),
        source_path=draw(text),
        labels=tuple((draw(nonempty), draw(text)) for _ in range(draw(st.integers(0, 2)))),
        annotations=tuple((draw(nonempty), draw(text)) for _ in range(draw(st.integers(0, 2)))),
        runtime=draw(nonempty),
        image=draw(nonempty),
        command=tuple(draw(st.lists(nonempty, min_size=1, max_size=3))),
        args=tuple(draw(st.lists(text, max_size=4))),
        packages=tuple(draw(st.lists(nonempty, max_size=2))),
        pip_index_urls=tuple(draw(st.lists(nonempty, max_size=2))),
        env=env,
        num_nodes=draw(st.integers(1, 64)),
        # distinct resource names, as the plan builder gives them (one quantity per resource of the node)
        resources_per_node=tuple(
            draw(st.lists(st.tuples(nonempty, nonempty), max_size=2, unique_by=lambda kv: resource_name(kv[0])))
        ),
        active_deadline_seconds=draw(st.none() | st.integers(1, 10**9)),
        patches=(
            PodPatch(
                node_selector=((draw(nonempty), draw(text)),),
                volumes=({"name": draw(text), "hostPath": {"path": draw(text)}},),
                volume_mounts=({"name": draw(text), "mountPath": draw(text)},),
            ),
        ),
        findings=(Finding("warning", "P499", draw(text), 1, draw(text)),),
    )


def _user_strings(p):
    out = [p.name, p.runtime, p.image, *p.command, *p.args]
    out += [v for pairs in (p.labels, p.annotations) for kv in dict(pairs).items() for v in kv]
    out += [s for kv in env_map(p).items() for s in kv]  # a name set twice keeps its last value
    out += [s for kv in p.resources_per_node for s in kv]
    if p.namespace:
        out.append(p.namespace)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_plans())
def test_yaml_round_trips_exactly(p):
    from translator.emit.trainjob import trainjob_dict

    text = trainjob_yaml.render([p], findings_comment=True)
    text.encode("utf-8")  # strict: lone surrogates must be escaped, never written raw
    docs = list(yaml.safe_load_all(text))
    assert docs == [trainjob_dict(p)]
    t = docs[0]["spec"]["trainer"]
    command, args = container_command(p)
    assert t["command"] == command and t.get("args", []) == args
    assert docs[0]["metadata"]["name"] == p.name
    assert {e["name"]: e["value"] for e in t.get("env", [])} == {e.name: e.value for e in p.env}


def _string_constants(tree):
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_plans())
def test_python_compiles_and_carries_user_text_only_as_constants(p):
    code = sdk_python.render([p])
    # parse the bytes, as `python file.py` does: an encoding declaration would be honoured
    tree = ast.parse(code.encode("utf-8"))  # strict: the file must be writable as UTF-8
    compile(tree, "<generated>", "exec")
    consts = _string_constants(tree)
    for s in _user_strings(p):
        assert s in consts, s
    # the only calls are the SDK's and print(); no user text became a name or an expression
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert names <= {
        "TrainerClient",
        "CustomTrainerContainer",
        "KubernetesBackendConfig",
        "Name",
        "Labels",
        "Annotations",
        "TrainerCommand",
        "TrainerArgs",
        "ActiveDeadlineSeconds",
        "RuntimePatch",
        "TrainingRuntimeSpecPatch",
        "JobSetTemplatePatch",
        "JobSetSpecPatch",
        "ReplicatedJobPatch",
        "JobTemplatePatch",
        "JobSpecPatch",
        "PodTemplatePatch",
        "PodSpecPatch",
        "ContainerPatch",
        "client",
        "job_name",
        "print",
        "main",
        "__name__",
    }, names


@settings(max_examples=100, deadline=None)
@given(hostile_plans())
def test_plan_json_loads_back(p):
    import json

    data = json.loads(plan_json.render([p]))
    assert data["plans"][0]["name"] == p.name
    assert data["plans"][0]["trainjob"]["spec"]["trainer"]["image"] == p.image


def test_encoding_declaration_in_user_text_is_inert():
    p = plan(
        source_path="# -*- coding: utf-7 -*-",
        name="x",
        args=("+ACI-; import os",),
        findings=(Finding("warning", "P401", "coding: utf-7", 1),),
    )
    code = sdk_python.render([p]).encode("utf-8")
    tree = ast.parse(code)
    assert "+ACI-; import os" in _string_constants(tree)
    assert not any(isinstance(n, ast.Import) for n in ast.walk(tree))


def test_hostile_values_through_the_real_sdk(tmp_path):
    """Valid-for-Kubernetes names, hostile values everywhere else: SDK output equals the YAML."""
    evil = [
        "a'b\"c\\d",
        "line1\nline2\r\n",
        "$(touch /tmp/pwned) `id` ${HOME}",
        ": - {&a *a} [!!python/object]",
        "\"\"\" ''' \\N{BULLET} # not a comment",
        "\u2028\x85é\U0001f600",
        "y",
        "0o17",
        "",
    ]
    plans = [
        plan(
            name="inject-a",
            args=tuple(evil),
            env=tuple(EnvVar(f"V{i}", v) for i, v in enumerate(evil)),
            annotations=tuple((f"slurm2kf.io/a{i}", v) for i, v in enumerate(evil)),
            findings=(Finding("warning", "P401", "\n".join(evil), 2),),
        ),
        plan(
            name="inject-b",
            command=("bash", "-c"),
            args=('echo "$1"; $(rm -rf /)', "x", *evil),
            packages=tuple(e for e in evil if e),
            pip_index_urls=("https://x.example/$(id)",),
        ),
    ]
    pairs = [write_outputs(tmp_path, f"inject{i}", [p]) for i, p in enumerate(plans)]
    results = oracle_compare(pairs, jobs=2)
    for _pair, (rc, out) in zip(pairs, results):
        assert rc == 0 and "equivalent: yes" in out, out
