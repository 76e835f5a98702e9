"""`slurm2kf validate --server`: the real kube-apiserver's server-side dry run next to the offline
validator, and the agreement of both on every TrainJob converted from tests/fixtures.

Disagreements found this way were bugs in the offline validator and are fixed (tests at the end):
annotation keys are validated lower-cased by the API server (apimachinery ValidateAnnotations calls
IsQualifiedName(strings.ToLower(k))), and the CRD does not require `spec` (a TrainJob without one is
stored; only the Trainer webhook rejects it).
"""

from __future__ import annotations

import functools
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml


ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures"

GOOD = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: good-one
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
"""
BAD = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: bad-one
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numProcPerNode: 0
    resourcesPerNode:
      requests:
        memory: 32GB
"""


def _error_lines(text):
    """(location, code) of each problem line: `file:line: error CODE ...`."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^(\S+?): error ([A-Z]\d{3}) ", text, re.M)]


@pytest.mark.cluster
def test_server_verdicts_use_the_offline_output_format_and_exit_codes(cli, kube, tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(GOOD)
    bad.write_text(BAD)
    # the test server's CRD comes from the Trainer's main branch after v2.3.0, with #3809's rules, which
    # were released with 2.4: validate for that release so the offline rules are the server's
    v24 = ("--trainer-version", "2.4")
    off = cli("validate", *v24, good, bad)
    srv = cli("validate", *v24, "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, good, bad)
    assert off.exit_code == srv.exit_code == 1
    # the same lines are blamed: numProcPerNode (line 9, CEL rule self >= 1) and memory (line 12, pattern)
    assert sorted(loc for loc, _ in _error_lines(off.stdout)) == [f"{bad}:12", f"{bad}:9"]
    assert sorted(loc for loc, _ in _error_lines(srv.stdout)) == [f"{bad}:12", f"{bad}:9"]
    assert {c for _, c in _error_lines(srv.stdout)} == {"K907"}
    assert (
        f"{bad}:9: error K907 rejected by the server: spec.trainer.numProcPerNode: Invalid value: 0: "
        "numProcPerNode must be greater than or equal to 1 (document 1)" in srv.stdout
    )
    assert f"{good} (document 1): good-one: valid (server-side dry run" in srv.stdout
    assert f"{bad} (document 1): bad-one: INVALID (server-side dry run" in srv.stdout
    assert "K912" not in srv.stdout
    assert srv.stderr.strip().endswith("valid: 1/2") or "valid: 1/2" in srv.stdout
    assert cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, good).exit_code == 0
    # --json carries the server's problems in the offline shape
    j = cli("validate", "--server", "--json", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, bad)
    import json

    rec = json.loads(j.stdout.splitlines()[0])
    assert rec["valid"] is False and {e["code"] for e in rec["errors"]} == {"K907"}
    assert sorted(e["line"] for e in rec["errors"]) == [9, 12]


@pytest.mark.cluster
def test_a_disagreement_is_reported(cli, kube, tmp_path):
    """With a CRD whose numNodes maximum is 1 the offline checks reject `numNodes: 2`, which the real
    server (the real CRD) accepts: K912 says so; the verdict is the server's."""
    from translator.validate.crd import BUNDLED_CRD  # noqa: F401  (the bundled file name)

    crd = yaml.safe_load(Path(BUNDLED_CRD).read_text())
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["trainer"]["properties"]["numNodes"]["maximum"] = 1
    crd_file = tmp_path / "strict-crd.yaml"
    crd_file.write_text(yaml.safe_dump(crd))
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    off = cli("validate", "--crd", crd_file, good)
    assert off.exit_code == 1 and "V711" in off.stdout
    srv = cli("validate", "--server", "--crd", crd_file, "--kubeconfig", kube.kubeconfig, "-n", kube.ns, good)
    assert srv.exit_code == 0
    assert re.search(r"warning K912 offline validate rejects what the server accepts: V711 .*numNodes", srv.stdout)
    # the other way: a CRD without the numProcPerNode CEL rule accepts `numProcPerNode: 0` offline
    props["trainer"]["properties"]["numNodes"].pop("maximum")
    props["trainer"]["properties"]["numProcPerNode"].pop("x-kubernetes-validations")
    crd_file.write_text(yaml.safe_dump(crd))
    procs = tmp_path / "procs.yaml"
    procs.write_text(GOOD.replace("    numNodes: 2\n", "    numProcPerNode: 0\n"))
    assert cli("validate", "--crd", crd_file, procs).exit_code == 0
    srv = cli("validate", "--server", "--crd", crd_file, "--kubeconfig", kube.kubeconfig, "-n", kube.ns, procs)
    assert srv.exit_code == 1
    assert re.search(
        r"warning K912 the server rejects what offline validate accepts: .*numProcPerNode must be "
        r"greater than or equal to 1",
        srv.stdout,
    )


