"""The kubelet's $(VAR) expansion and env resolution order, as `slurm2kf simulate` emulates them.

Expected values are derived by hand from:
* kubernetes/kubernetes third_party/forked/golang/expansion/expand.go (Expand / tryReadVariableName):
  `$$` -> `$`; `$(NAME)` runs to the first `)` and is replaced when NAME is defined, copied verbatim
  otherwise; `$` + any other character is kept; an unterminated `$(` is kept and scanning resumes after
  the `(`; a trailing `$` is kept; substituted values are not rescanned;
* the core/v1 Container.command/args doc ("If a variable cannot be resolved, the reference in the input
  string will be unchanged. Double $$ are reduced to a single $, which allows for escaping the
  $(VAR_NAME) syntax");
* kubernetes.io "Define Dependent Environment Variables" (the dependent-envars-demo Pod: a value may
  only use entries defined before it; UNCHANGED_REFERENCE stays "$(PROTOCOL)://172.17.0.1:80",
  SERVICE_ADDRESS becomes "https://172.17.0.1:80", ESCAPED_REFERENCE "$(PROTOCOL)://172.17.0.1:80").
"""

from __future__ import annotations

import pytest

from translator.simulate.kubelet import expand, expand_argv, resolve_env

ENV = {"VAR": "v", "EMPTY": "", "A": "$(B)", "B": "b"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("$(VAR)", "v"),  # defined reference replaced
        ("x$(VAR)y$(VAR)", "xvyv"),  # several references
        ("$(UNDEFINED)", "$(UNDEFINED)"),  # undefined: copied verbatim
        ("$(EMPTY)", ""),  # defined as the empty string: replaced by it
        ("$$(VAR)", "$(VAR)"),  # escaped reference (ESCAPED_REFERENCE in the docs page)
        ("$$(UNDEFINED)", "$(UNDEFINED)"),
        ("$$", "$"),
        ("$$$$", "$$"),
        ("$$$", "$$"),  # `$$` -> `$`, then a trailing `$` kept
        ("$", "$"),  # trailing `$` kept
        ("abc$", "abc$"),
        ("$VAR", "$VAR"),  # shell syntax is not kubelet syntax: kept
        ("${VAR}", "${VAR}"),
        ("$1 $@", "$1 $@"),
        ("$(VAR", "$(VAR"),  # unterminated reference kept
        ("a$(b$$c", "a$(b$c"),  # ... and scanning resumes after the `(`: `$$` still reduced
        ("$(A$(VAR))", "$(A$(VAR))"),  # reference runs to the FIRST `)`: name "A$(VAR" undefined
        ("$(VAR))", "v)"),
        ("$()", "$()"),  # empty name: undefined
        ("$(A)", "$(B)"),  # no recursive expansion of a substituted value
        ("$(hostname)", "$(hostname)"),  # a shell command substitution is an undefined reference
        ("$((1+2))", "$((1+2))"),
        ("no dollar", "no dollar"),
        ("", ""),
    ],
)
def test_expand_edge_cases(text, expected):
    assert expand(text, ENV) == expected


def test_expand_accepts_a_lookup_function():
    assert expand("$(X)-$(Y)", lambda n: "1" if n == "X" else None) == "1-$(Y)"


def test_env_resolution_follows_the_dependent_envars_demo_pod():
    # kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/
    entries = [
        ("SERVICE_PORT", "80", True),
        ("SERVICE_IP", "172.17.0.1", True),
        ("UNCHANGED_REFERENCE", "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)", True),
        ("PROTOCOL", "https", True),
        ("SERVICE_ADDRESS", "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)", True),
        ("ESCAPED_REFERENCE", "$$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)", True),
    ]
    assert resolve_env(entries) == [
        ("SERVICE_PORT", "80"),
        ("SERVICE_IP", "172.17.0.1"),
        ("UNCHANGED_REFERENCE", "$(PROTOCOL)://172.17.0.1:80"),
        ("PROTOCOL", "https"),
        ("SERVICE_ADDRESS", "https://172.17.0.1:80"),
        ("ESCAPED_REFERENCE", "$(PROTOCOL)://172.17.0.1:80"),
    ]


def test_env_entry_cannot_see_later_entries_but_valuefrom_is_visible():
    entries = [
        ("RANK", "$(PET_NODE_RANK)", True),  # defined later: stays literal
        ("PET_NODE_RANK", "3", False),  # a resolved valueFrom (fieldRef)
        ("NODE", "n$(PET_NODE_RANK)", True),  # after it: expanded
        ("RAW", "$(NODE)", False),  # a valueFrom value is never expanded itself
    ]
    assert resolve_env(entries) == [
        ("RANK", "$(PET_NODE_RANK)"),
        ("PET_NODE_RANK", "3"),
        ("NODE", "n3"),
        ("RAW", "$(NODE)"),
    ]


def test_repeated_name_keeps_first_position_and_last_value_and_sees_the_earlier_one():
    # the kubelet keeps a map: a second A overrides the first, and while it is expanded A is already defined
    assert resolve_env([("A", "x", True), ("B", "$(A)", True), ("A", "$(A)y", True)]) == [("A", "xy"), ("B", "x")]


def test_command_and_args_see_the_full_env_including_later_entries():
    env = resolve_env([("RANK", "$(PET_NODE_RANK)", True), ("PET_NODE_RANK", "1", False)])
    assert expand_argv(["python", "t.py", "--rank=$(PET_NODE_RANK)", "--r2=$(RANK)", "$$(RANK)", "$(NOPE)"], env) == (
        "python",
        "t.py",
        "--rank=1",
        "--r2=$(PET_NODE_RANK)",
        "$(RANK)",
        "$(NOPE)",
    )


# The emitters escape text copied from a script with translator.plan.kube.escape so that the kubelet gives
# back exactly that text; checked here against this independent emulation of expand.go.
from hypothesis import given, settings, strategies as st  # noqa: E402

from translator.plan import kube  # noqa: E402

_TEXT = st.text(alphabet="$()aB_1 ", max_size=24)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_emitter_escape_round_trips_through_the_kubelet(text):
    env = {"a": "X", "B": "Y", "aB_1": "Z", "_": "U"}  # env names the emitter and the runtime use are identifiers
    assert expand(kube.escape(text), env) == text


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_agrees_with_the_planner_expand(text):
    env = {"a": "X", "B": "Y"}
    assert expand(text, env) == kube.expand(text, env)
