"""`slurm2kf validate`: negative cases derived from the CRD and the Trainer docs, lines, exit codes,
and agreement with the shared oracle's verdicts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kf_helpers import CRD, ORACLE, VENV_PY, oracle_validate
from translator.validate.crd import load_crd, strict_schema
from translator.validate.validator import validate_text

GOOD = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: good-job
spec:
  runtimeRef:
    name: torch-distributed
    kind: ClusterTrainingRuntime
  trainer:
    image: pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime
    command: [torchrun]
    args: [train.py]
    numNodes: 2
    env:
    - name: NCCL_DEBUG
      value: INFO
    resourcesPerNode:
      requests: {nvidia.com/gpu: "4", cpu: "8"}
      limits: {nvidia.com/gpu: "4", cpu: "8"}
  activeDeadlineSeconds: 3600
"""


@pytest.fixture(scope="module")
def crd():
    return load_crd(str(CRD))


def _problems(text, crd):
    results = validate_text(text, crd, file="t.yaml")
    return [p for r in results for p in r.problems], results


def test_good_document_is_valid(crd):
    probs, results = _problems(GOOD, crd)
    assert probs == [] and [r.valid for r in results] == [True]
    # CRD defaults were applied before CEL: the name rules and managedBy rule ran
    assert results[0].cel_evaluated == 3
    assert results[0].cel_skipped_transition >= 2


@pytest.mark.parametrize(
    "old,new,code,line,needle",
    [
        # unknown field: the API server would prune it silently
        ("    numNodes: 2\n", "    numNodes: 2\n    workingDir: /x\n", "V710", 14, "spec.trainer.workingDir"),
        # RFC 1035 name (CEL) and DNS subdomain (ObjectMeta)
        ("  name: good-job", "  name: Good_Job", "V720", 4, "RFC 1035"),
        ("  name: good-job", "  name: " + "a" * 64, "V720", 4, "no more than 63"),
        # numProcPerNode: CEL self >= 1
        ("    numNodes: 2\n", "    numNodes: 2\n    numProcPerNode: 0\n", "V720", 14, "numProcPerNode"),
        # numNodes: minimum 0
        ("    numNodes: 2\n", "    numNodes: -1\n", "V711", 13, "minimum"),
        # activeDeadlineSeconds: minimum 1
        ("  activeDeadlineSeconds: 3600", "  activeDeadlineSeconds: 0", "V711", 20, "minimum"),
        # int32 range of numNodes
        ("    numNodes: 2\n", "    numNodes: 4294967296\n", "V711", 13, "maximum"),
        # reserved env for the torch policy (webhook)
        (
            "      value: INFO\n",
            "      value: INFO\n    - name: PET_NNODES\n      value: '3'\n",
            "V740",
            17,
            "PET_NNODES",
        ),
        # env list is a map keyed by name
        (
            "      value: INFO\n",
            "      value: INFO\n    - name: NCCL_DEBUG\n      value: WARN\n",
            "V712",
            17,
            "NCCL_DEBUG",
        ),
        # quantity pattern
        (
            'requests: {nvidia.com/gpu: "4", cpu: "8"}',
            'requests: {nvidia.com/gpu: "4", cpu: "8 cores"}',
            "V711",
            18,
            "quantity",
        ),
        # unquoted number where a string is required
        ("      value: INFO", "      value: 8", "V711", 16, "quote it"),
        # managedBy enum (CEL)
        (
            "  activeDeadlineSeconds: 3600",
            "  activeDeadlineSeconds: 3600\n  managedBy: me.io/x",
            "V720",
            21,
            "ManagedBy",
        ),
        # storageUri CEL
        (
            "  activeDeadlineSeconds: 3600",
            "  activeDeadlineSeconds: 3600\n  initializer:\n    dataset:\n      storageUri: not-a-uri",
            "V720",
            23,
            "storageUri",
        ),
        # duplicate key (kubectl rejects; PyYAML would keep the last)
        ("    numNodes: 2\n", "    numNodes: 2\n    numNodes: 3\n", "V713", 14, "duplicate key"),
        # resource name must be standard or domain-qualified
        ('requests: {nvidia.com/gpu: "4", cpu: "8"}', 'requests: {gpu: "4", cpu: "8"}', "V743", 18, "'gpu'"),
        # extended resource requests must equal limits
        (
            'requests: {nvidia.com/gpu: "4", cpu: "8"}',
            'requests: {nvidia.com/gpu: "2", cpu: "8"}',
            "V743",
            18,
            "requests == limits",
        ),
        # runtimeRef kind enum-like webhook rule
        ("    kind: ClusterTrainingRuntime", "    kind: MPIJob", "V744", 8, "MPIJob"),
        # metadata: unknown field, bad namespace, label value
        ("  name: good-job", "  name: good-job\n  nmespace: x", "V710", 5, "metadata.nmespace"),
        ("  name: good-job", "  name: good-job\n  namespace: Team_A", "V730", 5, "namespace"),
        ("  name: good-job", "  name: good-job\n  labels:\n    a: 'has space'", "V730", 6, "label"),
    ],
)
def test_negative_cases(crd, old, new, code, line, needle):
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    probs, results = _problems(text, crd)
    assert not results[0].valid
    hits = [p for p in probs if p.code == code and needle in p.message]
    assert hits, [p.to_json() for p in probs]
    assert hits[0].line == line, hits[0].to_json()


