"""Property tests: any profile text gives a Profile or a ProfileError (never another exception), and
every error carries a code, a line inside the file and a message."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from translator.profile.load import ProfileError, parse_profile

KEYS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "defaults",
    "namespace",
    "partition",
    "labels",
    "annotations",
    "imagePullSecrets",
    "serviceAccountName",
    "gpuResource",
    "shmSize",
    "partitions",
    "gpu",
    "queue",
    "nodeSelector",
    "tolerations",
    "affinity",
    "node",
    "cpus",
    "memory",
    "gpus",
    "gpuType",
    "qos",
    "priorityClass",
    "accounts",
    "gpuTypes",
    "resource",
    "constraints",
    "images",
    "rules",
    "provided",
    "module",
    "conda",
    "venv",
    "container",
    "image",
    "filesystems",
    "path",
    "mountPath",
    "pvc",
    "nfs",
    "server",
    "hostPath",
    "readOnly",
    "subPath",
    "runtimes",
    "launchers",
    "kind",
    "replicatedJobs",
    "key",
    "operator",
    "value",
    "effect",
    "nodeAffinity",
    "re:(",
    "*",
    "$HOME",
    "/scratch",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False),
    st.sampled_from(KEYS),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=25,
)
documents = st.dictionaries(st.sampled_from(KEYS), values, max_size=8).map(
    lambda d: {"apiVersion": "slurm2kf/v1", "kind": "SiteProfile", **d}
)


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

FIXTURES = [
    yaml.safe_load(p.read_text())
    for p in sorted((Path(__file__).parent / "fixtures" / "profiles").glob("*/slurm2kf.yaml"))
]


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


# ---- generated scripts converted under the site profiles ----------------------------------------

import json as _json  # noqa: E402
import subprocess as _subprocess  # noqa: E402
import sys as _sys  # noqa: E402

import strategies as S  # noqa: E402
from translator.pipeline import ConvertSettings, convert  # noqa: E402
from translator.profile.load import load_profile  # noqa: E402

_SITE_DIR = Path(__file__).parent / "fixtures" / "profiles"
_SITE_PROFILES = {s: load_profile(str(_SITE_DIR / s / "slurm2kf.yaml")) for s in ("university", "ailab", "amd")}


@S.fuzz_settings(80)
@given(
    data=st.one_of(S.any_script_bytes(), S.tagged_scripts().map(lambda t: t.text.encode())),
    site=st.sampled_from(sorted(_SITE_PROFILES)),
)
def test_generated_scripts_under_a_profile_convert_faithfully(data, site):
    conv = convert("job.sbatch", data, ConvertSettings(profile=_SITE_PROFILES[site]))  # never raises
    if conv.file_error is not None or not conv.plans:
        return
    plans = list(conv.plans)
    for plan in plans:
        assert [f.code for f in plan.findings].count("F500") == 1
    docs = S.trainjob_docs(S.load_yaml_docs(S.render_yaml(plans)), plans)
    for doc, plan in zip(docs, plans):
        assert S.yaml_plan_mismatches(doc, plan) == []
    source = S.render_python(plans)
    assert S.python_problems(source) == []
    assert S.python_plan_problems(source, plans) == []


def test_generated_conversions_under_profiles_stay_valid(tmp_path):
    """Differential, with the independent validator: whatever is valid without a profile stays valid
    under each site profile (the site's own runtimes given to the validator)."""
    pairs = []

    @S.fuzz_settings(40, database=None)
    @given(st.one_of(S.any_script_bytes(), S.tagged_scripts().map(lambda t: t.text.encode())))
    def collect(data):
        base = convert("job.sbatch", data)
        if base.file_error is not None or not base.plans:
            return
        i = len(pairs)
        (tmp_path / f"base{i:03d}.yaml").write_text(S.render_yaml(base.plans), encoding="utf-8")
        for site, prof in _SITE_PROFILES.items():
            conv = convert("job.sbatch", data, ConvertSettings(profile=prof))
            (tmp_path / f"{site}{i:03d}.yaml").write_text(S.render_yaml(conv.plans), encoding="utf-8")
        pairs.append(i)

    collect()
    assert len(pairs) >= 10

    def validity(files, site=None):
        extra = []
        if site and (_SITE_DIR / site / "runtimes").is_dir():
            extra = ["--runtimes", str(_SITE_DIR / site / "runtimes")]
        proc = _subprocess.run(
            [_sys.executable, str(S.KF_ORACLE / "validate_trainjob.py"), *extra, *map(str, files)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        out = {}
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                d = _json.loads(line)
                out[d["file"]] = out.get(d["file"], True) and d["valid"]
        assert out, proc.stderr[-2000:]
        return out

    base = validity([tmp_path / f"base{i:03d}.yaml" for i in pairs])
    broken = []
    for site in _SITE_PROFILES:
        got = validity([tmp_path / f"{site}{i:03d}.yaml" for i in pairs], site)
        for i in pairs:
            if base.get(str(tmp_path / f"base{i:03d}.yaml")) and not got.get(str(tmp_path / f"{site}{i:03d}.yaml")):
                broken.append(f"{site}{i:03d}")
    assert not broken, broken
