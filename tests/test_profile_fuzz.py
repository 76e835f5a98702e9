"""Property tests: any profile text gives a Profile or a ProfileError (never another exception), and
every error carries a code, a line inside the file and a message."""
from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from translator.profile.load import ProfileError, parse_profile

KEYS = ["apiVersion", "kind", "metadata", "name", "defaults", "namespace", "partition", "labels", "annotations",
        "imagePullSecrets", "serviceAccountName", "gpuResource", "shmSize", "partitions", "gpu", "queue",
        "nodeSelector", "tolerations", "affinity", "node", "cpus", "memory", "gpus", "gpuType", "qos",
        "priorityClass", "accounts", "gpuTypes", "resource", "constraints", "images", "rules", "provided",
        "module", "conda", "venv", "container", "image", "filesystems", "path", "mountPath", "pvc", "nfs",
        "server", "hostPath", "readOnly", "subPath", "runtimes", "launchers", "kind", "replicatedJobs",
        "key", "operator", "value", "effect", "nodeAffinity", "re:(", "*", "$HOME", "/scratch"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10 ** 6), st.floats(allow_nan=False),
                    st.sampled_from(KEYS), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)), max_leaves=25)
documents = st.dictionaries(st.sampled_from(KEYS), values, max_size=8).map(
    lambda d: {"apiVersion": "slurm2kf/v1", "kind": "SiteProfile", **d})


def _check(text: str) -> None:
    try:
        parse_profile(text, "fuzz.yaml")
    except ProfileError as exc:
        n = text.count("\n") + 1
        assert exc.diagnostics
        for d in exc.diagnostics:
            assert d.severity == "error" and d.code.startswith("F5") and d.message
            assert d.line is None or 1 <= d.line <= n + 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_structured_profiles_never_crash(doc):
    _check(yaml.safe_dump(doc, allow_unicode=True))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text):
    _check(text)


from pathlib import Path  # noqa: E402

FIXTURES = [yaml.safe_load(p.read_text()) for p in
            sorted((Path(__file__).parent / "fixtures" / "profiles").glob("*/slurm2kf.yaml"))]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated_fixture(draw):
    import copy

    doc = copy.deepcopy(draw(st.sampled_from(FIXTURES)))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(values)
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fixture())
def test_mutated_site_profiles_never_crash(doc):
    _check(yaml.safe_dump(doc, allow_unicode=True))