PATCHED = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: patched}
spec:
  runtimeRef: {name: deepspeed-distributed}
  runtimePatches:
  - manager: {manager}
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: {job}
            template:
              spec:
                template:
                  spec:
                    containers:
                    - name: node
                      env: {env}
"""


@pytest.mark.parametrize(
    "manager,job,env,code",
    [
        ("slurm2kf", "launcher", "[]", "V742"),  # not domain-prefixed
        ("example.com/tool", "worker", "[]", "V744"),  # job not in the runtime
        ("example.com/tool", "node", "[{name: A, value: b}]", "V741"),  # env patch on container node
    ],
)
def test_runtime_patch_webhook_rules(crd, manager, job, env, code):
    text = PATCHED.replace("{manager}", manager).replace("{job}", job).replace("{env}", env)
    probs, results = _problems(text, crd)
    assert code in {p.code for p in probs}, [p.to_json() for p in probs]
    assert not results[0].valid


def test_mpi_reserved_env_and_runtime_from_same_file(crd):
    text = GOOD.replace("NCCL_DEBUG", "OMPI_MCA_orte_default_hostfile").replace("torch-distributed", "my-mpi")
    probs, _ = _problems(text, crd)
    # unknown runtime: reserved names of every policy are only warnings
    assert [(p.code, p.severity) for p in probs if p.code == "V740"] == [("V740", "warning")]
    runtime = (
        "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
        "metadata: {name: my-mpi}\nspec:\n  mlPolicy: {mpi: {}}\n  template:\n    spec:\n"
        "      replicatedJobs:\n      - name: launcher\n        template: {}\n"
    )
    probs, results = _problems(text + runtime, crd)
    assert [(p.code, p.severity) for p in probs if p.code == "V740"] == [("V740", "error")]
    assert [r.skipped for r in results] == [False, True]


def test_unknown_fields_are_errors_everywhere_properties_are_given(crd):
    strict = strict_schema(crd.schema("v1alpha1"))
    trainer = strict["properties"]["spec"]["properties"]["trainer"]
    assert trainer["additionalProperties"] is False
    # metadata has no properties in the CRD: checked by the ObjectMeta rules instead
    assert "additionalProperties" not in strict["properties"]["metadata"]


def test_generate_name_and_defaults(crd):
    text = GOOD.replace("  name: good-job", "  generateName: slurm-")
    probs, results = _problems(text, crd)
    assert probs == [] and results[0].valid


def test_not_a_trainjob_and_empty_file(crd):
    results = validate_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", crd, file="c.yaml")
    assert any(p.code == "V703" for r in results for p in r.problems)
    assert not all(r.valid for r in results)
    results = validate_text("key: [unclosed\n", crd, file="bad.yaml")
    assert results[0].problems[0].code == "V701" and results[0].problems[0].line == 2


def _cli(*args, stdin=None):
    return subprocess.run(
        [str(VENV_PY), "-m", "translator", "validate", *args], capture_output=True, text=True, input=stdin, timeout=60
    )


def test_cli_exit_codes_and_json(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("numNodes: 2", "numNodes: 2\n    numProcPerNode: 0"))
    r = _cli(str(good))
    assert r.returncode == 0 and "valid: 1/1" in r.stdout
    # numProcPerNode >= 1 is a CEL rule from kubeflow/trainer #3809, released with v2.4 (not at v2.3.0)
    r = _cli("--trainer-version", "2.4", str(good), str(bad))
    assert r.returncode == 1
    assert f"{bad}:14: error V720" in r.stdout
    r = _cli("--trainer-version", "2.4", "--json", str(bad))
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["valid"] is False and lines[0]["errors"][0]["line"] == 14
    assert _cli(str(tmp_path / "missing.yaml")).returncode == 2
    assert _cli("--crd", str(tmp_path / "nope.yaml"), str(good)).returncode == 2
    r = _cli("-", stdin=GOOD)
    assert r.returncode == 0
    r = _cli("--crd", str(CRD), str(good))
    assert r.returncode == 0


def test_agrees_with_the_oracle_on_its_samples_and_fixtures():
    files = sorted((ORACLE / "samples").glob("*.yaml")) + sorted((ORACLE / "tests").glob("*.yaml"))
    assert len(files) >= 10
    crd = load_crd()  # the bundled copy
    oracle = {}
    for v in oracle_validate(files):  # per-file verdict: every TrainJob in it valid
        name = Path(v["file"]).name
        oracle[name] = oracle.get(name, True) and v["valid"]
    ours = {}
    for f in files:
        for r in validate_text(f.read_text(), crd, file=str(f)):
            if not r.skipped:
                ours[f.name] = ours.get(f.name, True) and r.valid
    assert ours == oracle
    assert list(oracle.values()).count(False) >= 5  # the broken samples are really caught


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "apiVersion",
        "kind",
        "metadata",
        "spec",
        "status",
        "name",
        "trainer",
        "runtimeRef",
        "env",
        "numNodes",
        "runtimePatches",
        "resourcesPerNode",
        "limits",
        "requests",
    ]
)
_doc = st.recursive(_json, lambda c: st.dictionaries(_keys, c, max_size=5), max_leaves=30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("trainer.kubeflow.org/v1alpha1"),
            "kind": st.just("TrainJob"),
            "metadata": _doc,
            "spec": _doc,
        }
    )
)
def test_any_document_gives_problems_not_tracebacks(doc):
    results = __import__("translator.validate.validator", fromlist=["x"]).validate_documents([doc], _CRD)
    assert len(results) == 1
    for p in results[0].problems:
        assert p.code.startswith("V7") and p.severity in ("error", "warning")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_problems_not_tracebacks(text):
    results = validate_text(text, _CRD, file="x")
    # random text is never a valid TrainJob: there is always a V701/V702/V703/... problem
    assert results and not all(r.valid for r in results)
    assert all(p.code.startswith("V7") for r in results for p in r.problems)


_CRD = load_crd()


def test_cli_runtimes_option(tmp_path):
    runtime = tmp_path / "rt.yaml"
    runtime.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
        "metadata: {name: site-torch}\nspec:\n  mlPolicy: {torch: {}}\n  template:\n    spec:\n"
        "      replicatedJobs:\n      - name: node\n        template: {}\n"
    )
    job = tmp_path / "job.yaml"
    job.write_text(GOOD.replace("name: torch-distributed", "name: site-torch").replace("NCCL_DEBUG", "PET_MASTER_PORT"))
    r = _cli(str(job))  # unknown runtime: reserved env only warned
    assert r.returncode == 0 and "V745" in r.stdout and "warning V740" in r.stdout
    r = _cli("--runtimes", str(tmp_path / "rt.yaml"), str(job))
    assert r.returncode == 1 and "error V740" in r.stdout and "V745" not in r.stdout
    r = _cli("--runtimes", str(tmp_path / "missing-dir-or-file"), str(job))
    assert r.returncode == 2


def test_date_time_format(crd):
    base = GOOD + "  runtimePatches:\n  - manager: example.com/x\n    time: {t}\n"
    ok, _ = _problems(base.replace("{t}", "'2026-01-02T03:04:05Z'"), crd)
    assert ok == []
    bad, _ = _problems(base.replace("{t}", "yesterday"), crd)
    assert [(p.code, p.path, p.line) for p in bad] == [("V711", "spec.runtimePatches[0].time", 23)]


def test_kind_list_items_are_validated_with_their_lines(crd):
    items = "".join("  " + line + "\n" if line else "\n" for line in GOOD.splitlines())
    text = "apiVersion: v1\nkind: List\nitems:\n- " + items.lstrip().replace("numNodes: 2", "numNodes: -2")
    probs, results = _problems(text, crd)
    assert [r.valid for r in results] == [False]
    [p] = [p for p in probs if p.code == "V711"]
    assert p.path == "spec.trainer.numNodes" and p.line == 16