@pytest.mark.cluster
def test_dry_run_blind_spots_stay_offline_errors(cli, kube, tmp_path):
    """A dry run never reaches storage, which alone refuses metadata.resourceVersion on create (HTTP 500
    "resourceVersion should not be set on objects to be created"): the offline V730 stays, no K912."""
    f = tmp_path / "rv.yaml"
    f.write_text(GOOD.replace("  name: good-one\n", '  name: good-one\n  resourceVersion: "12"\n'))
    srv = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, f)
    assert srv.exit_code == 1
    assert "error V730 metadata.resourceVersion" in srv.stdout and "K912" not in srv.stdout


@functools.lru_cache(maxsize=1)
def _converted_fixture_trainjobs():
    """Every TrainJob converted from tests/fixtures: the convert/ scripts and the sbatch corpus files
    that sbatch accepts (their conversion, error findings or not)."""
    from translator.emit.trainjob import trainjob_dict
    from translator.pipeline import convert

    paths = sorted((FIXTURES / "convert").rglob("*.sbatch")) + sorted(
        p for p in (FIXTURES / "sbatch").iterdir() if p.suffix != ".md"
    )
    out = []
    for p in paths:
        conv = convert(str(p))
        if conv.file_error is not None or conv.job is None or not conv.job.sbatch_accepts:
            continue
        out.extend((p, trainjob_dict(plan)) for plan in conv.plans)
    return out


@pytest.mark.cluster
def test_every_converted_fixture_gets_the_same_verdict_offline_and_on_the_server(kube):
    from translator.cluster.server_validate import judge
    from translator.validate.crd import load_crd
    from translator.validate.documents import Document
    from translator.validate.validator import validate_documents

    jobs = _converted_fixture_trainjobs()
    assert len(jobs) >= 250  # 21 convert/ scripts and most of the ~350 sbatch fixtures
    docs = [Document(index=i, data=body) for i, (_, body) in enumerate(jobs)]
    results = validate_documents(docs, load_crd())

    def one(i):
        return judge(kube.cluster, docs[i], results[i], kube.ns)

    with ThreadPoolExecutor(max_workers=6) as pool:
        verdicts = list(pool.map(one, range(len(docs))))
    disagreements = [(str(jobs[i][0]), v.disagreement) for i, v in enumerate(verdicts) if v.disagreement]
    assert disagreements == []
    assert all(v.accepted is not None for v in verdicts)
    # the converter only makes TrainJobs the API server stores
    rejected = [(str(jobs[i][0]), [p.message for p in v.problems]) for i, v in enumerate(verdicts) if not v.accepted]
    assert rejected == []


@pytest.mark.cluster
def test_cli_validate_server_over_converted_fixtures_matches_offline(cli, kube, tmp_path):
    """The CLI path over one multi-document file of converted fixtures: same summary as offline."""
    from translator.emit.trainjob_yaml import dump

    jobs = _converted_fixture_trainjobs()[:60]
    f = tmp_path / "all.yaml"
    f.write_text("---\n".join(dump(body) for _, body in jobs))
    off = cli("validate", "-q", f)
    srv = cli("validate", "-q", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, f)
    summary = re.compile(r"valid: \d+/\d+")
    assert (
        summary.search(off.stdout).group(0) == summary.search(srv.stdout).group(0) == f"valid: {len(jobs)}/{len(jobs)}"
    )
    assert off.exit_code == srv.exit_code == 0
    assert "K912" not in srv.stdout


# --- the offline validator fixes these disagreements brought (no cluster needed)


def test_offline_annotation_keys_are_checked_lower_cased(cli, tmp_path):
    f = tmp_path / "ann.yaml"
    f.write_text(GOOD.replace("  name: good-one\n", "  name: good-one\n  annotations:\n    Example.com/Note_A: x\n"))
    r = cli("validate", f)
    assert r.exit_code == 0, r.stdout  # the API server stores it (IsQualifiedName on the lower-cased key)
    f.write_text(GOOD.replace("  name: good-one\n", "  name: good-one\n  annotations:\n    bad key: x\n"))
    r = cli("validate", f)
    assert r.exit_code == 1 and "V730" in r.stdout  # a space is invalid in any case


def test_offline_missing_spec_is_a_webhook_layer_error(cli, tmp_path):
    f = tmp_path / "nospec.yaml"
    f.write_text("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: x\n")
    r = cli("validate", f)
    assert r.exit_code == 1
    assert "error V744 spec is missing" in r.stdout and "V711" not in r.stdout


@pytest.mark.cluster
def test_server_stores_what_the_fixed_checks_accept(cli, kube, tmp_path):
    f = tmp_path / "ann.yaml"
    f.write_text(GOOD.replace("  name: good-one\n", "  name: good-one\n  annotations:\n    Example.com/Note_A: x\n"))
    srv = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, f)
    assert srv.exit_code == 0 and "K912" not in srv.stdout
    g = tmp_path / "nospec.yaml"
    g.write_text("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: x\n")
    srv = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, g)
    # the server accepts it; the webhook-layer V744 is kept (the Trainer webhook is not on this server)
    assert srv.exit_code == 1 and "error V744" in srv.stdout and "K907" not in srv.stdout and "K912" not in srv.stdout
